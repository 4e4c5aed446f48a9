package io.seglog.spark.write;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.seglog.spark.format.StagedPublisher;
import io.seglog.spark.format.TopicCatalog;
import io.seglog.spark.format.TopicConfigException;
import io.seglog.spark.format.TopicConfigRules;
import io.seglog.spark.format.TopicLayout;

/**
 * The options of a {@code format("seglog")} write, parsed once on the driver (case-insensitively, as Spark
 * gives them), every one checked before anything is written; a bad one is refused naming it:
 * <ul>
 * <li>{@code path} (from {@code save(root)}): the log root;</li>
 * <li>{@code topic}: the topic every row goes to (a {@code topic} column is then ignored, as Spark's Kafka
 *   sink does); without it each row's {@code topic} column names its topic;</li>
 * <li>{@code partitions} and topic configuration by Kafka's names ({@code segment.bytes}, ...): for every topic
 *   the write names (the option's, or each one the rows name), created with them when new, checked against
 *   them when it exists; without {@code partitions} a topic must exist;</li>
 * <li>{@code txnAppId} + {@code txnVersion} (Delta's names): an idempotent write; a version at or below the
 *   last one committed for that app id is skipped. Without them a write is a plain append;</li>
 * <li>{@code foreachBatchId}: the write is that micro-batch of the streaming query whose foreachBatch function
 *   runs it (SegmentLogSink): its version is the batch id and its writer option writerId, else the query's id
 *   ({@link ForeachBatchQuery}: known from the write's input, or refused); a re-delivered batch is skipped, as
 *   with txnVersion;</li>
 * <li>{@code writerId}: with {@code foreachBatchId}, the writer; for a plain append, the name of its counter
 *   (recorded as {@code @append.<writerId>}, seglog's namespace: {@link WriterIds}); with {@code txnAppId} the
 *   app id is the writer. Reserved names are refused ({@link WriterIds#RESERVED});</li>
 * <li>{@code lockTimeoutMs}: how long the commit waits for a topic's writer lock and a partition's lock
 *   (default 600000; {@code none}: for ever; SegmentLogSink's lock_timeout);</li>
 * <li>{@code renameMinBytes} (hidden: for tests): staged segments of at least this many bytes are renamed in,
 *   smaller ones copied onto the active segment (StagedPublisher; default the core's 1 MiB).</li>
 * </ul>
 */
public final class WriteOptions implements Serializable {
    private static final long serialVersionUID = 1L;
    // conf/options.yaml declares these (WriteOptionTableTest)
    static final List<String> OWN = List.of("path", "location", "topic", "partitions", "writerid", "txnappid", "txnversion",
            "foreachbatchid", "locktimeoutms", "renameminbytes");
    // Spark's own, passed to every streaming sink with the sink's options: the query's, not ours
    private static final List<String> SPARKS = List.of("checkpointlocation");

    public final String root;
    public final String topic;                   // null: each row's topic column
    public final Integer partitions;             // null: not asked
    public final Map<String, Object> config;     // the topic configuration asked for, validated (Kafka's names)
    public final boolean configGiven;
    public final String writer;                  // the writer id the commit log records
    public final Long txnVersion;                // null: a plain append
    public final Long foreachBatchId;            // null: not a foreachBatch call
    public final boolean writerGiven;            // option writerId (or txnAppId) was given
    private final String named;                  // that name (a user's: WriterIds), null if none
    public final Long lockTimeoutMs;             // null: wait for ever
    public final long renameMinBytes;            // staged segments this large are renamed in, smaller ones copied

    private WriteOptions(String root, String topic, Integer partitions, Map<String, Object> config, boolean configGiven,
                         String writer, Long txnVersion, Long foreachBatchId, boolean writerGiven, String named,
                         Long lockTimeoutMs, long renameMinBytes) {
        this.root = root;
        this.topic = topic;
        this.partitions = partitions;
        this.config = config;
        this.configGiven = configGiven;
        this.writer = writer;
        this.txnVersion = txnVersion;
        this.foreachBatchId = foreachBatchId;
        this.writerGiven = writerGiven;
        this.named = named;
        this.lockTimeoutMs = lockTimeoutMs;
        this.renameMinBytes = renameMinBytes;
    }

