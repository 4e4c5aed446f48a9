package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.nio.file.Paths;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * A batch's recordCount against what it can hold: {@link BatchBounds#countProblem} against
 * tests/conformance/batch_bounds.json, word for word, the vectors Python's {@code record_count_problem} is held to
 * too (tests/conformance/test_conformance_python.py): one rule, one corpus, both implementations.
 */
class BatchBoundsTest {
    @Test
    void countsAreBoundedAsTheVectorsSay() throws Exception {
        Path vectors = Paths.get(System.getProperty("seglog.conformance.corpus", "../tests/conformance/corpus"))
            .toAbsolutePath().normalize().resolveSibling("batch_bounds.json");
        JsonNode cases = new ObjectMapper().readTree(vectors.toFile());
        assertTrue(cases.size() > 5);
        for (JsonNode c : cases) {
            String expected = c.get("problem").isNull() ? null : c.get("problem").asText();
            assertEquals(expected, BatchBounds.countProblem(c.get("count").asLong(), c.get("compressed").asBoolean(),
                c.get("sizeInBytes").asInt()), c.toString());
        }
    }
}
