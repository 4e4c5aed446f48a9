package io.seglog.spark.write;

import java.io.IOException;
import java.nio.file.Path;

import io.seglog.spark.format.StagingRuns;

/**
 * A write task's staging folder, {@code <run>/t<partition>-<taskAttemptId>}, made once for every stager of the task
 * (issue 41: each staged segment's open made it again, an mkdir failing with EEXIST and two stats per segment).
 *
 * <p>Invariant ({@link StagingRuns#taskFolder}): made only while its run's folder is there. Made once is enough:
 * once the run ends (its folder renamed, then removed), every later create in this folder fails, since its path no
 * longer resolves, so a task attempt still running stages nothing under an ended run.
 */
final class TaskFolder {
    final Path dir;
    private Boolean shared;   // null: not made yet

    TaskFolder(Path dir) {
        this.dir = dir;
    }

    /** Makes the folder the first time; whether it is group-writable (the rule for the files made in it). Called by
     *  the task's thread only. */
    boolean make() throws IOException {
        if (shared == null) shared = StagingRuns.taskFolder(dir);
        return shared;
    }
}
