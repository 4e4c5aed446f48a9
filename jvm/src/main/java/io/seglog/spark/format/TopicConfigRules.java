package io.seglog.spark.format;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Topic configuration by Kafka's names, validated as the Python core's conf/topic_config.py validates
 * it: the same keys, bounds, choices, aliases and canonical forms, so a topic the JVM creates is one the
 * Python core (sidecar, tools) accepts, and a value one side refuses the other refuses too
 * (tests/sink/test_jvm_formats.py runs one corpus of keys and values through both). The defaults are
 * read from the same file, conf/topic.yaml, which the build copies into the jar.
 *
 * <p>Values: {@code Long} for integer keys, {@code Double} for number keys, {@code String} (or null where
 * nullable) for the rest. Text is accepted for numbers (Spark options are text), as the Python core does.
 */
public final class TopicConfigRules {
    enum Kind { INT, FLOAT, BOOL, STR }

    static final class Rule {
        private final Kind kind;
        private final Number low;
        private final Number high;
        private final List<String> choices;
        private final boolean nullable;
        private final boolean policyList;

        Rule(Kind kind, Number low, Number high, List<String> choices, boolean nullable, boolean policyList) {
            this.kind = kind;
            this.low = low;
            this.high = high;
            this.choices = choices;
            this.nullable = nullable;
            this.policyList = policyList;
        }

