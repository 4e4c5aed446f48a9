package io.seglog.spark.format;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The mode of a lock file, {@link FileLock}'s, against tests/conformance/lock_file_modes.json, the vectors
 * the Python core's open_lock_file is held to too (tests/conformance/test_lock_file_modes.py): 0600 in a
 * private folder, 0660 in a shared one, an existing one this process owns narrowed to that.
 */
class LockFileModesTest {
    @TempDir
    Path tmp;

    static Path vectors() {
        return ConformanceVectors.path("lock_file_modes.json");
    }

    @Test
    void lockFileModesAreTheVectors() throws Exception {
        int k = 0;
        for (JsonNode c : ConformanceVectors.read("lock_file_modes.json")) {
            Path folder = Files.createDirectory(tmp.resolve("locks-" + k++));
            Files.setAttribute(folder, "unix:mode", Integer.parseInt(c.get("folder").asText(), 8));
            Path f = folder.resolve("events-0.lock");
            if (!c.get("existing").isNull()) {
                Files.createFile(f);
                Files.setAttribute(f, "unix:mode", Integer.parseInt(c.get("existing").asText(), 8));
            }
            new FileLock(f, "events-0").acquire(0L).release();
            int mode = (Integer) Files.getAttribute(f, "unix:mode") & 07777;
            assertEquals(Integer.parseInt(c.get("expected").asText(), 8), mode, c.toString());
        }
    }

    /** A new lock file taken by acquireNew (a staging run's, DriverCommit.startRun) ends as acquire's would: the
     *  vectors with no file there before, its folder made by the call. */
    @Test
    void aNewLockFileHasTheVectorsMode() throws Exception {
        int k = 0;
        for (JsonNode c : ConformanceVectors.read("lock_file_modes.json")) {
            if (!c.get("existing").isNull()) continue;
            Path folder = Files.createDirectory(tmp.resolve("new-" + k++));
            Files.setAttribute(folder, "unix:mode", Integer.parseInt(c.get("folder").asText(), 8));
            Path f = folder.resolve("run").resolve(".run.lock");
            FileLock lock = new FileLock(f, "run").acquireNew();
            org.junit.jupiter.api.Assertions.assertTrue(lock.held());
            // held: another descriptor's non-blocking try finds it taken
            org.junit.jupiter.api.Assertions.assertThrows(LockedException.class, () -> new FileLock(f, "run").acquire(0L));
            lock.release();
            int mode = (Integer) Files.getAttribute(f, "unix:mode") & 07777;
            assertEquals(Integer.parseInt(c.get("expected").asText(), 8), mode, c.toString());
            // a file there already is refused: the call is for a new file only
            org.junit.jupiter.api.Assertions.assertThrows(StorageException.class, () -> new FileLock(f, "run").acquireNew());
        }
        org.junit.jupiter.api.Assertions.assertTrue(k > 0);
    }
}
