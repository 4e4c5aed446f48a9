package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.seglog.spark.format.FileLock;
import io.seglog.spark.format.StagingRuns;
import io.seglog.spark.format.StorageException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
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

    /** A run's end (commit or abort) removes its own folder only, and a task attempt still running after it makes
     *  nothing of the run again; the writer's folders go once empty. */
    @Test
    void aRunsEndRemovesOnlyItsOwnFolderAndNoTaskStagesInItAgain() throws Exception {
        Path staging = tmp.resolve("staging");
        Path runs = staging.resolve("@w").resolve("key-jvm");
        Path mine = runs.resolve("append-mine");
        Path other = runs.resolve("append-other");
        try (FileLock otherLock = DriverCommit.startRun(other.toString())) {
            try (FileLock mineLock = DriverCommit.startRun(mine.toString())) {
                StagingRuns.taskFolder(mine.resolve("t0-1"));
                Files.write(mine.resolve("t0-1").resolve("s0-0.log"), new byte[] {1});
                StagingRuns.taskFolder(other.resolve("t0-2"));
                StagingRuns.endRun(mine);
            }
            assertFalse(Files.exists(mine));
            try (java.util.stream.Stream<Path> left = Files.list(runs)) {
                assertEquals(java.util.List.of(other), left.collect(java.util.stream.Collectors.toList()));
            }
            assertThrows(StorageException.class, () -> StagingRuns.taskFolder(mine.resolve("t1-3")));   // a straggler
            assertFalse(Files.exists(mine));
            assertTrue(Files.isDirectory(other.resolve("t0-2")) && Files.isRegularFile(other.resolve(".run.lock")));
            StagingRuns.endRun(other);
        }
        assertFalse(Files.exists(staging.resolve("@w")));       // left empty: gone
        assertTrue(Files.isDirectory(staging));
    }

    /** Two writers' runs start and end side by side: an end that removes the writer's folder, empty, between another
     *  run's mkdir of it and of its own folder never fails that run's start. */
    @Test
    void runsStartingWhileOthersEndAllStart() throws Exception {
        Path runs = tmp.resolve("staging").resolve("@w").resolve("key-jvm");
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread[] threads = new Thread[2];
        for (int t = 0; t < threads.length; t++) {
            int id = t;
            threads[t] = new Thread(() -> {
                try {
                    for (int i = 0; i < 1000 && failed.get() == null; i++) {
                        Path run = runs.resolve("append-" + id + "-" + i);
                        try (FileLock held = DriverCommit.startRun(run.toString())) {
                            StagingRuns.endRun(run);
                        }
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) t.join();
        assertEquals(null, failed.get());
    }
}
