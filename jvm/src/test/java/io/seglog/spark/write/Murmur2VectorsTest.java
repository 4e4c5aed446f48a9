package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import io.seglog.spark.ConformanceVectors;

/**
 * Kafka's default partition of a key ({@link Murmur2Partition#partition}) against tests/conformance/murmur2.json,
 * the vectors the Python oracle tests/oracles/partitioner.py is held to as well (tests/conformance/test_twin_vectors.py).
 */
class Murmur2VectorsTest {
    private static byte[] hex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    @Test
    void partitionsAsTheVectorsSay() {
        JsonNode cases = ConformanceVectors.read("murmur2.json").get("cases");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            assertEquals(c.get("partition").asInt(), Murmur2Partition.partition(hex(c.get("key").asText()), c.get("partitions").asInt()),
                c.toString());
        }
    }
}
