package io.seglog.spark.format;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.nio.file.Paths;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * Log roots given as file URIs: {@link RootPath#local} against tests/conformance/root_uris.json, the vectors the
 * Python core's {@code indexer.root.local_root} is held to too (tests/indexer/test_root_uris.py).
 */
class RootPathTest {
    static Path vectors() {
        return ConformanceVectors.path("root_uris.json");
    }

    @Test
    void namesTheLocalPathsTheVectorsSay() throws Exception {
        JsonNode cases = ConformanceVectors.read("root_uris.json");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            String raw = c.get("raw").asText();
            if (c.path("error").asBoolean(false)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RootPath.local(raw, "option 'path'"), raw);
                assertTrue(e.getMessage().contains("option 'path'") && e.getMessage().contains(raw), e.getMessage());
            } else {
                assertEquals(c.get("path").asText(), RootPath.local(raw, "option 'path'"), raw);
            }
        }
    }
}
