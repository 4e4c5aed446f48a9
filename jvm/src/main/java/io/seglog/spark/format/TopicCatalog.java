package io.seglog.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Topic metadata, created and checked as indexer/topics.py does: {@code <root>/_seglog/topics/<topic>.json}
 * is written whole under a temporary name, forced, then hard-linked to its name, which fails when another
 * creator got there first (first writer wins, never a rename over); every later creator reads the recorded
 * metadata and must ask for the same thing. Invariant: once the file exists only Kafka's admin operations change it
 * (TopicAdmin: configuration and a partition count that only grows, a whole new file renamed over it).
 */
public final class TopicCatalog {
    public static final int MAX_PARTITIONS = 1 << 20;   // indexer/topics.py's sanity bound
    private static final ObjectMapper JSON = new ObjectMapper();

    private TopicCatalog() {}

    public static Path topicsDir(Path root) {
        return RootFiles.metaPath(root, "topics");
    }

    public static Path topicFile(Path root, String topic) {
        checkTopic(topic);
        return topicsDir(root).resolve(topic + ".json");
    }

    static void checkTopic(String topic) {
        if (topic == null || !TopicLayout.validTopic(topic)) {
            throw new InvalidTopicException("invalid topic name " + (topic == null ? "null" : PythonJson.string(topic).replace('"', '\''))
                    + ": a topic is 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'");
        }
    }

    static void checkPartitions(String topic, long partitions) {
        if (partitions < 1 || partitions > MAX_PARTITIONS) {
            throw new InvalidTopicException("topic '" + topic + "': partitions = " + partitions
                    + "; allowed: an integer from 1 to " + MAX_PARTITIONS);
        }
    }

    /** The recorded metadata of {@code topic}, or empty when it was never created. */
    public static Optional<TopicMetadata> load(Path root, String topic) {
        Path path = topicFile(root, topic);
        byte[] raw;
        try {
            raw = Files.readAllBytes(path);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new StorageException("topic metadata " + path + ": cannot read it: " + e, e);
        }
        TopicMetadata meta = parse(path, raw);
        if (!meta.name().equals(topic)) {
            throw new InvalidTopicException("topic metadata " + path + " names topic '" + meta.name() + "', not '" + topic + "'");
        }
        return Optional.of(meta);
    }

