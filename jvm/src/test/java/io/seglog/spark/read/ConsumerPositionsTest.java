package io.seglog.spark.read;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The consumer position file the connector writes, against tests/conformance/consumer_positions.json: each valid
 * vector's position renders to its text byte for byte, the text indexer/consumer_positions.py parses back to the
 * same position (tests/conformance/test_consumer_position_vectors.py): one format, both languages.
 */
class ConsumerPositionsTest {
    @Test
    void rendersEachPositionAsTheVectorsSay() {
        JsonNode cases = ConformanceVectors.read("consumer_positions.json").get("valid");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            JsonNode p = c.get("position");
            Map<String, TreeMap<Integer, Long>> offsets = new TreeMap<>();
            for (JsonNode o : p.get("offsets")) {
                offsets.computeIfAbsent(o.get(0).asText(), k -> new TreeMap<>()).put(o.get(1).asInt(), o.get(2).asLong());
            }
            String name = p.get("name").isNull() ? null : p.get("name").asText();
            String got = ConsumerPositions.render(p.get("query_id").asText(), name, p.get("checkpoint").asText(), offsets,
                p.get("committed_ms").asLong());
            assertEquals(c.get("text").asText(), got, c.get("file_name").asText());
            assertEquals(c.get("file_name").asText(), p.get("query_id").asText() + ".json");
        }
    }

    /** Identity is known, never guessed: off a streaming query's thread (no sql.streaming.queryId) nothing is
     *  written, and nothing is thrown (best effort: a position never fails the query). */
    @Test
    void writesNothingWithoutAQueryIdAndNeverThrows(@TempDir Path root) {
        ConsumerPositions positions = new ConsumerPositions(root.toString(), "file:/cp/sources/0");
        positions.record(new SeglogSourceOffset(Map.of("t", Map.of(0, 5L))), 1L);
        assertFalse(Files.exists(root.resolve("_seglog").resolve("consumers")));
    }
}
