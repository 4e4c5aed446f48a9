package io.seglog.spark.read;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongPredicate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.common.TopicPartition;

import io.seglog.spark.format.TopicLayout;

/**
 * The seglog source's options, parsed once, case-insensitively, at the edge (docs/spec.md §8). Names and
 * meanings are those of Spark's Kafka source ({@code KafkaSourceProvider} is the model); every refusal
 * names the option, the value and what is allowed. Precedence as there: for the start
 * {@code startingTimestamp} over {@code startingOffsetsByTimestamp} over {@code startingOffsets}; for
 * the end likewise. The other start options are still checked, so a typo is never silently ignored.
 * The topics are exactly one of subscribe / subscribePattern / assign ({@link TopicSelection}); the
 * options only a broker gives meaning ({@code kafka.*} but the isolation level, {@link #BROKER_ONLY}) are
 * refused with {@link BrokerOptionException}; every other unknown key is refused naming the nearest known one.
 */
public final class ReadOptions implements Serializable {
    public static final long EARLIEST = -2;   // Kafka's ListOffsets sentinels, as in the offsets JSON
    public static final long LATEST = -1;
    public static final long DEFAULT_MAX_BYTES_PER_TASK = 128L << 20;
    /** Spark's own columnar batch size (spark.sql.parquet.columnarReaderBatchSize's default). */
    public static final int DEFAULT_MAX_ROWS_PER_BATCH = 4096;
    public static final String READ_UNCOMMITTED = "read_uncommitted";
    public static final String READ_COMMITTED = "read_committed";

    /** Lower-cased key -> the spelling users write (messages name the latter). */
    static final Map<String, String> KNOWN = new LinkedHashMap<>();
    static {
        for (String k : new String[] {"path", "location", "topic", "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets",
            "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
            "startingOffsetsByTimestampStrategy", "failOnDataLoss", "includeHeaders", "minPartitions",
            "maxBytesPerTask", "maxRowsPerBatch", "filterPushdown", "isolation.level", "kafka.isolation.level",
            "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "columnarReads", "maxRecordsPerPartition",
            "checkCrcs"}) {
            KNOWN.put(k.toLowerCase(Locale.ROOT), k);
        }
    }

    /**
     * Options of Spark's Kafka source whose only meaning is a broker or a consumer of one: refused, saying why
     * (every {@code kafka.*} key but {@code kafka.isolation.level} is one too).
     */
    static final Map<String, String> BROKER_ONLY = new LinkedHashMap<>();
    static {
        for (String k : new String[] {"kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
            "groupIdPrefix"}) {
            BROKER_ONLY.put(k.toLowerCase(Locale.ROOT), k);
        }
    }

    /** Spark's Kafka source's default maxTriggerDelay (DEFAULT_MAX_TRIGGER_DELAY). */
    public static final String DEFAULT_MAX_TRIGGER_DELAY = "15m";

    private static final ObjectMapper JSON = new ObjectMapper();

    public final String root;
    /** subscribe / subscribePattern / assign: which topics and partitions of the root are read. */
    public final TopicSelection selection;
    public final Bound starting;
    public final Bound ending;
    public final boolean strategyLatest;     // startingOffsetsByTimestampStrategy=latest
    public final boolean failOnDataLoss;
    public final boolean includeHeaders;
    public final int minPartitions;          // 0: not given
    public final long maxBytesPerTask;
    /** Rows per columnar batch: the vectors' capacity, so a task's memory is flat whatever the log holds. */
    public final int maxRowsPerBatch;
    /** Columnar batches to Spark (the default); false gives rows, record by record (the reference path). */
    public final boolean columnarReads;
    public final boolean filterPushdown;
    /**
     * Kafka's consumer setting check.crcs, by name and meaning: "Automatically check the CRC32 of the records
     * consumed ... may be disabled in cases seeking extreme performance". True (the default): every batch read is
     * checked whole, so a flipped byte is reported by every reader (docs/spec.md §11). False: every structural check
     * stays (Segment.Batches#checkingCrcs), the CRC is skipped, and a pushed count reads only batch headers.
     */
    public final boolean checkCrcs;
    public final boolean readCommitted;
    /** At most this many offsets per task (Spark's maxRecordsPerPartition); 0: no such limit. */
    public final long maxRecordsPerPartition;
    /** Streaming admission control (Spark's Kafka source): 0 when not given. */
    public final long maxOffsetsPerTrigger;
    public final long minOffsetsPerTrigger;
    /** Parsed as Spark parses it (JavaUtils.timeStringAsMs): a number with us, ms, s, m/min, h or d; bare: ms. */
    public final long maxTriggerDelayMs;
    public final Map<String, String> raw;    // lower-cased keys: re-parsed for a batch or a latest read
    public final boolean streaming;          // a streaming read allows "latest" as a start

