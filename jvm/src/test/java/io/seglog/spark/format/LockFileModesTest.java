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
}
