package io.seglog.spark.read;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.CompositeReadLimit;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.ReadMinRows;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;

import org.apache.kafka.common.TopicPartition;

import io.seglog.spark.format.LogStartBeyondEndException;
import io.seglog.spark.format.LogStartCheckpoint;
import io.seglog.spark.format.OffsetGaps;
import io.seglog.spark.format.PartitionLog;
import io.seglog.spark.format.SegmentGoneException;
import io.seglog.spark.format.SegmentListings;

/**
 * {@code readStream.format("seglog")}: micro-batches of committed records with Spark's Kafka-source
 * semantics ({@code KafkaMicroBatchStream} is the model). A batch is an offset range per partition,
 * [previous end, new end), where the new end never passes a partition's committed end (only committed
 * batches are visible, docs/spec.md §4). Admission control: maxOffsetsPerTrigger spreads the limit over
 * partitions in proportion to their backlog; minOffsetsPerTrigger waits for that many offsets unless
 * maxTriggerDelay has passed since the last trigger let through (never the first trigger of a run: after a
 * restart too). Trigger.AvailableNow reads up to the latest offsets seen at the run's first latestOffset, under
 * the same limits, as Spark applies them. A topic not created yet is waited for. The first start offsets are resolved once and written under the checkpoint, so a restart
 * before the first batch commits starts at the same place. Partitions that appear later are read
 * from their log start.
 *
 * <p>A trigger's driver cost follows the partitions, not the history they retain (issue 24): the stream
 * lives for the query, and keeps per partition what a later trigger can reuse: the folders' segment
 * listings (listed again only when a folder changed: {@link SegmentListings}), the commit logs followed
 * from the seq seen last ({@link LogLooks}) and, for read_committed,
 * what is known of transactions' fates ({@link TransactionFates}). Neither hides a change: a segment gone
 * under a kept listing makes every driver path forget the listings and list again ({@link #retrying}).
 */
final class SeglogMicroBatchStream implements MicroBatchStream, SupportsTriggerAvailableNow, ReportsSourceMetrics {
    private static final String INITIAL = "seglog-initial-offsets.json";

    private final ReadOptions opts;
    private final String checkpoint;
    private final long maxOffsets;        // 0: no limit
    private final long minOffsets;        // 0: none
    private final long maxTriggerDelayMs;
    private boolean availableNow;
    private SeglogSourceOffset availableNowEnd;   // taken at the first latestOffset of an AvailableNow run
    private final AtomicLong skipped = new AtomicLong();   // offsets skipped as data loss, the metric
    private final Set<String> told = ConcurrentHashMap.newKeySet();   // the losses told: each once per run
    private SeglogSourceOffset lastLatest;
    /** When the last trigger was let through (Spark's lastTriggerMillis): 0 at first, so the first trigger of a
     *  stream object, a new query's or a restarted one's, is never delayed by minOffsetsPerTrigger. */
    private long lastTriggerMs = 0;
    private final LongSupplier clock;
    private final Supplier<Configuration> hadoopConf;
    private final IntSupplier cores;
    private final LogLooks looks = LogLooks.kept();
    private final Map<TopicPartition, TransactionFates> fates = new ConcurrentHashMap<>();   // read_committed
    private final ConsumerPositions positions;

    SeglogMicroBatchStream(ReadOptions opts, String checkpointLocation) {
        this(opts, checkpointLocation, () -> SparkSession.active().sparkContext().hadoopConfiguration(), SeglogScan::cores);
    }

    /** With the session's facts given (the Hadoop configuration of the checkpoint, the cores): tests. */
    SeglogMicroBatchStream(ReadOptions opts, String checkpointLocation, Supplier<Configuration> hadoopConf, IntSupplier cores) {
        this(opts, checkpointLocation, hadoopConf, cores, System::currentTimeMillis);
    }