    private WriteOptions with(String writer, Long version) {
        return new WriteOptions(root, topic, partitions, config, configGiven, writer, version, foreachBatchId, writerGiven,
                named, lockTimeoutMs, renameMinBytes);
    }

    /** {@code options}: Spark's, any key case (the original spelling is kept for messages). */
    public static WriteOptions parse(Map<String, String> options) {
        Map<String, String> o = new LinkedHashMap<>();
        Map<String, String> spelled = new LinkedHashMap<>();
        Map<String, String> configText = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            String key = e.getKey().toLowerCase(java.util.Locale.ROOT);
            spelled.put(key, e.getKey());
            if (SPARKS.contains(key)) {
                continue;
            } else if (OWN.contains(key)) {
                o.put(key, e.getValue());
            } else if (TopicConfigRules.isKey(key)) {
                configText.put(key, e.getValue());
            } else {
                throw new SeglogWriteException("seglog write: unknown option '" + e.getKey() + "'; allowed: path (save(root)), "
                        + "topic, partitions, writerId, txnAppId, txnVersion, foreachBatchId, lockTimeoutMs, and topic configuration by Kafka's names ("
                        + String.join(", ", new java.util.TreeSet<>(TopicConfigRules.keys())) + ")");
            }
        }
        String root;
        try {
            root = io.seglog.spark.format.RootPath.fromOptions(o.get("path"), o.get("location"), "seglog write");
        } catch (IllegalArgumentException e) {
            throw new SeglogWriteException(e.getMessage(), e);
        }
        if (root == null) {
            throw new SeglogWriteException("seglog write: no log root; give it as save(root) (option 'path')");
        }
        String topic = o.get("topic");
        if (topic != null && !TopicLayout.validTopic(topic)) {
            throw new SeglogWriteException("seglog write: option 'topic' = '" + topic + "': a topic is 1 to 249 characters of "
                    + "[a-zA-Z0-9._-], not '.' or '..'");
        }
        Integer partitions = null;
        if (o.containsKey("partitions")) {
            String text = o.get("partitions").strip();
            long n;
            try {
                n = Long.parseLong(text);
            } catch (NumberFormatException e) {
                n = -1;
            }
            if (n < 1 || n > TopicCatalog.MAX_PARTITIONS) {
                throw new SeglogWriteException("seglog write: option 'partitions' = '" + o.get("partitions")
                        + "'; allowed: an integer from 1 to " + TopicCatalog.MAX_PARTITIONS);
            }
            partitions = (int) n;
        }
        Map<String, Object> config;
        try {
            config = TopicConfigRules.requested(configText, "seglog write option");
        } catch (TopicConfigException e) {
            throw new SeglogWriteException(e.getMessage(), e);
        }
        String app = o.get("txnappid");
        String version = o.get("txnversion");
        if ((app == null) != (version == null)) {
            throw new SeglogWriteException("seglog write: option '" + (app == null ? spelled.get("txnversion") : spelled.get("txnappid"))
                    + "' needs option '" + (app == null ? "txnAppId" : "txnVersion") + "' too (Delta's idempotent writes: the "
                    + "app id names the writer, the version its write)");
        }
        Long txnVersion = version == null ? null : nonNegative("txnVersion", version);
        Long foreachBatchId = o.containsKey("foreachbatchid") ? nonNegative("foreachBatchId", o.get("foreachbatchid")) : null;
        if (foreachBatchId != null && app != null) {
            throw new SeglogWriteException("seglog write: options 'foreachBatchId' and 'txnAppId' exclude each other: a "
                    + "foreachBatch call's version is its batch id and its writer the query (or option 'writerId')");
        }
        String lockText = o.get("locktimeoutms");
        Long lockTimeoutMs = lockText == null ? (Long) DriverCommit.LOCK_TIMEOUT_MS
                : lockText.strip().equalsIgnoreCase("none") ? null : nonNegative("lockTimeoutMs", lockText);
        String writerId = o.get("writerid");
        if (writerId != null && WriterIds.refusal(writerId) != null) {
            throw new SeglogWriteException("seglog write: option 'writerId' = '" + writerId + "'; " + WriterIds.refusal(writerId));
        }
        if (app != null && WriterIds.refusal(app) != null) {
            throw new SeglogWriteException("seglog write: option 'txnAppId' = '" + app + "'; " + WriterIds.refusal(app));
        }
        if (app != null && writerId != null && !app.equals(writerId)) {
            throw new SeglogWriteException("seglog write: options 'writerId' = '" + writerId + "' and 'txnAppId' = '" + app
                    + "' differ; with txnAppId the app id is the writer the commit log records: give one of them");
        }
        // a plain append's counter lives in seglog's namespace: no txnAppId (nor foreachBatch writer) can read it
        String writer = app != null ? app : foreachBatchId != null && writerId != null ? writerId : WriterIds.plainAppend(writerId);
        long renameMinBytes = StagedPublisher.RENAME_MIN_BYTES;
        if (o.containsKey("renameminbytes")) {
            String text = o.get("renameminbytes");
            try {
                renameMinBytes = Long.parseLong(text.strip());
            } catch (NumberFormatException e) {
                renameMinBytes = -1;
            }
            if (renameMinBytes < 0) {
                throw new SeglogWriteException("seglog write: option '" + spelled.get("renameminbytes") + "' = '" + text
                        + "'; allowed: an integer >= 0 (bytes)");
            }
        }
        return new WriteOptions(root, topic, partitions, config, !configText.isEmpty(), writer, txnVersion, foreachBatchId,
                app != null || writerId != null, app != null ? app : writerId, lockTimeoutMs, renameMinBytes);
    }

    private static long nonNegative(String name, String text) {
        long v;
        try {
            v = Long.parseLong(text.strip());
        } catch (NumberFormatException e) {
            v = -1L;
        }
        if (v < 0) throw new SeglogWriteException("seglog write: option '" + name + "' = '" + text + "'; allowed: an integer >= 0");
        return v;
    }

    /**
     * A foreachBatch call's options: the writer is option writerId, else {@code queryId} (the calling query's
     * id, {@link ForeachBatchQuery}), and the batch id is the version, so a re-delivered batch is skipped.
     */
    WriteOptions forForeachBatch(String queryId) {
        return with(writerGiven ? named : queryId, foreachBatchId);
    }

    /**
     * A stream's options for one epoch: the writer is option writerId, else the query's id (stable across
     * restarts from one checkpoint, new for a new checkpoint, as the Python sink's default), and the epoch
     * is the version, so a re-delivered epoch is skipped. txnAppId/txnVersion are refused: a stream's
     * epochs are its versions.
     */
    WriteOptions forStream(Map<String, String> options, String queryId, long epoch) {
        for (String k : options.keySet()) {
            String key = k.toLowerCase(java.util.Locale.ROOT);
            if (key.equals("txnappid") || key.equals("txnversion") || key.equals("foreachbatchid")) {
                throw new SeglogWriteException("seglog write: option '" + k + "' is for batch writes; a stream's micro-batches "
                        + "are its versions and its writer is the query id (or option 'writerId')");
            }
        }
        return with(writerGiven ? named : queryId, epoch);
    }

    /** For messages: the write as the user asked it. */
    String describe() {
        return "writer '" + (foreachBatchId != null && !writerGiven ? "<the query's id>" : writer) + "'"
                + (foreachBatchId != null ? " foreachBatchId " + foreachBatchId
                   : txnVersion == null ? " (plain append)" : " txnVersion " + txnVersion);
    }
}