        public Kind kind() { return kind; }
        public Number low() { return low; }
        public Number high() { return high; }
        public List<String> choices() { return choices; }
        public boolean nullable() { return nullable; }
        public boolean policyList() { return policyList; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Rule)) return false;
            Rule that = (Rule) o;
            return java.util.Objects.equals(kind, that.kind)
                    && java.util.Objects.equals(low, that.low)
                    && java.util.Objects.equals(high, that.high)
                    && java.util.Objects.equals(choices, that.choices)
                    && nullable == that.nullable
                    && policyList == that.policyList;
        }

        @Override public int hashCode() { return java.util.Objects.hash(kind, low, high, choices, nullable, policyList); }

        @Override public String toString() { return "Rule[kind=" + kind + ", low=" + low + ", high=" + high + ", choices=" + choices + ", nullable=" + nullable + ", policyList=" + policyList + "]"; }

        String describe() {
            if (!choices.isEmpty()) return "one of " + String.join(", ", choices);
            if (kind == Kind.INT) return "an integer from " + low + " to " + high;
            if (kind == Kind.FLOAT) return "a number from " + low + " to " + high;
            if (kind == Kind.BOOL) return "true or false";
            return "a string" + (nullable ? " or null" : "");
        }
    
    }

    // Number text as the Python core takes it ("--4096" or "4e3" is no integer), and conf/topic.yaml's
    // lines (flat `key: value  # comment`; values are YAML plain scalars: an integer, a number, null or
    // a bare word). Declared first: the defaults are loaded while the class initialises.
    private static final Pattern INT_TEXT = Pattern.compile("[-+]?[0-9]+");
    private static final Pattern FLOAT_TEXT = Pattern.compile("[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?");
    private static final Pattern YAML_LINE = Pattern.compile("([a-z.]+):\\s*(\\S+)\\s*(#.*)?");
    private static final long INT32_MAX = Integer.MAX_VALUE;
    private static final long INT64_MAX = Long.MAX_VALUE;
    public static final String TIMESTAMP_BEFORE = "message.timestamp.before.max.ms";
    public static final String TIMESTAMP_AFTER = "message.timestamp.after.max.ms";
    /** Older names of the two timestamp bounds: an alias sets both; an explicit new name wins. */
    public static final Map<String, List<String>> ALIASES = Map.of(
            "message.timestamp.difference.max.ms", List.of(TIMESTAMP_BEFORE, TIMESTAMP_AFTER),
            "max.message.time.difference.ms", List.of(TIMESTAMP_BEFORE, TIMESTAMP_AFTER));
    static final List<String> COMPRESSION_TYPES = List.of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd");

    /** Every key seglog understands (conf/topic_config.py's RULES, the same bounds). */
    static final Map<String, Rule> RULES;

    static {
        Map<String, Rule> r = new LinkedHashMap<>();
        r.put("segment.bytes", intRule(1024, INT32_MAX));
        r.put("segment.ms", intRule(1, INT64_MAX));
        r.put("segment.index.bytes", intRule(24, INT32_MAX));
        r.put("index.interval.bytes", intRule(0, INT32_MAX));
        r.put("retention.ms", intRule(-1, INT64_MAX));
        r.put("retention.bytes", intRule(-1, INT64_MAX));
        r.put("message.timestamp.type", strRule(List.of("CreateTime", "LogAppendTime"), false, false));
        r.put(TIMESTAMP_BEFORE, intRule(0, INT64_MAX));
        r.put(TIMESTAMP_AFTER, intRule(0, INT64_MAX));
        r.put("message.timestamp.out.of.range.policy", strRule(List.of("fail", "quarantine"), false, false));
        r.put("quarantine.topic", strRule(List.of(), true, false));
        r.put("max.message.bytes", intRule(0, INT32_MAX));
        r.put("file.delete.delay.ms", intRule(0, INT64_MAX));
        r.put("cleanup.policy", strRule(List.of("delete", "compact", "compact,delete"), false, true));
        r.put("min.cleanable.dirty.ratio", new Rule(Kind.FLOAT, 0.0, 1.0, List.of(), false, false));
        r.put("min.compaction.lag.ms", intRule(0, INT64_MAX));
        r.put("max.compaction.lag.ms", intRule(1, INT64_MAX));
        r.put("delete.retention.ms", intRule(0, INT64_MAX));
        r.put("compression.type", strRule(COMPRESSION_TYPES, false, false));
        // Tiered storage (docs/tiered-storage.md §1), Kafka's names: -2 is "the same as retention.*".
        r.put("remote.storage.enable", new Rule(Kind.BOOL, null, null, List.of(), false, false));
        r.put("local.retention.ms", intRule(-2, INT64_MAX));
        r.put("local.retention.bytes", intRule(-2, INT64_MAX));
        r.put("remote.log.delete.on.disable", new Rule(Kind.BOOL, null, null, List.of(), false, false));
        r.put("segment.merge.small.bytes", intRule(-1, INT32_MAX));
        RULES = Collections.unmodifiableMap(r);
    }

    /** conf/topic.yaml, validated: the built-in default of every key. */
    public static final Map<String, Object> DEFAULTS = loadDefaults();

    private TopicConfigRules() {}

    private static Rule intRule(long low, long high) {
        return new Rule(Kind.INT, low, high, List.of(), false, false);
    }

    private static Rule strRule(List<String> choices, boolean nullable, boolean policyList) {
        return new Rule(Kind.STR, null, null, choices, nullable, policyList);
    }

    /** Every key, aliases included. */
    public static java.util.Set<String> keys() {
        java.util.Set<String> all = new java.util.TreeSet<>(RULES.keySet());
        all.addAll(ALIASES.keySet());
        return all;
    }

    public static boolean isKey(String key) {
        return RULES.containsKey(key) || ALIASES.containsKey(key);
    }

    /**
     * The validated value of every key asked for, by Kafka's name (an alias gives the keys it sets),
     * even one equal to its default: what a topic's metadata records (conf/topic_config.py's
     * requested_topic_config; a recorded key always wins over the sidecar's defaults, docs/spec.md §5).
     */
    public static Map<String, Object> requested(Map<String, ?> config, String where) {
        Map<String, Object> all = validate(config, DEFAULTS, where);
        Map<String, Object> out = new TreeMap<>();
        for (String key : config.keySet()) {
            for (String target : ALIASES.getOrDefault(key, List.of(key))) out.put(target, all.get(target));
        }
        return out;
    }

    /** {@code base} (or the defaults) updated with {@code overrides}, every override checked. */
    public static Map<String, Object> validate(Map<String, ?> overrides, Map<String, Object> base, String where) {
        Map<String, Object> values = new LinkedHashMap<>(base == null ? DEFAULTS : base);
        List<String> keys = new ArrayList<>(overrides.keySet());
        // aliases first, so that an explicit new name in the same mapping wins (as in Kafka)
        keys.sort((a, b) -> Boolean.compare(!ALIASES.containsKey(a), !ALIASES.containsKey(b)));
        for (String key : keys) {
            Object value = overrides.get(key);
            for (String target : ALIASES.getOrDefault(key, List.of(key))) {
                values.put(target, check(target, value, target.equals(key) ? where : where + " ('" + key + "' sets it)"));
            }
        }
        if ("quarantine".equals(values.get("message.timestamp.out.of.range.policy")) && isEmpty(values.get("quarantine.topic"))) {
            throw new TopicConfigException(where + ": 'message.timestamp.out.of.range.policy' = 'quarantine' needs "
                    + "'quarantine.topic' to name the topic that receives refused records");
        }
        checkTiering(values, where);
        return values;
    }

    /**
     * Kafka's LogConfig rules for tiered storage (conf/topic_config.py's _check_tiering, the same words):
     * the local tier never keeps more than the whole log; a compacted topic is never tiered.
     */
    static void checkTiering(Map<String, Object> values, String where) {
        for (String kind : List.of("ms", "bytes")) {
            String local = "local.retention." + kind;
            String total = "retention." + kind;
            long lv = ((Number) values.get(local)).longValue();
            long tv = ((Number) values.get(total)).longValue();
            if (tv == -1 || lv == -2) continue;
            if (lv == -1) {
                throw new TopicConfigException(where + ": '" + local + "' = -1 (keep forever) while '" + total + "' = " + tv
                        + ": the local tier cannot keep more than the whole log; allowed: -2 (the same as '" + total + "') or 0 to " + tv);
            }
            if (lv > tv) {
                throw new TopicConfigException(where + ": '" + local + "' = " + lv + " is above '" + total + "' = " + tv
                        + ": the local tier cannot keep more than the whole log; allowed: -2 (the same as '" + total + "') or 0 to " + tv);
            }
        }
        String policy = String.valueOf(values.get("cleanup.policy"));
        if (Boolean.TRUE.equals(values.get("remote.storage.enable")) && List.of(policy.split(",")).contains("compact")) {
            throw new TopicConfigException(where + ": 'remote.storage.enable' = true with 'cleanup.policy' = '" + policy
                    + "': tiered storage is refused on compacted topics (as Kafka refuses it): a tiered segment never changes, a compacted one does");
        }
    }

    /** remote.storage.enable of a validated configuration. */
    public static boolean tiered(Map<String, Object> values) {
        return Boolean.TRUE.equals(values.get("remote.storage.enable"));
    }

    private static boolean isEmpty(Object v) {
        return v == null || (v instanceof String && ((String) v).isEmpty());
    }


    static Object check(String key, Object value, String where) {
        Rule rule = RULES.get(key);
        if (rule == null) {
            throw new TopicConfigException(where + ": unknown configuration key '" + key + "'" + nearest(key)
                    + "; known keys: " + String.join(", ", new TreeMap<>(RULES).keySet()));
        }
        if (value == null && rule.nullable) return null;
        if (rule.policyList) value = policyList(value);
        switch (rule.kind) {
            case FLOAT: {
                Double d = asDouble(value);
                if (d == null || d.isNaN()) {
                    throw new TopicConfigException(where + ": '" + key + "' = " + show(value) + " is not a number; allowed: " + rule.describe());
                }
                if (d < rule.low.doubleValue() || d > rule.high.doubleValue()) {
                    throw new TopicConfigException(where + ": '" + key + "' = " + d + " is out of range; allowed: " + rule.describe());
                }
                return d;
            }
            case BOOL: {
                Boolean b = asBoolean(value);
                if (b == null) {
                    throw new TopicConfigException(where + ": '" + key + "' = " + show(value) + " is not a boolean; allowed: " + rule.describe());
                }
                return b;
            }
            case INT: {
                BigInteger i = asInteger(value);
                if (i == null) {
                    throw new TopicConfigException(where + ": '" + key + "' = " + show(value) + " is not an integer; allowed: " + rule.describe());
                }
                if (i.compareTo(BigInteger.valueOf(rule.low.longValue())) < 0 || i.compareTo(BigInteger.valueOf(rule.high.longValue())) > 0) {
                    throw new TopicConfigException(where + ": '" + key + "' = " + i + " is out of range; allowed: " + rule.describe());
                }
                return i.longValue();
            }
            default: {
                if (!(value instanceof String)) {
                    throw new TopicConfigException(where + ": '" + key + "' = " + show(value) + " is not a string; allowed: " + rule.describe());
                }
                String s = (String) value;
                if (!rule.choices.isEmpty() && !rule.choices.contains(s)) {
                    String hint = key.equals("compression.type") && s.equals("none")
                            ? " ('none' is the producer's name; a topic says 'uncompressed')" : "";
                    throw new TopicConfigException(where + ": '" + key + "' = " + show(value) + " is not allowed; allowed: " + rule.describe() + hint);
                }
                return s;
            }
        }
    }

    /** Kafka's cleanup.policy is a list; canonical form: deduplicated, Kafka's order, comma-joined. */
    private static Object policyList(Object value) {
        List<String> items = new ArrayList<>();
        if (value instanceof List<?>) {
            for (Object o : (List<?>) value) items.add(String.valueOf(o));
        } else if (value instanceof String) {
            items.addAll(List.of(((String) value).split(",", -1)));
        } else {
            return value;
        }
        Set<String> names = new LinkedHashSet<>();
        for (String n : items) {
            String t = n.strip();
            if (t.isEmpty() || !(t.equals("delete") || t.equals("compact"))) {
                return value instanceof String ? value : String.join(",", items);
            }
            names.add(t);
        }
        if (names.isEmpty()) return value;
        List<String> out = new ArrayList<>();
        for (String p : List.of("compact", "delete")) if (names.contains(p)) out.add(p);
        return String.join(",", out);
    }

    /** true/false in any case, spaces around (as Kafka's ConfigDef parses booleans); else null. */
    private static Boolean asBoolean(Object value) {
        if (value instanceof Boolean) return (Boolean) value;
        if (value instanceof String) {
            String t = ((String) value).strip().toLowerCase(java.util.Locale.ROOT);
            if (t.equals("true")) return Boolean.TRUE;
            if (t.equals("false")) return Boolean.FALSE;
        }
        return null;
    }

    private static BigInteger asInteger(Object value) {
        if (value instanceof Long || value instanceof Integer) return BigInteger.valueOf(((Number) value).longValue());
        if (value instanceof BigInteger) return (BigInteger) value;
        if (value instanceof String && INT_TEXT.matcher(((String) value).strip()).matches()) return new BigInteger(((String) value).strip());
        return null;   // booleans and floats would hide a mistake
    }

    private static Double asDouble(Object value) {
        if (value instanceof Double || value instanceof Float || value instanceof Long || value instanceof Integer) {
            return ((Number) value).doubleValue();
        }
        if (value instanceof String) {
            String t = ((String) value).strip();
            if (FLOAT_TEXT.matcher(t).matches()) return Double.parseDouble(t);
            String l = t.toLowerCase(java.util.Locale.ROOT).replaceFirst("^[-+]", "");
            if (l.equals("inf") || l.equals("infinity")) return t.startsWith("-") ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
            if (l.equals("nan")) return Double.NaN;
        }
        return null;
    }

    private static String show(Object v) {
        return v instanceof String ? PythonJson.string((String) v).replace('"', '\'') : String.valueOf(v);
    }

    /** " (did you mean 'k'?)" for a key within a few edits of a known one. */
    private static String nearest(String key) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        List<String> known = new ArrayList<>(RULES.keySet());
        known.addAll(ALIASES.keySet());
        for (String k : known) {
            int d = distance(key, k);
            if (d < bestDistance) {
                bestDistance = d;
                best = k;
            }
        }
        return best != null && bestDistance <= Math.max(2, key.length() / 4) ? " (did you mean '" + best + "'?)" : "";
    }

    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) prev[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }


    private static Map<String, Object> loadDefaults() {
        Map<String, Object> raw = new LinkedHashMap<>();
        try (InputStream in = TopicConfigRules.class.getResourceAsStream("topic.yaml")) {
            if (in == null) throw new IllegalStateException("topic.yaml is missing from the connector jar (jvm/pom.xml copies conf/topic.yaml)");
            BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            while ((line = r.readLine()) != null) {
                String t = line.strip();
                if (t.isEmpty() || t.startsWith("#")) continue;
                Matcher m = YAML_LINE.matcher(t);
                if (!m.matches()) throw new IllegalStateException("topic.yaml: a line the JVM cannot read: " + line);
                String v = m.group(2);
                raw.put(m.group(1), v.equals("null") ? null : INT_TEXT.matcher(v).matches() ? (Object) Long.valueOf(v)
                        : FLOAT_TEXT.matcher(v).matches() ? (Object) Double.valueOf(v) : v);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot read topic.yaml from the connector jar: " + e, e);
        }
        if (!raw.keySet().equals(RULES.keySet())) {
            throw new IllegalStateException("conf/topic.yaml is out of step with the JVM's rules: " + raw.keySet() + " vs " + RULES.keySet());
        }
        Map<String, Object> out = new LinkedHashMap<>();
        raw.forEach((k, v) -> out.put(k, check(k, v, "conf/topic.yaml")));
        return Collections.unmodifiableMap(out);
    }
}
