package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

import io.seglog.spark.ConformanceVectors;

/**
 * A write's input columns ({@link InputColumns#of}) against tests/conformance/input_columns.json, the vectors the
 * Python sink's validate_schema is held to as well (tests/conformance/test_twin_vectors.py).
 */
class InputColumnsVectorsTest {
    @Test
    void columnsAsTheVectorsSay() {
        JsonNode cases = ConformanceVectors.read("input_columns.json").get("cases");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            StructType schema = (StructType) DataType.fromJson(c.get("schema").toString());
            String why = c.get("why").asText();
            if (c.get("refused").isNull()) {
                InputColumns.of(schema);
            } else {
                SeglogWriteException e = assertThrows(SeglogWriteException.class, () -> InputColumns.of(schema), why);
                assertTrue(e.getMessage().contains(c.get("refused").asText()), why + ": " + e.getMessage());
            }
        }
    }
}
