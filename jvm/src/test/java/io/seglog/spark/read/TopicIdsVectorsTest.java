package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.ConformanceVectors;
import io.seglog.spark.format.TopicCatalog;

/**
 * The '@topicIds' of startingOffsets/endingOffsets ({@link ReadOptions}'s checkTopicIds, reached through
 * {@link ReadOptions#parse}) against tests/conformance/topic_ids.json, the vectors source/options.py's
 * _check_topic_ids is held to as well (tests/conformance/test_topic_id_vectors.py): the same cases taken or refused,
 * the error naming every text the vector lists.
 */
class TopicIdsVectorsTest {
    @TempDir
    Path tmp;

    @Test
    void topicIdsAsTheVectorsSay() throws IOException {
        JsonNode doc = ConformanceVectors.read("topic_ids.json");
        JsonNode cases = doc.get("cases");
        assertFalse(cases.isEmpty());
        int n = 0;
        for (JsonNode c : cases) {
            String why = c.get("why").asText();
            Path root = root(tmp.resolve("case-" + n++), doc.get("metadata"), c.get("recorded"));
            Map<String, String> options = Map.of("path", root.toString(), "subscribe", c.get("subscribe").asText(),
                c.get("option").asText(), c.get("value").asText());
            if (c.get("refused").isNull()) {
                ReadOptions.parse(options);
                continue;
            }
            SeglogConfigException e = assertThrows(SeglogConfigException.class, () -> ReadOptions.parse(options), why);
            for (JsonNode text : c.get("refused")) {
                assertTrue(e.getMessage().contains(text.asText()), why + ": " + e.getMessage());
            }
        }
    }

    /** A root recording each topic with its id (null: a topic recorded before topic ids). */
    private static Path root(Path root, JsonNode metadata, JsonNode recorded) throws IOException {
        Iterator<Map.Entry<String, JsonNode>> it = recorded.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> t = it.next();
            ObjectNode meta = ((ObjectNode) metadata.deepCopy()).put("name", t.getKey());
            if (!t.getValue().isNull()) meta.put("topic_id", t.getValue().asText());
            Path file = TopicCatalog.topicFile(root, t.getKey());
            Files.createDirectories(file.getParent());
            Files.writeString(file, new ObjectMapper().writeValueAsString(meta));
        }
        return root;
    }
}
