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

    /** The session catalog passes a table's root as {@code location} (CREATE TABLE ... USING seglog LOCATION). */
    @Test
    void takesLocationAsTheRootAndRefusesTwoFolders() {
        assertEquals("/data/log", RootPath.fromOptions(null, "file:/data/log", "seglog source"));
        assertEquals("/data/log", RootPath.fromOptions("/data/log", "file:///data/log/", "seglog source"));
        assertEquals("/data/log", RootPath.fromOptions("/data/log", null, "seglog source"));
        assertEquals(null, RootPath.fromOptions(" ", null, "seglog source"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> RootPath.fromOptions("/data/log", "/data/other", "seglog write"));
        assertTrue(e.getMessage().contains("option 'location' = '/data/other'") && e.getMessage().contains("two folders"),
            e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> RootPath.fromOptions(null, "s3://b/log", "seglog source"));
        assertTrue(e.getMessage().contains("seglog source: option 'location'"), e.getMessage());
    }
}
