package io.seglog.spark.read;

import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.seglog.spark.format.TopicLayout;

/**
 * Which topics and partitions of the log root a read takes, as Spark's Kafka source's consumer strategies:
 * {@code subscribe} (a comma list; {@code topic} is seglog's older spelling of it), {@code subscribePattern}
 * (a Java regex that must match a whole topic name, as Kafka's pattern subscription) or {@code assign}
 * (JSON {@code {"topic": [0, 1]}}). Exactly one is given, as Spark requires.
 *
 * <p>The selection is resolved against the root at every planning ({@link #resolve}): a pattern takes the
 * topics created since, and subscribe the partitions added since, as they do on a broker; assign reads only
 * the partitions it names. A batch read refuses a topic or an assigned partition the root does not have; a
 * stream skips it until it exists (a stream started before its topic waits for it, as subscribe does).
 */
public final class TopicSelection implements Serializable {
    public enum Kind { SUBSCRIBE, PATTERN, ASSIGN }

    /** The options of the group, lower-cased key -> the spelling messages use. */
    static final Map<String, String> OPTIONS = new LinkedHashMap<>();
    static {
        OPTIONS.put("topic", "topic");
        OPTIONS.put("subscribe", "subscribe");
        OPTIONS.put("subscribepattern", "subscribePattern");
        OPTIONS.put("assign", "assign");
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ASSIGN_EXAMPLE = "{\"events\": [0, 1], \"other\": [0]}";

    public final Kind kind;
    public final String option;                       // the option given (its user spelling)
    private final List<String> topics;                // SUBSCRIBE
    private final Pattern pattern;                    // PATTERN
    private final Map<String, List<Integer>> assigned; // ASSIGN: topic -> sorted partitions

    private TopicSelection(Kind kind, String option, List<String> topics, Pattern pattern,
                           Map<String, List<Integer>> assigned) {
        this.kind = kind;
        this.option = option;
        this.topics = topics;
        this.pattern = pattern;
        this.assigned = assigned;
    }

    /** From the options (lower-cased keys); refuses none or several of the group, and a bad value, naming it. */
    static TopicSelection parse(Map<String, String> o) {
        List<String> given = new ArrayList<>();
        for (Map.Entry<String, String> e : OPTIONS.entrySet()) if (o.containsKey(e.getKey())) given.add(e.getValue());
        if (given.size() > 1) {
            throw new SeglogConfigException("seglog source: give exactly one of 'subscribe' (or 'topic'), "
                + "'subscribePattern' and 'assign', as Spark's Kafka source requires; given: " + String.join(", ", given));
        }
        if (given.isEmpty()) {
            throw new SeglogConfigException("seglog source: option 'topic' is required: a topic name or a "
                + "comma-separated list of topics, e.g. .option('topic', 'events') (or 'subscribePattern', a Java regex "
                + "over the topics of the root, or 'assign', JSON such as " + ASSIGN_EXAMPLE + ")");
        }
        String option = given.get(0);
        String raw = o.get(option.toLowerCase(java.util.Locale.ROOT));
        switch (option) {
            case "subscribePattern":
                return new TopicSelection(Kind.PATTERN, option, List.of(), parsePattern(raw), Map.of());
            case "assign":
                return new TopicSelection(Kind.ASSIGN, option, List.of(), null, parseAssign(raw));
            default:
                return new TopicSelection(Kind.SUBSCRIBE, option, parseTopics(option, raw), null, Map.of());
        }
    }

    private static List<String> parseTopics(String option, String raw) {
        if (raw == null || raw.isBlank()) {
            throw ReadOptions.bad(option, raw, "a topic name or a comma-separated list of topic names");
        }
        List<String> out = new ArrayList<>();
        for (String part : raw.split(",", -1)) {
            String name = part.trim();
            if (name.isEmpty()) {
                throw ReadOptions.bad(option, raw, "a topic name or a comma-separated list of topic names, without empty entries");
            }
            checkTopicName(option, name);
            if (!out.contains(name)) out.add(name);
        }
        return List.copyOf(out);
    }

    private static void checkTopicName(String option, String name) {
        if (!TopicLayout.validTopic(name)) {
            throw new SeglogConfigException("seglog source: option '" + option + "': invalid topic name '" + name
                + "': a topic is 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'");
        }
    }

    private static Pattern parsePattern(String raw) {
        if (raw == null || raw.trim().isEmpty()) {
            throw ReadOptions.bad("subscribePattern", raw, "a non-empty Java regular expression over topic names, e.g. 'events-.*'");
        }
        try {
            return Pattern.compile(raw.trim());
        } catch (PatternSyntaxException e) {
            throw ReadOptions.bad("subscribePattern", raw, "a Java regular expression (" + e.getDescription()
                + " near index " + e.getIndex() + ")");
        }
    }

    private static Map<String, List<Integer>> parseAssign(String raw) {
        String allowed = "JSON object of topic -> [partition, ...], e.g. " + ASSIGN_EXAMPLE;
        JsonNode doc;
        try {
            doc = raw == null ? null : JSON.readTree(raw.trim());
        } catch (Exception e) {
            throw ReadOptions.bad("assign", raw, "a " + allowed);
        }
        if (doc == null || !doc.isObject() || doc.isEmpty()) throw ReadOptions.bad("assign", raw, "a non-empty " + allowed);
        Map<String, List<Integer>> out = new TreeMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = doc.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> t = it.next();
            checkTopicName("assign", t.getKey());
            JsonNode parts = t.getValue();
            if (!parts.isArray() || parts.isEmpty()) {
                throw ReadOptions.bad("assign", raw, "for topic '" + t.getKey() + "' a non-empty list of partitions, e.g. " + ASSIGN_EXAMPLE);
            }
            TreeSet<Integer> ps = new TreeSet<>();
            for (JsonNode p : parts) {
                if (!p.isIntegralNumber() || !p.canConvertToInt() || p.asInt() < 0) {
                    throw ReadOptions.bad("assign", raw, "partitions are integers >= 0; got " + p + " for topic '" + t.getKey() + "'");
                }
                ps.add(p.asInt());
            }
            out.put(t.getKey(), List.copyOf(ps));
        }
        return out;
    }