    private ReadOptions(Map<String, String> o, boolean streaming) {
        this.streaming = streaming;
        raw = o;
        for (String key : o.keySet()) {
            if (!KNOWN.containsKey(key) && (key.startsWith("kafka.") || BROKER_ONLY.containsKey(key))) {
                String near = closest(key);
                throw new BrokerOptionException("seglog source: option '" + BROKER_ONLY.getOrDefault(key, key)
                    + "' configures Spark's Kafka source's use of a broker, and seglog has none: it reads the segment "
                    + "files of the log root (path) directly; drop the option"
                    + (near == null ? "" : " (did you mean '" + KNOWN.get(near) + "'?)"));
            }
            if (!KNOWN.containsKey(key)) {
                String near = closest(key);
                throw new SeglogConfigException("seglog source: unknown option '" + key + "'"
                    + (near == null ? "" : "; did you mean '" + KNOWN.get(near) + "'?")
                    + " (known options: " + String.join(", ", new java.util.TreeSet<>(KNOWN.values())) + ")");
            }
        }
        try {
            root = io.seglog.spark.format.RootPath.fromOptions(o.get("path"), o.get("location"), "seglog source");
        } catch (IllegalArgumentException e) {
            throw new SeglogConfigException(e.getMessage());
        }
        if (root == null) {
            throw new SeglogConfigException("seglog source: no path given: pass the log root as .load('/data/log') "
                + "or OPTIONS (path '/data/log')");
        }
        selection = TopicSelection.parse(o);

        if (o.containsKey("startingtimestamp")) {
            starting = new Bound(Bound.Kind.TIMESTAMP, "startingTimestamp",
                parseTimestamp("startingTimestamp", o.get("startingtimestamp")), Map.of());
        } else if (o.containsKey("startingoffsetsbytimestamp")) {
            starting = new Bound(Bound.Kind.TIMESTAMPS, "startingOffsetsByTimestamp", 0,
                parseTimestamps("startingOffsetsByTimestamp", o.get("startingoffsetsbytimestamp")));
        } else {
            starting = parseStart(o.get("startingoffsets"));
        }
        if (o.containsKey("startingoffsets") && !starting.option.equals("startingOffsets")) {
            parseStart(o.get("startingoffsets"));
        }
        if (o.containsKey("endingtimestamp")) {
            ending = new Bound(Bound.Kind.TIMESTAMP, "endingTimestamp",
                parseTimestamp("endingTimestamp", o.get("endingtimestamp")), Map.of());
        } else if (o.containsKey("endingoffsetsbytimestamp")) {
            ending = new Bound(Bound.Kind.TIMESTAMPS, "endingOffsetsByTimestamp", 0,
                parseTimestamps("endingOffsetsByTimestamp", o.get("endingoffsetsbytimestamp")));
        } else {
            ending = parseEnd(o.get("endingoffsets"));
        }
        if (o.containsKey("endingoffsets") && !ending.option.equals("endingOffsets")) {
            parseEnd(o.get("endingoffsets"));
        }
        String strategy = o.getOrDefault("startingoffsetsbytimestampstrategy", "error").trim().toLowerCase(Locale.ROOT);
        if (!strategy.equals("error") && !strategy.equals("latest")) {
            throw bad("startingOffsetsByTimestampStrategy", o.get("startingoffsetsbytimestampstrategy"),
                "'error' or 'latest'");
        }
        strategyLatest = strategy.equals("latest");
        minPartitions = o.containsKey("minpartitions")
            ? (int) parseLong("minPartitions", o.get("minpartitions"), 1, Integer.MAX_VALUE, "an integer >= 1") : 0;
        maxBytesPerTask = o.containsKey("maxbytespertask")
            ? parseLong("maxBytesPerTask", o.get("maxbytespertask"), 1, Long.MAX_VALUE, "a number of bytes >= 1")
            : DEFAULT_MAX_BYTES_PER_TASK;
        maxRowsPerBatch = o.containsKey("maxrowsperbatch")
            ? (int) parseLong("maxRowsPerBatch", o.get("maxrowsperbatch"), 1, Integer.MAX_VALUE, "an integer >= 1")
            : DEFAULT_MAX_ROWS_PER_BATCH;
        columnarReads = parseBool("columnarReads", o.get("columnarreads"), true);
        failOnDataLoss = parseBool("failOnDataLoss", o.get("failondataloss"), true);
        includeHeaders = parseBool("includeHeaders", o.get("includeheaders"), false);
        filterPushdown = parseBool("filterPushdown", o.get("filterpushdown"), true);
        checkCrcs = parseBool("checkCrcs", o.get("checkcrcs"), true);
        readCommitted = parseIsolation(o).equals(READ_COMMITTED);
        maxRecordsPerPartition = o.containsKey("maxrecordsperpartition")
            ? parseLong("maxRecordsPerPartition", o.get("maxrecordsperpartition"), 1, Long.MAX_VALUE, "an integer >= 1") : 0;
        maxOffsetsPerTrigger = o.containsKey("maxoffsetspertrigger")
            ? parseLong("maxOffsetsPerTrigger", o.get("maxoffsetspertrigger"), 1, Long.MAX_VALUE, "an integer >= 1") : 0;
        minOffsetsPerTrigger = o.containsKey("minoffsetspertrigger")
            ? parseLong("minOffsetsPerTrigger", o.get("minoffsetspertrigger"), 1, Long.MAX_VALUE, "an integer >= 1") : 0;
        if (minOffsetsPerTrigger > 0 && maxOffsetsPerTrigger > 0 && minOffsetsPerTrigger > maxOffsetsPerTrigger) {
            throw new SeglogConfigException("seglog source: minOffsetsPerTrigger (" + minOffsetsPerTrigger
                + ") must be at most maxOffsetsPerTrigger (" + maxOffsetsPerTrigger + ")");
        }
        maxTriggerDelayMs = parseDuration("maxTriggerDelay", o.getOrDefault("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY));
    }

    /**
     * A duration as Spark reads maxTriggerDelay: its own parser, so every unit Spark takes is taken here alike
     * ("500us", "250ms", "30s", "15m" or "15min", "2h", "1d"; a bare number is ms); negative delays are refused.
     */
    static long parseDuration(String option, String raw) {
        long ms;
        try {
            ms = org.apache.spark.network.util.JavaUtils.timeStringAsMs(raw);
        } catch (RuntimeException e) {   // NumberFormatException, with Spark's description of the units
            throw bad(option, raw, "a duration: an integer with a unit, us, ms, s, m or min, h or d (e.g. '30s', "
                + "'15m'), or a number of milliseconds");
        }
        if (ms < 0) throw bad(option, raw, "a duration >= 0, e.g. '30s' or '15m'");
        return ms;
    }

    /** The same read from the log start to the committed end: where a stream can read up to now. */
    ReadOptions asLatestRead() {
        Map<String, String> m = new TreeMap<>(raw);
        m.keySet().removeIf(k -> k.startsWith("starting") || k.startsWith("ending"));
        return new ReadOptions(m, false);
    }

    /** The batch read of these options (refuses what only a stream allows, such as startingOffsets=latest). */
    ReadOptions forBatch() {
        return streaming ? new ReadOptions(raw, false) : this;
    }

    /** Parses Spark's options (any key case). */
    public static ReadOptions parse(Map<String, String> options) {
        return parse(options, false);
    }

    /** Whether every key of {@code options} is a read option (case-insensitively): else {@link #parse} refuses them,
     *  naming the first unknown one and the known one nearest to it. */
    public static boolean allKnown(Map<String, String> options) {
        for (String key : options.keySet()) {
            if (!KNOWN.containsKey(key.toLowerCase(Locale.ROOT))) return false;
        }
        return true;
    }

    public static ReadOptions parse(Map<String, String> options, boolean streaming) {
        Map<String, String> lower = new TreeMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            lower.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
        }
        return new ReadOptions(lower, streaming);
    }

    static SeglogConfigException bad(String option, Object value, String allowed) {
        String shown = value instanceof String ? "'" + value + "'" : String.valueOf(value);
        return new SeglogConfigException("seglog source: invalid value " + shown + " for option '" + option
            + "'; allowed: " + allowed);
    }

    static boolean parseBool(String option, String raw, boolean dflt) {
        if (raw == null) return dflt;
        String t = raw.trim().toLowerCase(Locale.ROOT);
        if (t.equals("true") || t.equals("false")) return t.equals("true");
        throw bad(option, raw, "'true' or 'false'");
    }

    static long parseLong(String option, String raw, long min, long max, String what) {
        long v;
        try {
            v = Long.parseLong(raw.trim());
        } catch (NumberFormatException e) {
            throw bad(option, raw, what);
        }
        if (v < min || v > max) throw bad(option, raw, what);
        return v;
    }

    private static long parseTimestamp(String option, String raw) {
        return parseLong(option, raw, 0, Long.MAX_VALUE, "a timestamp in milliseconds since the epoch (an integer >= 0)");
    }

    private Map<TopicPartition, Long> parsePartitionJson(String option, String raw, String what, LongPredicate ok, String rule) {
        String example = what.equals("offset") ? "{\"events\": {\"0\": 23, \"1\": -2}}" : "{\"events\": {\"0\": 1700000000000}}";
        JsonNode doc;
        try {
            doc = JSON.readTree(raw);
        } catch (Exception e) {
            throw bad(option, raw, "a JSON object of topic -> {partition: " + what + "}, e.g. " + example);
        }
        if (doc == null || !doc.isObject() || doc.isEmpty()) {
            throw bad(option, raw, "a non-empty JSON object of topic -> {partition: " + what + "}, e.g. " + example);
        }
        Map<TopicPartition, Long> out = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> topicsIt = doc.fields();
        while (topicsIt.hasNext()) {
            Map.Entry<String, JsonNode> t = topicsIt.next();
            if (what.equals("offset") && t.getKey().equals(SeglogSourceOffset.IDS)) {
                checkTopicIds(option, raw, t.getValue());
                continue;
            }
            if (!selection.mayRead(t.getKey())) {
                throw new SeglogConfigException("seglog source: option '" + option + "' names topic '" + t.getKey()
                    + "', which is not read (" + selection.option + ": " + selection.describe() + ")");
            }
            JsonNode parts = t.getValue();
            if (!parts.isObject() || parts.isEmpty()) {
                throw bad(option, raw, "for topic '" + t.getKey() + "' a non-empty JSON object of partition -> " + what);
            }
            Iterator<Map.Entry<String, JsonNode>> pi = parts.fields();
            while (pi.hasNext()) {
                Map.Entry<String, JsonNode> p = pi.next();
                if (!p.getKey().matches("\\d+")) {
                    throw bad(option, raw, "partition keys are non-negative integers as strings; got '" + p.getKey()
                        + "' for topic '" + t.getKey() + "'");
                }
                JsonNode v = p.getValue();
                if (!v.isIntegralNumber() || !v.canConvertToLong() || !ok.test(v.asLong())) {
                    throw bad(option, raw, rule + "; got " + v + " for " + t.getKey() + "-" + Integer.parseInt(p.getKey()));
                }
                out.put(new TopicPartition(t.getKey(), Integer.parseInt(p.getKey())), v.asLong());
            }
        }
        return out;
    }

    /**
     * The topic ids a stream's offsets carry ({@link SeglogSourceOffset#IDS}: a query's progress, given back as
     * startingOffsets or endingOffsets) against each topic's id now (source/options.py's _check_topic_ids, the same
     * rule): offsets taken from a topic deleted and created again under its name are another topic's, and are refused
     * naming both ids, never applied to the new one. A topic with no id recorded (or not there) is not checked.
     */
    private void checkTopicIds(String option, String raw, JsonNode ids) {
        if (!ids.isObject()) throw bad(option, raw, SeglogSourceOffset.IDS + " is an object of topic -> topic id");
        Iterator<Map.Entry<String, JsonNode>> it = ids.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            String topic = e.getKey(), given = e.getValue().isTextual() ? e.getValue().asText() : null;
            if (!io.seglog.spark.format.TopicMetadata.validTopicId(given)) {
                throw bad(option, raw, "the topic id of '" + topic + "' in " + SeglogSourceOffset.IDS + " is "
                    + e.getValue() + ", not a UUID");
            }
            String now = io.seglog.spark.format.TopicCatalog.load(java.nio.file.Paths.get(root), topic)
                .map(io.seglog.spark.format.TopicMetadata::topicId).orElse(null);
            if (now != null && !now.equals(given)) {
                throw new SeglogConfigException("seglog source: option '" + option + "' holds offsets of topic '" + topic
                    + "' with topic id " + given + ", but the topic's id is now " + now + ": it was deleted and created "
                    + "again since those offsets were taken, so they are another topic's. Remove '"
                    + SeglogSourceOffset.IDS + "' to apply them to the new topic anyway");
            }
        }
    }