    /** With a clock too: tests of maxTriggerDelay that do not sleep. */
    SeglogMicroBatchStream(ReadOptions opts, String checkpointLocation, Supplier<Configuration> hadoopConf, IntSupplier cores,
                           LongSupplier clock) {
        this.clock = clock;
        this.opts = opts;
        this.checkpoint = checkpointLocation;
        this.hadoopConf = hadoopConf;
        this.cores = cores;
        this.positions = new ConsumerPositions(opts.root, checkpointLocation);
        Map<String, String> raw = opts.raw;
        for (String bad : new String[] {"endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"}) {
            if (raw.containsKey(bad)) {
                throw new SeglogConfigException("seglog source: option '" + ReadOptions.KNOWN.get(bad)
                    + "' is not valid for a streaming read (as in Spark's Kafka source); a stream has no end");
            }
        }
        maxOffsets = opts.maxOffsetsPerTrigger;
        minOffsets = opts.minOffsetsPerTrigger;
        maxTriggerDelayMs = opts.maxTriggerDelayMs;
    }

    // ------------------------------------------------------------------ where the log is now

    /**
     * Every partition's readable end now: its committed end (a log that ends short of it is reported by the
     * read). Partitions of the topic without a folder yet read as ending at 0. Data loss is not told here
     * (it is told once, when the batch that meets it is planned); a segment gone under the listing makes
     * it list again (Planner.retrying), as every driver path of the stream does.
     */
    private SeglogSourceOffset latestAvailable() {
        return retrying("the latest offsets of " + this, DataLoss.untold(),
            () -> offsetsOf(opts.asLatestRead(), DataLoss.untold(), true));
    }

    /** Each partition's resolved end (`ends`) or start, as an offset, with each topic's id; partitions without a
     *  folder yet (never written) at 0; a topic not created yet has none (the stream waits for it, as subscribe does).
     *  The ids are read before and after the offsets, and must agree: offsets resolved while the topic was deleted
     *  and created again are resolved again, never labelled with the id of another topic than theirs. */
    private SeglogSourceOffset offsetsOf(ReadOptions read, DataLoss loss, boolean ends) {
        for (int attempt = 1; ; attempt++) {
            Map<String, String> before = topicIds(read);
            SeglogSourceOffset offsets = offsetsOf(read, loss, ends, before);
            if (before.equals(topicIds(read))) return offsets;
            if (attempt == 5) {
                throw new io.seglog.spark.format.DataLossException("seglog source: the topics of " + this + " were deleted "
                    + "and created again while their offsets were read, " + attempt + " times running; try again");
            }
        }
    }

    /** The topic id of each topic the read selects whose metadata records one. */
    private static Map<String, String> topicIds(ReadOptions read) {
        Map<String, String> ids = new TreeMap<>();
        Path root = Paths.get(read.root);
        for (String topic : Planner.layout(read, false).keySet()) {
            io.seglog.spark.format.TopicCatalog.load(root, topic).map(io.seglog.spark.format.TopicMetadata::topicId)
                .ifPresent(id -> ids.put(topic, id));
        }
        return ids;
    }

    private SeglogSourceOffset offsetsOf(ReadOptions read, DataLoss loss, boolean ends, Map<String, String> ids) {
        Map<String, TreeMap<Integer, Long>> out = new TreeMap<>();
        List<PartitionLog> logs = new ArrayList<>();
        try {
            for (PartitionRange r : Planner.resolveAll(read, ScanBounds.NONE, logs, loss, looks, false)) {
                out.computeIfAbsent(r.topic, k -> new TreeMap<>()).put(r.partition, ends ? r.end : r.start);
            }
        } finally {
            for (PartitionLog l : logs) l.close();
        }
        for (Map.Entry<String, List<Integer>> e : Planner.layout(read, false).entrySet()) {
            TreeMap<Integer, Long> parts = out.computeIfAbsent(e.getKey(), k -> new TreeMap<>());
            for (int p : e.getValue()) parts.putIfAbsent(p, 0L);
        }
        return new SeglogSourceOffset(out, ids);
    }

    // ------------------------------------------------------------------ MicroBatchStream

    /** Resolved once and kept under the checkpoint; the first attempt to publish it wins (InitialOffsetsFile). */
    @Override
    public Offset initialOffset() {
        DataLoss loss = new DataLoss(opts.failOnDataLoss, skipped, told);
        return InitialOffsetsFile.getOrCreate(new org.apache.hadoop.fs.Path(checkpoint, INITIAL), hadoopConf.get(),
            () -> retrying("the initial offsets of " + this, loss, () -> resolveInitial(loss)));
    }

