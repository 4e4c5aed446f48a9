package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka's admin operations on a root (the SQL catalog's DDL, docs/spec.md §8.1): CreateTopics validates every config
 * by name before anything is written, IncrementalAlterConfigs sets and unsets keys leaving the others, CreatePartitions
 * only grows, DeleteTopics takes everything of the topic under the root and leaves the other topics' state.
 */
class TopicAdminTest {
    @TempDir
    Path root;

    /** Every file and folder under the root, relative. */
    private Set<String> files() throws Exception {
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.map(p -> root.relativize(p).toString()).collect(Collectors.toCollection(java.util.TreeSet::new));
        }
    }

    @Test
    void createRefusesABadConfigByNameAndCreatesNothing() throws Exception {
        Set<String> before = files();
        TopicConfigException unknown = assertThrows(TopicConfigException.class,
            () -> TopicCatalog.create(root, "events", 2, Map.of("retention.msx", "1000")));
        assertTrue(unknown.getMessage().contains("retention.msx"), unknown.getMessage());
        assertTrue(unknown.getMessage().contains("retention.ms"), unknown.getMessage());   // the nearest known key
        TopicConfigException value = assertThrows(TopicConfigException.class,
            () -> TopicCatalog.create(root, "events", 2, Map.of("cleanup.policy", "shred")));
        assertTrue(value.getMessage().contains("cleanup.policy"), value.getMessage());
        assertEquals(before, files());
        assertTrue(TopicCatalog.load(root, "events").isEmpty());

        TopicMetadata made = TopicCatalog.create(root, "events", 2, Map.of("retention.ms", "1000"));
        assertEquals(2, made.partitions());
        assertEquals(Map.of("retention.ms", 1000L), made.config());
        assertEquals(made, TopicCatalog.load(root, "events").orElseThrow());
    }

    @Test
    void alterSetsAndUnsetsOnlyTheKeysNamed() {
        TopicCatalog.create(root, "events", 1, Map.of("retention.ms", "1000", "segment.bytes", "1048576"));
        TopicMetadata set = TopicAdmin.alter(root, "events", Map.of("retention.bytes", "4096", "retention.ms", "5000"),
            List.of(), null);
        assertEquals(new TreeMap<>(Map.of("retention.ms", 5000L, "retention.bytes", 4096L, "segment.bytes", 1048576L)),
            new TreeMap<>(set.config()));
        TopicMetadata unset = TopicAdmin.alter(root, "events", Map.of(), List.of("retention.ms"), null);
        assertEquals(new TreeMap<>(Map.of("retention.bytes", 4096L, "segment.bytes", 1048576L)), new TreeMap<>(unset.config()));
        assertEquals(unset, TopicCatalog.load(root, "events").orElseThrow());
        assertEquals(set.createdMs(), unset.createdMs());

        // a bad key or value, or a combination Kafka refuses, changes nothing
        TopicMetadata recorded = TopicCatalog.load(root, "events").orElseThrow();
        assertThrows(TopicConfigException.class,
            () -> TopicAdmin.alter(root, "events", Map.of("retention.byts", "1"), List.of(), null));
        assertThrows(TopicConfigException.class,
            () -> TopicAdmin.alter(root, "events", Map.of("segment.bytes", "-5"), List.of(), null));
        assertThrows(TopicConfigException.class,
            () -> TopicAdmin.alter(root, "events", Map.of(), List.of("no.such.key"), null));
        assertEquals(recorded, TopicCatalog.load(root, "events").orElseThrow());
    }

    @Test
    void partitionsGrowButNeverShrink() {
        TopicCatalog.create(root, "events", 2, Map.of());
        assertEquals(5, TopicAdmin.alter(root, "events", Map.of(), List.of(), 5).partitions());
        assertEquals(5, TopicAdmin.alter(root, "events", Map.of(), List.of(), 5).partitions());   // unchanged
        InvalidTopicException shrink = assertThrows(InvalidTopicException.class,
            () -> TopicAdmin.alter(root, "events", Map.of("retention.ms", "1000"), List.of(), 3));
        assertTrue(shrink.getMessage().contains("never removed"), shrink.getMessage());
        TopicMetadata kept = TopicCatalog.load(root, "events").orElseThrow();
        assertEquals(5, kept.partitions());
        assertEquals(Map.of(), kept.config());     // the whole request was refused, its SET too
    }

    @Test
    void deleteTakesEveryPerTopicThingUnderTheRootAndLeavesTheOthers() throws Exception {
        TopicCatalog.create(root, "events", 2, Map.of());
        TopicCatalog.create(root, "kept", 1, Map.of());
        for (String dir : List.of("events-0", "events-1", "kept-0")) Files.createDirectories(root.resolve(dir));
        String checkpoint = "0\n3\nevents 0 7\nevents 1 9\nkept 0 4\n";
        Files.writeString(root.resolve(OffsetGaps.CLEANER_CHECKPOINT), checkpoint);
        Files.writeString(root.resolve(LogStartCheckpoint.FILE), checkpoint);
        Path consumers = ConsumerPositionFiles.dir(root);
        Files.createDirectories(consumers);
        String both = "11111111-1111-1111-1111-111111111111.json";
        String eventsOnly = "22222222-2222-2222-2222-222222222222.json";
        Files.writeString(consumers.resolve(both), "{\"format\":1,\"query_id\":\"11111111-1111-1111-1111-111111111111\","
            + "\"name\":null,\"checkpoint\":\"file:/c\",\"offsets\":{\"events\":{\"0\":5},\"kept\":{\"0\":2}},\"committed_ms\":1}");
        Files.writeString(consumers.resolve(eventsOnly), "{\"format\":1,\"query_id\":\"22222222-2222-2222-2222-222222222222\","
            + "\"name\":null,\"checkpoint\":\"file:/d\",\"offsets\":{\"events\":{\"1\":3}},\"committed_ms\":1}");
        Path over = StagingRuns.writerStaging(root, "@append", "events").resolve("r1");
        Files.createDirectories(over.resolve("t0-1"));
        Path keptRun = StagingRuns.writerStaging(root, "@append", "kept").resolve("r2");
        Files.createDirectories(keptRun);

        TopicAdmin.delete(root, "events");

        assertTrue(TopicCatalog.load(root, "events").isEmpty());
        assertFalse(Files.exists(root.resolve("events-0")));
        assertFalse(Files.exists(root.resolve("events-1")));
        assertEquals("0\n1\nkept 0 4\n", Files.readString(root.resolve(OffsetGaps.CLEANER_CHECKPOINT)));
        assertEquals("0\n1\nkept 0 4\n", Files.readString(root.resolve(LogStartCheckpoint.FILE)));
        assertFalse(Files.exists(consumers.resolve(eventsOnly)));
        String left = new String(Files.readAllBytes(consumers.resolve(both)), StandardCharsets.UTF_8);
        assertFalse(left.contains("events"), left);
        assertTrue(left.contains("\"kept\":{\"0\":2}"), left);
        assertFalse(Files.exists(over.getParent()));
        assertTrue(Files.isDirectory(keptRun));
        assertTrue(TopicCatalog.load(root, "kept").isPresent());
        assertTrue(Files.isDirectory(root.resolve("kept-0")));
        for (String f : files()) {
            if (!f.startsWith("_seglog/locks")) assertFalse(f.contains("events"), f);
        }
    }

    /** A delete killed after its metadata went into the trash: the topic still exists by its folders, so the name is
     *  not free (CREATE refuses it) and the next delete finishes it, the leftover trash with it. */
    @Test
    void aKilledDeleteIsFinishedByTheNext() throws Exception {
        TopicCatalog.create(root, "events", 1, Map.of());
        Files.createDirectories(root.resolve("events-0"));
        Path trash = root.resolve("_seglog/deleted/events-1.deleted");
        Files.createDirectories(trash);
        Files.move(TopicCatalog.topicFile(root, "events"), trash.resolve("topic.json"));
        assertEquals(List.of(0), TopicLayout.partitions(root, "events"));

        TopicAdmin.delete(root, "events");

        assertFalse(Files.exists(root.resolve("events-0")));
        assertFalse(Files.exists(trash));
        assertEquals(List.of(), TopicLayout.partitions(root, "events"));
        for (String f : files()) {
            if (!f.startsWith("_seglog/locks")) assertFalse(f.contains("events"), f);
        }
    }

    @Test
    void deleteLeavesALiveStagingRunToItsDriver() throws Exception {
        TopicCatalog.create(root, "events", 1, Map.of());
        Path live = StagingRuns.writerStaging(root, "w", "events").resolve("r1");
        Files.createDirectories(live);
        try (FileLock held = StagingRuns.runLock(live).acquire(0L)) {
            TopicAdmin.delete(root, "events");
            assertTrue(Files.isDirectory(live));
        }
        assertTrue(TopicCatalog.load(root, "events").isEmpty());
    }
}