    private Bound parseStart(String raw) {
        String option = "startingOffsets";
        if (raw == null) {     // Spark's Kafka source: a batch reads from the earliest, a stream from the latest
            return new Bound(streaming ? Bound.Kind.LATEST : Bound.Kind.EARLIEST, option, 0, Map.of());
        }
        if (raw.trim().equalsIgnoreCase("earliest")) return new Bound(Bound.Kind.EARLIEST, option, 0, Map.of());
        if (raw.trim().equalsIgnoreCase("latest")) {
            if (streaming) return new Bound(Bound.Kind.LATEST, option, 0, Map.of());
            throw bad(option, raw, "'earliest' or a JSON object of offsets ('latest' is not allowed for a batch "
                + "read, as in Spark's Kafka source)");
        }
        return new Bound(Bound.Kind.OFFSETS, option, 0, parsePartitionJson(option, raw.trim(), "offset",
            v -> v >= 0 || v == EARLIEST || (streaming && v == LATEST),
            "an offset >= 0, or -2 for earliest (-1, latest, is not allowed for a batch read)"));
    }

    private Bound parseEnd(String raw) {
        String option = "endingOffsets";
        if (raw == null || raw.trim().equalsIgnoreCase("latest")) return new Bound(Bound.Kind.LATEST, option, 0, Map.of());
        if (raw.trim().equalsIgnoreCase("earliest")) {
            throw bad(option, raw, "'latest' or a JSON object of offsets ('earliest' is not allowed for "
                + "endingOffsets, as in Spark's Kafka source)");
        }
        return new Bound(Bound.Kind.OFFSETS, option, 0, parsePartitionJson(option, raw.trim(), "offset",
            v -> v >= 0 || v == LATEST,
            "an offset >= 0, or -1 for latest (-2, earliest, is not allowed for endingOffsets)"));
    }

