package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import io.seglog.spark.ConformanceVectors;

/**
 * The roll rule ({@link AppendRules#rolls}), above all in the "too early" direction, against
 * tests/conformance/roll_rule.json, the vectors the Python core's LogSegment._rolls is held to as well
 * (tests/conformance/test_twin_vectors.py).
 */
class RollRuleVectorsTest {
    @Test
    void rollsAsTheVectorsSay() {
        JsonNode v = ConformanceVectors.read("roll_rule.json");
        JsonNode cfg = v.get("config");
        AppendRules rules = new AppendRules(cfg.get("segment.bytes").asLong(), cfg.get("segment.ms").asLong(),
            cfg.get("segment.index.bytes").asInt(), 4096, 0);
        assertFalse(v.get("cases").isEmpty());
        for (JsonNode c : v.get("cases")) {
            boolean got = rules.rolls(c.get("size").asLong(), c.get("base").asLong(), c.get("firstTs").asLong(),
                c.get("createdMs").asLong(), c.get("batchBytes").asLong(), c.get("lastOffset").asLong(), c.get("maxTs").asLong(),
                c.get("now").asLong(), c.get("entriesRoom").asLong());
            assertEquals(c.get("rolls").asBoolean(), got, c.get("why").asText());
        }
    }
}
