package io.seglog.spark.format;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Topic metadata files: {@link TopicCatalog} against tests/conformance/topic_metadata.json, the vectors
 * indexer/topics.py is held to too (tests/conformance/test_topic_metadata_vectors.py).
 */
class TopicMetadataVectorsTest {
    @Test
    void readsTopicMetadataAsTheVectorsSay(@TempDir Path dir) throws Exception {
        JsonNode doc = ConformanceVectors.read("topic_metadata.json");
        assertFalse(doc.get("cases").isEmpty());
        int k = 0;
        for (JsonNode c : doc.get("cases")) check(dir.resolve("case-" + k++), c, doc.get("written_version").asInt());
    }

    /** One case: its text as topic t's metadata file under {@code root}, read as the case says. */
    private static void check(Path root, JsonNode c, int supported) throws Exception {
        String name = c.get("name").asText();
        Path file = TopicCatalog.topicFile(root, "t");
        Files.createDirectories(file.getParent());
        Files.write(file, c.get("text").asText().getBytes(StandardCharsets.UTF_8));
        if (c.has("newer_version")) {
            UnsupportedFormatVersionException e = assertThrows(UnsupportedFormatVersionException.class,
                    () -> TopicCatalog.load(root, "t"), name);
            assertTrue(e.getMessage().contains(file.toString()), name + ": " + e.getMessage());
            assertTrue(e.getMessage().contains("format version " + c.get("newer_version").asLong() + ";"), e.getMessage());
            assertTrue(e.getMessage().contains("up to version " + supported + ":"), e.getMessage());
        } else if (c.path("error").asBoolean()) {
            InvalidTopicException e = assertThrows(InvalidTopicException.class, () -> TopicCatalog.load(root, "t"), name);
            assertTrue(e.getMessage().contains(file.toString()), name + ": " + e.getMessage());
        } else {
            assertEquals(c.get("partitions").asInt(), TopicCatalog.load(root, "t").orElseThrow().partitions(), name);
            if (c.has("topic_id")) {
                String id = c.get("topic_id").isNull() ? null : c.get("topic_id").asText();
                assertEquals(id, TopicCatalog.load(root, "t").orElseThrow().topicId(), name);
            }
        }
    }

    @Test
    void aTopicCreatedAgainGetsAnotherTopicId(@TempDir Path root) throws Exception {
        String first = TopicCatalog.create(root, "w", 1, Map.of()).topicId();
        assertTrue(TopicMetadata.validTopicId(first), first);
        assertEquals(first, TopicCatalog.load(root, "w").orElseThrow().topicId());
        Files.delete(TopicCatalog.topicFile(root, "w"));
        assertNotEquals(first, TopicCatalog.create(root, "w", 1, Map.of()).topicId());
    }

    @Test
    void aNewTopicWritesTheVectorsVersion(@TempDir Path root) throws Exception {
        TopicCatalog.create(root, "w", 1, Map.of());
        JsonNode written = new ObjectMapper().readTree(Files.readAllBytes(TopicCatalog.topicFile(root, "w")));
        assertEquals(ConformanceVectors.read("topic_metadata.json").get("written_version").asInt(), written.path("version").asInt(-1));
    }
}
