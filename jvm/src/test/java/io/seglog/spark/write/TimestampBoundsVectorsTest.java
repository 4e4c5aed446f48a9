package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import io.seglog.spark.ConformanceVectors;

/**
 * message.timestamp.before/after.max.ms ({@link StageConfig#timeLimitBroken}) against
 * tests/conformance/timestamp_bounds.json, the vectors the Python core's check_time_difference is held to as well
 * (tests/conformance/test_twin_vectors.py).
 */
class TimestampBoundsVectorsTest {
    @Test
    void boundsAsTheVectorsSay() {
        JsonNode cases = ConformanceVectors.read("timestamp_bounds.json").get("cases");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            StageConfig cfg = new StageConfig(1 << 30, 1 << 20, 4096, Long.MAX_VALUE, 1 << 20, 1 << 20, false,
                c.get("before").asLong(), c.get("after").asLong(), 0);
            String want = c.get("broken").isNull() ? null : c.get("broken").asText();
            assertEquals(want, cfg.timeLimitBroken(c.get("ts").asLong(), c.get("now").asLong()), c.get("why").asText());
        }
    }
}