    /** Per partition a timestamp, or Kafka's ListOffsets sentinels as Spark hands them to the broker: -1 the
     *  latest offset, -2 the earliest. */
    private Map<TopicPartition, Long> parseTimestamps(String option, String raw) {
        return parsePartitionJson(option, raw.trim(), "timestamp", v -> v >= 0 || v == LATEST || v == EARLIEST,
            "a timestamp in milliseconds since the epoch (an integer >= 0), -1 for the latest offset or -2 for the earliest");
    }

    private static String parseIsolation(Map<String, String> o) {
        String found = null;
        for (String option : new String[] {"kafka.isolation.level", "isolation.level"}) {
            String v = o.get(option);
            if (v == null) continue;
            String t = v.trim().toLowerCase(Locale.ROOT);
            if (!t.equals(READ_UNCOMMITTED) && !t.equals(READ_COMMITTED)) {
                throw bad(option, v, "'read_uncommitted' or 'read_committed'");
            }
            if (found != null && !found.equals(t)) {
                throw new SeglogConfigException("seglog source: 'kafka.isolation.level' and 'isolation.level' disagree ('"
                    + found + "' vs '" + t + "'); give one");
            }
            found = t;
        }
        return found == null ? READ_UNCOMMITTED : found;
    }

    /** The known option nearest to {@code key} (a typo), or null. */
    private static String closest(String key) {
        String best = null;
        double bestScore = 0.6;
        for (String k : KNOWN.keySet()) {
            double s = similarity(key, k);
            if (s >= bestScore) {
                bestScore = s;
                best = k;
            }
        }
        return best;
    }

    private static double similarity(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) d[i][0] = i;
        for (int j = 0; j <= b.length(); j++) d[0][j] = j;
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int c = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + c);
            }
        }
        return 1.0 - (double) d[a.length()][b.length()] / Math.max(1, Math.max(a.length(), b.length()));
    }
}
