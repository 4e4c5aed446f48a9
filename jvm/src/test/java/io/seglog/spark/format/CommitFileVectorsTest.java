package io.seglog.spark.format;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sink's commit files: {@link CommitLogReader} (its whole read, its ends-only read and its tail) against
 * tests/conformance/commit_files.json, the vectors indexer/commit_log.py is held to too
 * (tests/conformance/test_commit_file_vectors.py).
 */
class CommitFileVectorsTest {
    static Path vectors() {
        return ConformanceVectors.path("commit_files.json");
    }

    static Map<String, Long> longs(JsonNode node) {
        Map<String, Long> out = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = node.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), e.getValue().asLong());
        }
        return out;
    }

    static Map<String, Long> keyed(Map<Integer, Long> ends) {
        Map<String, Long> out = new HashMap<>();
        ends.forEach((p, o) -> out.put(String.valueOf(p), o));
        return out;
    }

    @Test
    void readsCommitFilesAsTheVectorsSay(@TempDir Path dir) throws Exception {
        JsonNode doc = ConformanceVectors.read("commit_files.json");
        JsonNode cases = doc.get("cases");
        assertFalse(cases.isEmpty());
        int k = 0;
        for (JsonNode c : cases) {
            String name = c.get("name").asText();
            Path root = dir.resolve("case-" + k++);
            Path file = CommitLogReader.file(CommitLogReader.dir(root, "t"), 0);
            Files.createDirectories(file.getParent());
            Files.write(file, c.get("text").asText().getBytes(StandardCharsets.UTF_8));
            if (c.has("newer_version")) {
                for (Executable read : new Executable[] {() -> CommitLogReader.latest(root, "t"),
                        () -> CommitLogReader.committedEnds(root, "t"), () -> new CommitLogReader.Tail(root, "t").committedEnds()}) {
                    UnsupportedFormatVersionException e = assertThrows(UnsupportedFormatVersionException.class, read, name);
                    assertTrue(e.getMessage().contains(file.toString()), name + ": " + e.getMessage());
                    assertTrue(e.getMessage().contains("format version " + c.get("newer_version").asLong() + ";"), e.getMessage());
                    assertTrue(e.getMessage().contains("up to version " + doc.get("written_version").asInt() + ":"), e.getMessage());
                    assertEquals(c.get("newer_version").asLong(), e.version(), name);
                    assertEquals(doc.get("written_version").asInt(), e.supported(), name);
                }
                continue;
            }
            if (c.path("error").asBoolean()) {
                for (Executable read : new Executable[] {() -> CommitLogReader.latest(root, "t"),
                        () -> CommitLogReader.committedEnds(root, "t"), () -> new CommitLogReader.Tail(root, "t").committedEnds()}) {
                    CorruptLogException e = assertThrows(CorruptLogException.class, read, name);
                    assertTrue(e.getMessage().contains(file.toString()), name + ": " + e.getMessage());
                }
                continue;
            }
            CommitState state = CommitLogReader.latest(root, "t").orElseThrow();
            assertEquals(longs(c.get("ends")), keyed(state.endOffsets()), name);
            assertEquals(longs(c.get("writers")), state.writers(), name);
            assertEquals(c.get("batch_id").asLong(), state.batchId(), name);
            assertEquals(longs(c.get("ends")), keyed(CommitLogReader.committedEnds(root, "t")), name);
            assertEquals(longs(c.get("ends")), keyed(new CommitLogReader.Tail(root, "t").committedEnds()), name);
        }
    }

    @Test
    void aCommitWritesTheVectorsVersion(@TempDir Path root) throws Exception {
        CommitState state = new CommitLogWriter(root, "t").commit("w", 0, Map.of(0, 1L), false);
        JsonNode written = new com.fasterxml.jackson.databind.ObjectMapper().readTree(
                Files.readAllBytes(CommitLogReader.file(CommitLogReader.dir(root, "t"), state.seq())));
        assertEquals(ConformanceVectors.read("commit_files.json").get("written_version").asInt(), written.path("version").asInt(-1));
    }
}
