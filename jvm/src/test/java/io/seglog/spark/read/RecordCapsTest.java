package io.seglog.spark.read;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * maxRecordsPerPartition: {@link Planner#capRecords} against tests/conformance/record_caps.json, the vectors the
 * Python planner's {@code cap_records} is held to too (tests/conformance/test_conformance_python.py), answered
 * by a brute-force model (tests/conformance/model.py): one rule, one corpus, both implementations.
 */
class RecordCapsTest {
    static Path vectors() {
        return ConformanceVectors.path("record_caps.json");
    }

    static List<List<Slice>> tasks(JsonNode node) {
        List<List<Slice>> out = new ArrayList<>();
        for (JsonNode task : node) {
            List<Slice> slices = new ArrayList<>();
            for (JsonNode s : task) {
                slices.add(new Slice(s.get(0).asText(), s.get(1).asInt(), s.get(2).asLong(), s.get(3).asLong()));
            }
            out.add(slices);
        }
        return out;
    }

    static String show(List<List<Slice>> tasks) {
        StringBuilder b = new StringBuilder();
        for (List<Slice> t : tasks) b.append(t).append(' ');
        return b.toString().trim();
    }

    @Test
    void capsRecordsAsTheVectorsSay() throws Exception {
        JsonNode cases = ConformanceVectors.read("record_caps.json");
        assertFalse(cases.isEmpty());
        int k = 0;
        for (JsonNode c : cases) {
            List<List<Slice>> got = Planner.capRecords(tasks(c.get("tasks")), c.get("maximum").asLong());
            assertEquals(show(tasks(c.get("expected"))), show(got), "case " + k + " (maximum " + c.get("maximum") + ")");
            k++;
        }
    }
}
