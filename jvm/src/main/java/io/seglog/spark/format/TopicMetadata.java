package io.seglog.spark.format;

import java.util.Map;
import java.util.TreeMap;

/**
 * A topic's recorded metadata, {@code <root>/_seglog/topics/<topic>.json} (indexer/topics.py): its
 * partition count and every configuration key its creator asked for, fixed once written.
 *
 * @param config the recorded overrides by Kafka's names (Long, Double, String or null values)
 */
public final class TopicMetadata {
    private final String name;
    private final int partitions;
    private final Map<String, Object> config;
    private final long createdMs;

    public TopicMetadata(String name, int partitions, Map<String, Object> config, long createdMs) {
        config = java.util.Collections.unmodifiableMap(new TreeMap<>(config));
        this.name = name;
        this.partitions = partitions;
        this.config = config;
        this.createdMs = createdMs;
    }

    public String name() { return name; }
    public int partitions() { return partitions; }
    public Map<String, Object> config() { return config; }
    public long createdMs() { return createdMs; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof TopicMetadata)) return false;
        TopicMetadata that = (TopicMetadata) o;
        return java.util.Objects.equals(name, that.name)
                && partitions == that.partitions
                && java.util.Objects.equals(config, that.config)
                && createdMs == that.createdMs;
    }

    @Override public int hashCode() { return java.util.Objects.hash(name, partitions, config, createdMs); }

    @Override public String toString() { return "TopicMetadata[name=" + name + ", partitions=" + partitions + ", config=" + config + ", createdMs=" + createdMs + "]"; }

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
        out.append(",\n \"partitions\": ").append(partitions).append(",\n \"version\": ").append(FormatVersion.TOPIC_METADATA).append("\n}");
        return out.toString();
    }

    private static String jsonValue(Object v) {
        if (v == null) return "null";
        if (v instanceof String) return PythonJson.string((String) v);
        if (v instanceof Double) return PythonJson.number((Double) v);
        return v.toString();
    }
}
