package io.seglog.spark.format;

import java.util.Map;
import java.util.TreeMap;

/**
 * A topic's recorded metadata, {@code <root>/_seglog/topics/<topic>.json} (indexer/topics.py): its
 * partition count and every configuration key its creator asked for, fixed once written, and its topic id.
 *
 * <p>The topic id (Kafka's topic ID, KIP-516) is a random UUID drawn when the topic is created and kept by every
 * change to the file (ALTER): a topic dropped and created again under its name gets another, so a stream's
 * checkpointed offsets of the old topic are never taken for the new one's (docs/spec.md §8). A file written before
 * topic ids has none ({@code null}): nothing is compared for it.
 *
 * @param config the recorded overrides by Kafka's names (Long, Double, String or null values)
 */
public final class TopicMetadata {
    private final String name;
    private final int partitions;
    private final Map<String, Object> config;
    private final long createdMs;
    private final String topicId;   // null: recorded before topic ids

    public TopicMetadata(String name, int partitions, Map<String, Object> config, long createdMs) {
        this(name, partitions, config, createdMs, null);
    }

    public TopicMetadata(String name, int partitions, Map<String, Object> config, long createdMs, String topicId) {
        config = java.util.Collections.unmodifiableMap(new TreeMap<>(config));
        this.name = name;
        this.partitions = partitions;
        this.config = config;
        this.createdMs = createdMs;
        this.topicId = topicId;
    }

    /** A new topic's id: a random UUID, as indexer/topics.py's new_topic_id. */
    public static String newTopicId() {
        return java.util.UUID.randomUUID().toString();
    }

    /** Whether {@code id} is a topic id as recorded: a UUID in its canonical lower-case text. */
    public static boolean validTopicId(String id) {
        return id != null && id.matches("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    }

    public String name() { return name; }
    public int partitions() { return partitions; }
    public Map<String, Object> config() { return config; }
    public long createdMs() { return createdMs; }
    /** The topic's id, or null for a topic recorded before topic ids. */
    public String topicId() { return topicId; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof TopicMetadata)) return false;
        TopicMetadata that = (TopicMetadata) o;
        return java.util.Objects.equals(name, that.name)
                && partitions == that.partitions
                && java.util.Objects.equals(config, that.config)
                && createdMs == that.createdMs
                && java.util.Objects.equals(topicId, that.topicId);
    }

    @Override public int hashCode() { return java.util.Objects.hash(name, partitions, config, createdMs, topicId); }

    @Override public String toString() { return "TopicMetadata[name=" + name + ", partitions=" + partitions + ", config=" + config + ", createdMs=" + createdMs + ", topicId=" + topicId + "]"; }

    /** The defaults with this topic's overrides applied, validated. */
    public Map<String, Object> topicConfig() {
        return TopicConfigRules.validate(config, null, "topic '" + name + "'");
    }

    /** The file's text, as the Python core writes it ({@code json.dumps(..., sort_keys=True, indent=1)}). */
    public String toJson() {
        StringBuilder out = new StringBuilder("{\n \"config\": ");
        if (config.isEmpty()) {
            out.append("{}");
        } else {
            out.append("{\n");
            boolean first = true;
            for (Map.Entry<String, Object> e : config.entrySet()) {
                if (!first) out.append(",\n");
                first = false;
                out.append("  ");
                PythonJson.string(out, e.getKey());
                out.append(": ").append(jsonValue(e.getValue()));
            }
            out.append("\n }");
        }
        out.append(",\n \"created_ms\": ").append(createdMs).append(",\n \"name\": ");
        PythonJson.string(out, name);
        out.append(",\n \"partitions\": ").append(partitions);
        if (topicId != null) out.append(",\n \"topic_id\": ").append(PythonJson.string(topicId));
        out.append(",\n \"version\": ").append(FormatVersion.TOPIC_METADATA).append("\n}");
        return out.toString();
    }

    private static String jsonValue(Object v) {
        if (v == null) return "null";
        if (v instanceof String) return PythonJson.string((String) v);
        if (v instanceof Double) return PythonJson.number((Double) v);
        return v.toString();
    }
}
