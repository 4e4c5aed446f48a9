package io.seglog.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.TopicCatalog;

/** DROP TABLE without PURGE is refused and changes nothing (a plain DROP reads as forgetting a table, not deleting
 *  a log); with PURGE it is Kafka's DeleteTopics. */
class SeglogCatalogTest {
    @TempDir
    Path root;

    @Test
    void dropIsRefusedWithoutPurge() throws Exception {
        SeglogCatalog catalog = new SeglogCatalog();
        catalog.initialize("logs", new CaseInsensitiveStringMap(Map.of("root", root.toString())));
        TopicCatalog.create(root, "events", 1, Map.of("retention.ms", "1000"));
        Files.createDirectories(root.resolve("events-0"));
        String before = Files.readString(TopicCatalog.topicFile(root, "events"));
        Identifier events = Identifier.of(new String[0], "events");

        SeglogCatalogException refused = assertThrows(SeglogCatalogException.class, () -> catalog.dropTable(events));
        assertTrue(refused.getMessage().contains("PURGE"), refused.getMessage());
        assertEquals(before, Files.readString(TopicCatalog.topicFile(root, "events")));
        assertTrue(Files.isDirectory(root.resolve("events-0")));

        assertTrue(catalog.purgeTable(events));
        assertFalse(Files.exists(TopicCatalog.topicFile(root, "events")));
        assertFalse(Files.exists(root.resolve("events-0")));
        assertFalse(catalog.purgeTable(events));    // gone: nothing to delete
    }

    /** A topic half deleted (a killed DROP ... PURGE took its metadata, not yet its folders) still holds its name:
     *  CREATE TABLE is refused until a second PURGE finishes the delete. */
    @Test
    void aHalfDeletedTopicKeepsItsName() throws Exception {
        SeglogCatalog catalog = new SeglogCatalog();
        catalog.initialize("logs", new CaseInsensitiveStringMap(Map.of("root", root.toString())));
        Files.createDirectories(root.resolve("events-0"));
        Identifier events = Identifier.of(new String[0], "events");
        assertThrows(org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException.class, () -> catalog.createTable(
            events, new org.apache.spark.sql.types.StructType(), new org.apache.spark.sql.connector.expressions.Transform[0],
            Map.of()));
        assertTrue(catalog.purgeTable(events));
        catalog.createTable(events, new org.apache.spark.sql.types.StructType(),
            new org.apache.spark.sql.connector.expressions.Transform[0], Map.of("partitions", "1"));
        assertEquals(1, TopicCatalog.load(root, "events").orElseThrow().partitions());
    }
}
