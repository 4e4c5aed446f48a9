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
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka's offset checkpoint text: {@link LogStartCheckpoint#parse} against tests/conformance/checkpoints.json, the
 * vectors indexer/checkpoint.py's read_offsets_file is held to too (tests/conformance/test_checkpoint_vectors.py):
 * the same entries, or a {@link CorruptCheckpointException} naming the file and the same line.
 */
class CheckpointVectorsTest {
    static Path vectors() {
        return ConformanceVectors.path("checkpoints.json");
    }

    static byte[] bytes(JsonNode c) {
        if (!c.has("hex")) return c.get("text").asText().getBytes(StandardCharsets.UTF_8);
        String hex = c.get("hex").asText();
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    @Test
    void readsCheckpointsAsTheVectorsSay(@TempDir Path dir) throws Exception {
        JsonNode cases = ConformanceVectors.read("checkpoints.json").get("cases");
        assertFalse(cases.isEmpty());
        int k = 0;
        for (JsonNode c : cases) {
            String name = c.get("name").asText();
            Path file = dir.resolve("case-" + k++).resolve(LogStartCheckpoint.FILE);
            Files.createDirectories(file.getParent());
            if (!c.path("missing").asBoolean()) Files.write(file, bytes(c));
            if (c.has("entries")) {
                Map<String, Long> want = new HashMap<>();
                Iterator<Map.Entry<String, JsonNode>> it = c.get("entries").fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> e = it.next();
                    want.put(e.getKey(), e.getValue().asLong());
                }
                assertEquals(want, LogStartCheckpoint.parse(file), name);
            } else {
                CorruptCheckpointException e = assertThrows(CorruptCheckpointException.class,
                    () -> LogStartCheckpoint.parse(file), name);
                assertEquals(c.get("error_line").asInt(), e.line, name + ": " + e.getMessage());
                assertTrue(e.getMessage().startsWith(file + " line " + e.line + ": "), name + ": " + e.getMessage());
                assertEquals(Map.of(), LogStartCheckpoint.read(file.getParent()), name + ": readers take it as empty");
            }
        }
    }
}
