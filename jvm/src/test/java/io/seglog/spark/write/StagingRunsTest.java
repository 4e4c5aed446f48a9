package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.seglog.spark.format.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Two writes of one writer to one topic stage side by side, and each commit removes the other runs whose lock is
 *  free (a killed driver's). A run folder made by its own name could be removed between its mkdir and its driver's
 *  flock: a live run lost (issue 36). {@link DriverCommit#startRun} makes it locked under a dot-name first. */
class StagingRunsTest {
    @TempDir
    Path tmp;

    @Test
    void aStartingRunIsNeverRemovedByAnotherWritesSweep() throws Exception {
        Path runs = tmp.resolve("staging");
        Files.createDirectories(runs);
        AtomicBoolean stop = new AtomicBoolean();
        Thread sweeper = new Thread(() -> {
            while (!stop.get()) DriverCommit.removeCrashedRuns(runs.resolve("sweeper"));
        });
        sweeper.start();
        AtomicInteger lost = new AtomicInteger();
        try {
            for (int i = 0; i < 2000; i++) {
                Path run = runs.resolve("append-" + i);
                try (FileLock held = DriverCommit.startRun(run.toString())) {
                    Files.createDirectories(run.resolve("t0-1"));      // a task stages now
                    if (!Files.isRegularFile(run.resolve(".run.lock"))) lost.incrementAndGet();
                }
            }
        } finally {
            stop.set(true);
            sweeper.join();
        }
        assertEquals(0, lost.get(), "live runs whose folder a sweep removed");
    }

    @Test
    void aKilledDriversRunGoesAtOnceAndANascentLeftoverOnlyOnceOld() throws Exception {
        Path runs = tmp.resolve("staging");
        Path crashed = runs.resolve("append-crashed");
        Path fresh = runs.resolve(".new-append-fresh");
        Path old = runs.resolve(".new-append-old");
        for (Path p : new Path[] {crashed, fresh, old}) Files.createDirectories(p);
        Files.setLastModifiedTime(old, FileTime.fromMillis(System.currentTimeMillis() - 2 * 3_600_000L));
        DriverCommit.removeCrashedRuns(runs.resolve("mine"));
        assertFalse(Files.exists(crashed));
        assertTrue(Files.exists(fresh));         // a driver between its mkdir and its rename, perhaps
        assertFalse(Files.exists(old));
    }
}
