package io.seglog.spark.write;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Path;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * The writer names a user may give: {@link WriterIds#refusal} against tests/conformance/writer_ids.json, the vectors
 * the Python sink's {@code sink/writer_id.py} is held to too (tests/conformance/test_conformance_python.py).
 */
class WriterIdsTest {
    static Path vectors() {
        return ConformanceVectors.path("writer_ids.json");
    }

    @Test
    void refusesAsTheVectorsSay() throws Exception {
        JsonNode cases = ConformanceVectors.read("writer_ids.json");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            String why = WriterIds.refusal(c.get("name").asText());
            String expected = c.get("refused").isNull() ? null : c.get("refused").asText();
            assertEquals(expected, why == null ? null : why.split(":")[0], "name '" + c.get("name").asText() + "'");
        }
    }

    @Test
    void aPlainAppendCountsWhereNoUserNameReaches() {
        assertEquals("@append", WriterIds.plainAppend(null));
        assertEquals("@append.nightly", WriterIds.plainAppend("nightly"));
        assertEquals("allowed", WriterIds.refusal(WriterIds.plainAppend("nightly")).split(":")[0]);
    }
}