    /**
     * {@link Planner#retrying} for the stream's driver paths: an attempt that finds the log changed under it
     * (a segment gone, a log start beyond the end) forgets the kept listings first, so the next attempt
     * lists every folder anew: a kept listing never outlives a change it missed.
     */
    private <T> T retrying(String what, DataLoss loss, Supplier<T> attempt) {
        return Planner.retrying(what, loss, () -> {
            try {
                return attempt.get();
            } catch (SegmentGoneException | LogStartBeyondEndException e) {
                looks.forget();
                throw e;
            }
        });
    }

    /** The starting offsets of a new query: startingOffsets / startingTimestamp / startingOffsetsByTimestamp. */
    private SeglogSourceOffset resolveInitial(DataLoss loss) {
        return offsetsOf(opts, loss, false);
    }

    @Override
    public Offset latestOffset() {
        throw new UnsupportedOperationException("seglog source: latestOffset(start, limit) is the entry point");
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        if (maxOffsets > 0 && minOffsets > 0) {
            return ReadLimit.compositeLimit(new ReadLimit[] {ReadLimit.maxRows(maxOffsets),
                ReadLimit.minRows(minOffsets, maxTriggerDelayMs)});
        }
        if (maxOffsets > 0) return ReadLimit.maxRows(maxOffsets);
        if (minOffsets > 0) return ReadLimit.minRows(minOffsets, maxTriggerDelayMs);
        return ReadLimit.allAvailable();
    }

    /**
     * Spark calls this before {@link #initialOffset()}: the end of an AvailableNow run is not taken here
     * (a commit in between would leave it below a start resolved after it: startingOffsets=latest or a
     * timestamp) but at the first {@link #latestOffset(Offset, ReadLimit)}, as Spark's
     * KafkaMicroBatchStream takes allDataForTriggerAvailableNow.
     */
    @Override
    public void prepareForTriggerAvailableNow() {
        availableNow = true;
    }

