package io.seglog.spark.read;

import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * A streaming position: the next offset to read of every topic-partition, checkpointed as JSON in the
 * shape of Spark's Kafka source ({@code KafkaSourceOffset}): {@code {"events":{"0":23,"1":45}}}, plus the topic id
 * of each topic whose metadata records one (Kafka's topic IDs) under {@value #IDS}, a key no topic can have ('@' is
 * not in a topic name): {@code {"@topicIds":{"events":"0f8fad5b-..."},"events":{"0":23,"1":45}}}. The id tells the
 * offsets of a topic from those of a topic created again under its name (docs/spec.md §8); a checkpoint written
 * before topic ids has none, and nothing is compared for it.
 */
public final class SeglogSourceOffset extends Offset {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String IDS = "@topicIds";

    /** topic -> partition -> next offset; sorted, so equal positions have equal JSON. */
    final TreeMap<String, TreeMap<Integer, Long>> offsets;
    /** topic -> topic id, for the topics whose metadata records one; sorted too. */
    final TreeMap<String, String> topicIds;

    SeglogSourceOffset(Map<String, ? extends Map<Integer, Long>> offsets) {
        this(offsets, Map.of());
    }

    SeglogSourceOffset(Map<String, ? extends Map<Integer, Long>> offsets, Map<String, String> topicIds) {
        this.offsets = new TreeMap<>();
        for (Map.Entry<String, ? extends Map<Integer, Long>> e : offsets.entrySet()) {
            this.offsets.put(e.getKey(), new TreeMap<>(e.getValue()));
        }
        this.topicIds = new TreeMap<>();
        for (Map.Entry<String, String> e : topicIds.entrySet()) {
            if (this.offsets.containsKey(e.getKey()) && e.getValue() != null) this.topicIds.put(e.getKey(), e.getValue());
        }
    }

    /** The topic id these offsets of {@code topic} were taken under, or null when not known. */
    String topicId(String topic) {
        return topicIds.get(topic);
    }

    /** Whether {@code topic}'s offsets here and in {@code other} are known to be of two topics of one name: both
     *  carry a topic id and the ids differ (the topic was deleted and created again in between). */
    boolean recreated(String topic, SeglogSourceOffset other) {
        String mine = topicId(topic), theirs = other.topicId(topic);
        return mine != null && theirs != null && !mine.equals(theirs);
    }

    long get(String topic, int partition, long dflt) {
        Map<Integer, Long> m = offsets.get(topic);
        Long v = m == null ? null : m.get(partition);
        return v == null ? dflt : v;
    }

    boolean has(String topic, int partition) {
        Map<Integer, Long> m = offsets.get(topic);
        return m != null && m.containsKey(partition);
    }

    @Override
    public String json() {
        ObjectNode root = JSON.createObjectNode();
        if (!topicIds.isEmpty()) {
            ObjectNode ids = root.putObject(IDS);
            for (Map.Entry<String, String> e : topicIds.entrySet()) ids.put(e.getKey(), e.getValue());
        }
        for (Map.Entry<String, TreeMap<Integer, Long>> t : offsets.entrySet()) {
            ObjectNode parts = root.putObject(t.getKey());
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) parts.put(String.valueOf(p.getKey()), p.getValue());
        }
        return root.toString();
    }

    /** The position any offset Spark hands the stream stands for: Spark passes one read back from the offset log as
     *  its generic {@code SerializedOffset} in some calls (the progress report's {@code metrics} of a batch re-run
     *  after a restart), so a cast failed the query; as Spark's {@code KafkaSourceOffset.apply}, read its JSON. */
    static SeglogSourceOffset of(Offset offset) {
        return offset instanceof SeglogSourceOffset ? (SeglogSourceOffset) offset : fromJson(offset.json());
    }

    /**
     * Reads a checkpointed offset. Only Kafka's shape is taken: an object of topics, each an object of
     * partition (a non-negative integer key) to offset (an integral JSON number that fits a long).
     * Anything else is refused naming it (never read as offset 0: a stream would start over).
     */
    static SeglogSourceOffset fromJson(String json) {
        JsonNode doc;
        try {
            doc = JSON.readTree(json);
        } catch (Exception e) {
            throw bad(json, "not JSON (" + e.getMessage() + ")", e);
        }
        if (doc == null || !doc.isObject()) throw bad(json, "not a JSON object of topic -> {partition: offset} offsets", null);
        TreeMap<String, TreeMap<Integer, Long>> out = new TreeMap<>();
        TreeMap<String, String> ids = new TreeMap<>();
        Iterator<Map.Entry<String, JsonNode>> topics = doc.fields();
        while (topics.hasNext()) {
            Map.Entry<String, JsonNode> t = topics.next();
            if (t.getKey().equals(IDS)) {
                if (!t.getValue().isObject()) throw bad(json, IDS + " holds " + t.getValue() + ", not an object of topic -> topic id", null);
                Iterator<Map.Entry<String, JsonNode>> it = t.getValue().fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> i = it.next();
                    if (!i.getValue().isTextual() || !io.seglog.spark.format.TopicMetadata.validTopicId(i.getValue().asText())) {
                        throw bad(json, "the topic id of '" + i.getKey() + "' is " + i.getValue() + ", not a UUID", null);
                    }
                    ids.put(i.getKey(), i.getValue().asText());
                }
                continue;
            }
            if (!t.getValue().isObject()) {
                throw bad(json, "topic '" + t.getKey() + "' holds " + t.getValue() + ", not an object of partition -> offset", null);
            }
            TreeMap<Integer, Long> parts = new TreeMap<>();
            Iterator<Map.Entry<String, JsonNode>> ps = t.getValue().fields();
            while (ps.hasNext()) {
                Map.Entry<String, JsonNode> p = ps.next();
                int partition = partition(json, t.getKey(), p.getKey());
                JsonNode v = p.getValue();
                if (!v.isIntegralNumber() || !v.canConvertToLong()) {
                    throw bad(json, "the offset of " + t.getKey() + "-" + partition + " is " + v + ", not an integer offset", null);
                }
                parts.put(partition, v.longValue());
            }
            out.put(t.getKey(), parts);
        }
        for (String topic : ids.keySet()) {
            if (!out.containsKey(topic)) throw bad(json, "a topic id is given for '" + topic + "', which has no offsets", null);
        }
        return new SeglogSourceOffset(out, ids);
    }

    private static int partition(String json, String topic, String key) {
        try {
            if (key.matches("\\d+")) return Integer.parseInt(key);
        } catch (NumberFormatException e) {
            // past an int: not a partition
        }
        throw bad(json, "topic '" + topic + "' names partition '" + key + "', not a partition number", null);
    }

    private static IllegalArgumentException bad(String json, String why, Throwable cause) {
        return new IllegalArgumentException("seglog source: checkpointed offsets are not readable: " + why + ": " + json, cause);
    }
}