    private static TopicMetadata parse(Path path, byte[] raw) {
        try {
            JsonNode doc = JSON.readTree(raw);
            FormatVersion.read(doc, FormatVersion.TOPIC_METADATA, path, "topic metadata");   // first: a newer file is refused whole
            Map<String, Object> config = new LinkedHashMap<>();
            JsonNode c = doc.get("config");
            if (c != null && !c.isNull()) {
                Iterator<Map.Entry<String, JsonNode>> it = c.fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> e = it.next();
                    config.put(e.getKey(), plain(e.getValue()));
                }
            }
            if ("none".equals(config.get("compression.type"))) {
                // recorded by seglog 0.2, which took the producer's name (indexer/topics.py's _parse)
                config.put("compression.type", "uncompressed");
            }
            JsonNode n = doc.get("partitions");
            if (n == null || !n.canConvertToLong()) throw new IllegalArgumentException("partitions is " + n);
            JsonNode name = doc.get("name");
            if (name == null || name.isNull()) throw new IllegalArgumentException("no name");
            JsonNode id = doc.get("topic_id");   // absent in a file written before topic ids
            if (id != null && !(id.isTextual() && TopicMetadata.validTopicId(id.asText()))) {
                throw new IllegalArgumentException("topic_id is " + id + ", not a UUID");
            }
            TopicMetadata meta = new TopicMetadata(name.asText(), (int) n.asLong(), config,
                    doc.has("created_ms") ? doc.get("created_ms").asLong() : 0L, id == null ? null : id.asText());
            checkPartitions(meta.name(), n.asLong());
            return meta;
        } catch (IOException | RuntimeException e) {
            if (e instanceof InvalidTopicException) throw (InvalidTopicException) e;
            if (e instanceof UnsupportedFormatVersionException) throw (UnsupportedFormatVersionException) e;
            throw new InvalidTopicException("topic metadata " + path + " is unreadable: " + e);
        }
    }

    private static Object plain(JsonNode v) {
        if (v.isNull()) return null;
        if (v.isIntegralNumber()) return v.bigIntegerValue().bitLength() < 64 ? (Object) v.asLong() : v.bigIntegerValue();
        if (v.isNumber()) return v.asDouble();
        if (v.isArray()) {
            List<Object> out = new ArrayList<>();
            for (JsonNode x : v) out.add(plain(x));
            return out;
        }
        if (v.isBoolean()) return v.asBoolean();
        return v.asText();
    }

    /**
     * The checks {@link #create} makes of a new topic (name, partition count, every config key and value, Kafka's
     * '.'/'_' collision), made now with nothing written: CREATE TABLE ... AS SELECT refuses a bad request before its
     * query runs. Returns the configuration as recorded.
     */
    public static Map<String, Object> checkNew(Path root, String topic, int partitions, Map<String, ?> config) {
        checkTopic(topic);
        checkPartitions(topic, partitions);
        Map<String, Object> overrides = TopicConfigRules.requested(config, "config of topic '" + topic + "'");
        checkNoCollision(root, topic);
        return overrides;
    }

    /**
     * Record {@code topic} with {@code partitions} and {@code config} (Kafka's names, validated); the
     * same request again returns the recorded metadata. A topic recorded with another partition count or
     * configuration is refused, naming both (an existing topic keeps its own).
     */
    public static TopicMetadata create(Path root, String topic, int partitions, Map<String, ?> config) {
        return create(root, topic, partitions, config, null);
    }

    /**
     * {@link #create(Path, String, int, Map)} with the topic's metadata as its caller loaded it ({@code recorded};
     * null: loaded here). Only under the topic's writer lock, held since that load: then nothing but a creator that
     * loses the link race below (handled there) can change what it says.
     */
    public static TopicMetadata create(Path root, String topic, int partitions, Map<String, ?> config,
                                       Optional<TopicMetadata> recorded) {
        checkTopic(topic);
        checkPartitions(topic, partitions);
        Map<String, Object> overrides = TopicConfigRules.requested(config, "config of topic '" + topic + "'");
        Optional<TopicMetadata> existing = recorded != null ? recorded : load(root, topic);
        if (existing.isEmpty()) {
            checkNoCollision(root, topic);
            Path path = topicFile(root, topic);
            TopicMetadata meta = new TopicMetadata(topic, partitions, overrides, System.currentTimeMillis(),
                    TopicMetadata.newTopicId());
            Path tmp = AtomicFile.tempSibling(path);
            try {
                boolean shared = GroupShared.createDirectories(path.getParent());
                // false when another creator got there first: read what the winner recorded, below
                if (AtomicFile.publishByLink(path, tmp, meta.toJson().getBytes(StandardCharsets.US_ASCII), shared,
                        "topic metadata " + path + ": cannot publish it")) {
                    return meta;
                }
            } catch (IOException e) {
                throw new StorageException("topic metadata " + path + ": cannot write it: " + e, e);
            }
            existing = load(root, topic);
            if (existing.isEmpty()) {
                throw new InvalidTopicException("topic '" + topic + "': its metadata file " + path + " vanished while creating it");
            }
        }
        checkSame(existing.get(), partitions, overrides);
        return existing.get();
    }

    /** A topic's metadata replaced whole (TopicAdmin, under the topic's writer lock): written under a temporary
     *  name, forced, renamed over the old file; a reader sees the old metadata or the new. */
    static void replace(Path root, TopicMetadata meta) {
        Path path = topicFile(root, meta.name());
        try {
            AtomicFile.write(path, meta.toJson().getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            throw new StorageException("topic metadata " + path + ": cannot write it: " + e, e);
        }
    }

    /**
     * Kafka's rule ({@link TopicLayout#collidingTopic}): a new topic whose name differs from a topic of the root
     * (recorded, or a partition folder) only by '.' against '_' is refused, naming that topic, before anything is
     * written. Two creators racing to create two colliding new names are not serialised here (Kafka's controller is).
     */
    static void checkNoCollision(Path root, String topic) {
        String other = TopicLayout.collidingTopic(topic, TopicLayout.topics(root));
        if (other != null) {
            throw new InvalidTopicException("topic '" + topic + "' collides with existing topic '" + other + "' under '"
                + root + "': '.' and '_' name one metric in Kafka, so a root holds only one of them; nothing was created");
        }
    }

    /** Asking for nothing, or for what the topic has, is no conflict; anything else is, naming both. */
    public static void checkSame(TopicMetadata existing, int partitions, Map<String, Object> overrides) {
        List<String> problems = new ArrayList<>();
        if (existing.partitions() != partitions) {
            problems.add("it has " + existing.partitions() + " partitions, " + partitions + " were asked");
        }
        Map<String, Object> effective = existing.topicConfig();
        Map<String, Object> has = new TreeMap<>();
        Map<String, Object> asked = new TreeMap<>();
        overrides.forEach((k, v) -> {
            if (!sameValue(effective.get(k), v)) {
                has.put(k, effective.get(k));
                asked.put(k, v);
            }
        });
        if (!asked.isEmpty()) problems.add("its configuration is " + has + ", " + asked + " were asked");
        if (!problems.isEmpty()) {
            throw new InvalidTopicException("topic '" + existing.name() + "' already exists and differs: "
                    + String.join("; ", problems) + " (an existing topic keeps its partition count and configuration)");
        }
    }

    private static boolean sameValue(Object a, Object b) {
        if (a instanceof Number && b instanceof Number) return ((Number) a).doubleValue() == ((Number) b).doubleValue();
        return Objects.equals(a, b);
    }

    /**
     * Remove a topic's metadata when nothing was ever committed to it (indexer/topics.py's
     * forget_uncommitted_topic): a creator whose first write was refused leaves no trace, so a corrected
     * request is not refused as a conflict. Returns whether it removed the file.
     */
    public static boolean forgetUncommitted(Path root, String topic) {
        if (CommitLogReader.latest(root, topic).isPresent()) return false;
        try {
            if (!Files.deleteIfExists(topicFile(root, topic))) return false;
            FileSync.directory(topicsDir(root));
            return true;
        } catch (IOException e) {
            throw new StorageException("topic metadata of '" + topic + "': cannot remove it: " + e, e);
        }
    }
}