    @Override
    public Offset latestOffset(Offset startOffset, ReadLimit limit) {
        SeglogSourceOffset start = SeglogSourceOffset.of(startOffset);
        SeglogSourceOffset latest = latestAvailable();
        lastLatest = latest;
        if (availableNow) {
            if (availableNowEnd == null) availableNowEnd = latest;   // after the start: never below it
            latest = capTo(latest, availableNowEnd);
        }
        // From where each partition goes on: its start, or (a new partition) 0 / its log start.
        Map<String, TreeMap<Integer, Long>> from = new TreeMap<>();
        long total = 0;
        for (Map.Entry<String, TreeMap<Integer, Long>> t : latest.offsets.entrySet()) {
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                // a topic created again since the start reads from its beginning (or fails, when the batch is planned)
                long s = start.recreated(t.getKey(), latest) ? 0L : Math.min(start.get(t.getKey(), p.getKey(), 0L), p.getValue());
                from.computeIfAbsent(t.getKey(), k -> new TreeMap<>()).put(p.getKey(), s);
                total += Math.max(0, p.getValue() - s);
            }
        }
        if (opts.readCommitted) {
            SeglogSourceOffset all = latest;
            SeglogSourceOffset stable = retrying("the last stable offsets of " + this, DataLoss.untold(),
                () -> capAtOpenTransactions(from, all));
            total -= totalBetween(from, latest) - totalBetween(from, stable);
            latest = stable;
        }
        ReadMaxRows max = null;
        ReadMinRows min = null;
        for (ReadLimit l : limit instanceof CompositeReadLimit ? ((CompositeReadLimit) limit).getReadLimits() : new ReadLimit[] {limit}) {
            if (l instanceof ReadMaxRows) max = (ReadMaxRows) l;
            if (l instanceof ReadMinRows) min = (ReadMinRows) l;
        }
        if (min != null && delayBatch(total, min)) {
            return start;      // not enough new offsets yet, and the delay has not passed: no batch
        }
        return max == null || total <= max.maxRows() ? latest : rateLimit(from, latest, total, max.maxRows());
    }

    /**
     * minOffsetsPerTrigger, as Spark's Kafka source's delayBatch: once maxTriggerDelay has passed since the last
     * trigger let through, the trigger goes ahead (and the wait starts again) whatever it holds; before, it waits
     * while fewer than minRows offsets are new. Under Trigger.AvailableNow Spark passes the same limit, so a run's
     * later triggers wait alike, and a run whose last offsets are fewer than minRows ends without them (the
     * next run's first trigger takes them).
     */
    private boolean delayBatch(long newOffsets, ReadMinRows min) {
        long now = clock.getAsLong();
        if (now - lastTriggerMs >= min.maxTriggerDelayMs()) {
            lastTriggerMs = now;
            return false;
        }
        if (newOffsets < min.minRows()) return true;
        lastTriggerMs = now;
        return false;
    }

    /** read_committed: no partition's end passes its last stable offset (an open transaction). */
    private SeglogSourceOffset capAtOpenTransactions(Map<String, TreeMap<Integer, Long>> from, SeglogSourceOffset latest) {
        Path root = Paths.get(opts.root);
        Map<String, Long> checkpointed = LogStartCheckpoint.read(root);
        OffsetGaps gaps = OffsetGaps.at(root);
        Map<String, TreeMap<Integer, Long>> out = new TreeMap<>();
        for (Map.Entry<String, TreeMap<Integer, Long>> t : latest.offsets.entrySet()) {
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                long begin = from.get(t.getKey()).get(p.getKey());
                long end = p.getValue();
                if (begin < end && Files.isDirectory(root.resolve(t.getKey() + "-" + p.getKey()))) {
                    try (PartitionLog log = PartitionLog.open(root, t.getKey(), p.getKey(),
                            checkpointed.getOrDefault(t.getKey() + "-" + p.getKey(), 0L), gaps, looks.listings, RemoteConf.SESSION)) {
                        TransactionFates known = fates.computeIfAbsent(new TopicPartition(t.getKey(), p.getKey()),
                            k -> new TransactionFates());
                        end = known.lastStableOffset(log, Math.max(begin, log.logStartOffset()), end);
                    }
                }
                out.computeIfAbsent(t.getKey(), k -> new TreeMap<>()).put(p.getKey(), Math.max(begin, end));
            }
        }
        return new SeglogSourceOffset(out, latest.topicIds);
    }

    private static long totalBetween(Map<String, TreeMap<Integer, Long>> from, SeglogSourceOffset to) {
        long total = 0;
        for (Map.Entry<String, TreeMap<Integer, Long>> t : to.offsets.entrySet()) {
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                total += Math.max(0, p.getValue() - from.get(t.getKey()).get(p.getKey()));
            }
        }
        return total;
    }

    private static SeglogSourceOffset capTo(SeglogSourceOffset latest, SeglogSourceOffset cap) {
        Map<String, TreeMap<Integer, Long>> out = new TreeMap<>();
        for (Map.Entry<String, TreeMap<Integer, Long>> t : cap.offsets.entrySet()) {
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                long now = latest.get(t.getKey(), p.getKey(), p.getValue());
                out.computeIfAbsent(t.getKey(), k -> new TreeMap<>()).put(p.getKey(), Math.min(now, p.getValue()));
            }
        }
        return new SeglogSourceOffset(out, cap.topicIds);
    }

    /** As Spark's Kafka source: each partition gets a share of the limit in proportion to its backlog. */
    private static SeglogSourceOffset rateLimit(Map<String, TreeMap<Integer, Long>> from, SeglogSourceOffset latest,
                                                long total, long limit) {
        Map<String, TreeMap<Integer, Long>> out = new TreeMap<>();
        for (Map.Entry<String, TreeMap<Integer, Long>> t : latest.offsets.entrySet()) {
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                long begin = from.get(t.getKey()).get(p.getKey());
                long size = p.getValue() - begin;
                double prorate = limit * ((double) size / total);
                long take = (long) (prorate < 1 ? Math.ceil(prorate) : Math.floor(prorate));
                out.computeIfAbsent(t.getKey(), k -> new TreeMap<>()).put(p.getKey(), Math.min(p.getValue(), begin + take));
            }
        }
        return new SeglogSourceOffset(out, latest.topicIds);
    }

    @Override
    public Offset reportLatestOffset() {
        return lastLatest;
    }

    /**
     * The batch's ranges, [start, end) per partition, as Spark's Kafka source's getOffsetRanges: a partition
     * the stream knew that is no longer in the end offsets, a folder gone, offsets retention deleted before
     * they were read, or an end below the start are data loss (failOnDataLoss: fail; else warn, count and
     * go on from what remains). Slices carry the committed end read now as their bound (at least the end).
     */
    @Override
    public InputPartition[] planInputPartitions(Offset startOffset, Offset endOffset) {
        SeglogSourceOffset start = SeglogSourceOffset.of(startOffset);
        SeglogSourceOffset end = SeglogSourceOffset.of(endOffset);
        Path root = Paths.get(opts.root);
        DataLoss loss = new DataLoss(opts.failOnDataLoss, skipped, told);
        List<List<Slice>> tasks = retrying("planning a batch of " + this, loss, () -> {
            reportGone(start, end, loss);
            reportRecreated(start, end, root, loss);
            Map<String, Long> checkpointed = LogStartCheckpoint.read(root);
            OffsetGaps gaps = OffsetGaps.at(root);
            List<PartitionLog> logs = new ArrayList<>();
            try {
                List<PartitionRange> ranges = new ArrayList<>();
                long total = 0;
                for (Map.Entry<String, TreeMap<Integer, Long>> t : end.offsets.entrySet()) {
                    String topic = t.getKey();
                    Map<Integer, Long> committed = looks.committedEnds(root, topic);
                    for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                        int partition = p.getKey();
                        long until = p.getValue();
                        boolean recreated = start.recreated(topic, end);   // told above; read from its earliest
                        long from = recreated ? 0L : start.get(topic, partition, 0L);
                        if (!Files.isDirectory(root.resolve(topic + "-" + partition))) {
                            if (from > 0 || until > from) {
                                loss.report(topic + "-" + partition + ": the partition folder is gone; offsets from " + from
                                    + " on cannot be read", Math.max(until, committed.getOrDefault(partition, 0L)) - from, GO_ON);
                            }
                            continue;
                        }
                        PartitionLog log = PartitionLog.open(root, topic, partition,
                            checkpointed.getOrDefault(topic + "-" + partition, 0L), gaps, looks.listings, RemoteConf.SESSION);
                        logs.add(log);
                        log.requireStartWithinEnd();
                        long logStart = log.logStartOffset();
                        if (recreated) from = Math.min(logStart, until);
                        if (from < logStart && from < until) {
                            loss.report(Planner.lossOf(topic, partition, from, logStart), Math.min(logStart, until) - from, GO_ON);
                            from = Math.min(logStart, until);
                        }
                        if (until < from) {
                            loss.report(topic + "-" + partition + ": the end offset " + until + " is below the start " + from
                                + " (the log was truncated)", 0, GO_ON);
                            continue;
                        }
                        if (from < until) {
                            long bytes = log.byteSize(from, until);
                            total += bytes;
                            long bound = Math.max(until, committed.getOrDefault(partition, until));
                            ranges.add(new PartitionRange(topic, partition, from, until, bound, bytes, log));
                        }
                    }
                }
                long target = Planner.targetTaskBytes(total, opts, cores.getAsInt());
                return Planner.capRecords(Planner.pack(ranges, target, Planner.slack(target, opts)), opts.maxRecordsPerPartition);
            } finally {
                for (PartitionLog l : logs) l.close();
            }
        });
        InputPartition[] out = new InputPartition[tasks.size()];
        for (int i = 0; i < out.length; i++) out[i] = new SeglogInputPartition(tasks.get(i).toArray(new Slice[0]));
        return out;
    }

    private static final String GO_ON = "Set failOnDataLoss=false to go on from the offsets that remain.";

    /**
     * Topics deleted and created again under their name since the start (the start's topic id is not the topic's
     * now: Kafka's topic IDs, KIP-516): the start's offsets are another topic's, so none is applied to the new one.
     * Reported as data loss, per partition, with the checkpointed offset and the new topic's range: with
     * failOnDataLoss=false the new topic is read from its earliest offset.
     */
    private void reportRecreated(SeglogSourceOffset start, SeglogSourceOffset end, Path root, DataLoss loss) {
        for (Map.Entry<String, TreeMap<Integer, Long>> t : start.offsets.entrySet()) {
            String topic = t.getKey();
            if (!end.offsets.containsKey(topic) || !start.recreated(topic, end)) continue;
            Map<Integer, Long> committed = looks.committedEnds(root, topic);
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                int partition = p.getKey();
                String range;
                if (!end.has(topic, partition)) {
                    range = "the new topic has no partition " + partition;
                } else {
                    range = "the new topic's partition holds offsets [" + logStartOf(root, topic, partition) + ", "
                        + committed.getOrDefault(partition, 0L) + ")";
                }
                loss.report("topic '" + topic + "' was deleted and created again since the checkpoint (topic id "
                    + start.topicId(topic) + " in the checkpoint, " + end.topicId(topic) + " now): partition " + topic + "-"
                    + partition + "'s checkpointed offset " + p.getValue() + " is the old topic's; " + range,
                    0, "Set failOnDataLoss=false to read the new topic from its earliest offset, or start the "
                    + "query from a new checkpoint.");
            }
        }
    }

    /** A partition's log start, as the log start checkpoint records it (0 when it records none). */
    private static long logStartOf(Path root, String topic, int partition) {
        return LogStartCheckpoint.read(root).getOrDefault(topic + "-" + partition, 0L);
    }

    /** Partitions the stream was reading that the end offsets no longer name (Kafka's "are gone"); a topic created
     *  again is told by {@link #reportRecreated} instead. */
    private static void reportGone(SeglogSourceOffset start, SeglogSourceOffset end, DataLoss loss) {
        List<String> gone = new ArrayList<>();
        for (Map.Entry<String, TreeMap<Integer, Long>> t : start.offsets.entrySet()) {
            if (start.recreated(t.getKey(), end)) continue;
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                if (!end.has(t.getKey(), p.getKey())) gone.add(t.getKey() + "-" + p.getKey() + " (at offset " + p.getValue() + ")");
            }
        }
        if (!gone.isEmpty()) {
            loss.report(String.join(", ", gone) + (gone.size() == 1 ? " is" : " are") + " gone from the topic", 0, GO_ON);
        }
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SeglogReaderFactory(opts, ScanBounds.NONE, SeglogSchema.of(opts.includeHeaders));
    }

    @Override
    public Offset deserializeOffset(String json) {
        return SeglogSourceOffset.fromJson(json);
    }

    /** Nothing to release (the log is read in place, and retention does not wait for readers): Spark has processed
     *  everything before {@code end}, the query's consumer position (ConsumerPositions). */
    @Override
    public void commit(Offset end) {
        positions.record(SeglogSourceOffset.of(end), clock.getAsLong());
    }

    @Override
    public void stop() {
    }

    /** Offsets behind the latest readable offsets, in StreamingQueryProgress (as Spark's Kafka source), and
     *  the offsets skipped as data loss so far (failOnDataLoss=false). */
    @Override
    public Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
        Map<String, String> out = new HashMap<>();
        out.put(DataLoss.METRIC, String.valueOf(skipped.get()));
        if (latestConsumedOffset.isEmpty()) return out;
        SeglogSourceOffset consumed = SeglogSourceOffset.of(latestConsumedOffset.get());
        // Spark reports progress once the trigger's batch is committed (its commit log written): the batch's end is
        // the query's position now. commit(end) alone would lag a batch: Spark calls it when the next batch starts.
        positions.record(consumed, clock.getAsLong());
        if (lastLatest == null) return out;
        long min = Long.MAX_VALUE, max = 0, sum = 0, n = 0;
        for (Map.Entry<String, TreeMap<Integer, Long>> t : lastLatest.offsets.entrySet()) {
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                long behind = Math.max(0, p.getValue() - consumed.get(t.getKey(), p.getKey(), 0L));
                min = Math.min(min, behind);
                max = Math.max(max, behind);
                sum += behind;
                n++;
            }
        }
        if (n == 0) return out;
        out.put("minOffsetsBehindLatest", String.valueOf(min));
        out.put("maxOffsetsBehindLatest", String.valueOf(max));
        out.put("avgOffsetsBehindLatest", String.valueOf((double) sum / n));
        return out;
    }

    @Override
    public String toString() {
        return "seglog[" + opts.root + ":" + opts.selection.describe() + "]";
    }
}
