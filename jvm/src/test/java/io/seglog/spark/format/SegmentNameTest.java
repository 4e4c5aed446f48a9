package io.seglog.spark.format;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Segment file names: {@link SegmentName#parse} against tests/conformance/segment_names.json, the vectors the
 * Python core's {@code names.parse_segment_file} is held to too (tests/indexer/test_root_paths.py).
 */
class SegmentNameTest {
    static Path vectors() {
        return ConformanceVectors.path("segment_names.json");
    }

    @Test
    void parsesAsTheVectorsSay() throws Exception {
        JsonNode cases = ConformanceVectors.read("segment_names.json");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            String name = c.get("name").asText();
            if (c.path("error").asBoolean(false)) {
                SegmentNameException e = assertThrows(SegmentNameException.class, () -> SegmentName.parse(name), name);
                assertTrue(e.getMessage().contains(name), e.getMessage());
            } else if (c.get("base").isNull()) {
                assertNull(SegmentName.parse(name), name);
            } else {
                assertEquals(Long.parseLong(c.get("base").asText()), SegmentName.parse(name).base(), name);
            }
        }
    }

    @Test
    void aListingWithANamePastInt64IsRefusedByName(@TempDir Path dir) throws Exception {
        Files.createFile(dir.resolve("00000000000000000000.log"));
        Files.createFile(dir.resolve("99999999999999999999.log"));
        SegmentNameException e = assertThrows(SegmentNameException.class, () -> PartitionLog.listBases(dir, null));
        assertTrue(e.getMessage().contains("99999999999999999999.log"), e.getMessage());
    }
}