    /** Whether a topic can be among those read: an offsets JSON naming any other topic is refused when parsed. */
    boolean mayRead(String topic) {
        switch (kind) {
            case PATTERN: return pattern.matcher(topic).matches();
            case ASSIGN: return assigned.containsKey(topic);
            default: return topics.contains(topic);
        }
    }

    /** Whether a partition can be read: assign reads only the partitions it names. */
    boolean mayRead(String topic, int partition) {
        return kind != Kind.ASSIGN ? mayRead(topic) : assigned.getOrDefault(topic, List.of()).contains(partition);
    }

    /**
     * Topic -> partitions read now. {@code missingIsError}: a topic (subscribe, assign) or an assigned partition
     * the root does not have is refused (a batch read); else it is left out until it exists (a stream). A pattern
     * matching no topic selects nothing.
     */
    Map<String, List<Integer>> resolve(Path root, String rootName, boolean missingIsError) {
        if (!Files.isDirectory(root)) {
            throw new NoSuchTopicException("seglog source: log root '" + rootName + "' does not exist or is not a folder");
        }
        if (kind == Kind.PATTERN) return TopicLayout.partitionsOf(root, t -> pattern.matcher(t).matches());
        Map<String, List<Integer>> out = new LinkedHashMap<>();
        for (String topic : kind == Kind.ASSIGN ? new ArrayList<>(assigned.keySet()) : topics) {
            List<Integer> parts = TopicLayout.partitions(root, topic);
            if (parts.isEmpty()) {
                if (missingIsError) {
                    List<String> there = TopicLayout.topics(root);
                    throw new NoSuchTopicException("seglog source: topic '" + topic + "' not found under '" + rootName
                        + "' (topics there: " + (there.isEmpty() ? "none" : String.join(", ", there)) + ")");
                }
                continue;
            }
            if (kind == Kind.ASSIGN) {
                List<Integer> want = assigned.get(topic);
                List<String> absent = new ArrayList<>();
                for (int p : want) if (!parts.contains(p)) absent.add(topic + "-" + p);
                if (!absent.isEmpty() && missingIsError) {
                    throw new NoSuchTopicException("seglog source: option 'assign' names partitions that topic '" + topic
                        + "' does not have: " + String.join(", ", absent) + " (partitions: " + joined(parts) + ")");
                }
                List<Integer> kept = new ArrayList<>();
                for (int p : want) if (parts.contains(p)) kept.add(p);
                if (kept.isEmpty()) continue;
                parts = kept;
            }
            out.put(topic, parts);
        }
        return out;
    }

    private static String joined(List<Integer> parts) {
        List<String> s = new ArrayList<>();
        for (int p : parts) s.add(String.valueOf(p));
        return String.join(", ", s);
    }

    /** For messages and plan descriptions: the topics, the pattern or the assignment. */
    public String describe() {
        switch (kind) {
            case PATTERN: return "pattern '" + pattern.pattern() + "'";
            case ASSIGN: return "assign " + assigned;
            default: return String.join(",", topics);
        }
    }

    @Override
    public String toString() {
        return describe();
    }
}
