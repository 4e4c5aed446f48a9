package io.seglog.spark.format;

import io.seglog.spark.ConformanceVectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka's topic rules in {@link TopicLayout} (validTopic, collidingTopic: '.' and '_' collide) against
 * tests/conformance/topic_names.json, the vectors indexer/names.py is held to as well
 * (tests/conformance/test_conformance_python.py); and {@link TopicCatalog#create} refusing a colliding new topic.
 */
class TopicNamesTest {
    static Path vectors() {
        return ConformanceVectors.path("topic_names.json");
    }

    @Test
    void namesAndCollisionsAsTheVectorsSay() throws Exception {
        JsonNode v = ConformanceVectors.read("topic_names.json");
        for (JsonNode n : v.get("valid")) assertTrue(TopicLayout.validTopic(n.asText()), n.asText());
        for (JsonNode n : v.get("invalid")) assertFalse(TopicLayout.validTopic(n.asText()), n.asText());
        assertFalse(v.get("collisions").isEmpty());
        for (JsonNode c : v.get("collisions")) {
            List<String> existing = new ArrayList<>();
            for (JsonNode e : c.get("existing")) existing.add(e.asText());
            String expected = c.get("collides_with").isNull() ? null : c.get("collides_with").asText();
            assertEquals(expected, TopicLayout.collidingTopic(c.get("topic").asText(), existing), c.toString());
        }
    }

    @Test
    void createRefusesACollidingTopicAndWritesNothing(@TempDir Path root) throws Exception {
        TopicCatalog.create(root, "a.b", 1, Map.of());
        InvalidTopicException e = assertThrows(InvalidTopicException.class, () -> TopicCatalog.create(root, "a_b", 1, Map.of()));
        assertTrue(e.getMessage().contains("'a_b' collides with existing topic 'a.b'"), e.getMessage());
        assertFalse(Files.exists(TopicCatalog.topicFile(root, "a_b")));
        assertEquals(List.of("a.b"), TopicLayout.topics(root));
        TopicCatalog.create(root, "a.b", 1, Map.of());   // the topic itself: no collision
        // A topic known only by its partition folder counts too.
        Files.createDirectories(root.resolve("x_y-0"));
        assertThrows(InvalidTopicException.class, () -> TopicCatalog.create(root, "x.y", 1, Map.of()));
        assertFalse(Files.exists(TopicCatalog.topicFile(root, "x.y")));
    }
}
