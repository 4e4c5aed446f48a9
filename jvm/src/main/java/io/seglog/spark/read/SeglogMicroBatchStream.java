package io.seglog.spark.read;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
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

import io.seglog.spark.format.DataLossException;
import io.seglog.spark.format.LogStartCheckpoint;
import io.seglog.spark.format.PartitionLog;

/**
 * {@code readStream.format("seglog")}: micro-batches of committed records with Spark's Kafka-source
 * semantics ({@code KafkaMicroBatchStream} is the model). A batch is an offset range per partition,
 * [previous end, new end), where the new end never passes a partition's committed end (only committed
 * batches are visible, docs/spec.md §4). Admission control: maxOffsetsPerTrigger spreads the limit over
 * partitions in proportion to their backlog; minOffsetsPerTrigger waits for that many offsets unless
 * maxTriggerDelay has passed. Trigger.AvailableNow reads up to the latest offsets seen when the query
 * started. The first start offsets are resolved once and written under the checkpoint, so a restart
 * before the first batch commits starts at the same place. Partitions that appear later are read
 * from their log start.
 */
final class SeglogMicroBatchStream implements MicroBatchStream, SupportsTriggerAvailableNow, ReportsSourceMetrics {
    private static final String INITIAL = "seglog-initial-offsets.json";

    private final ReadOptions opts;
    private final String checkpoint;
    private final long maxOffsets;        // 0: no limit
    private final long minOffsets;        // 0: none
    private final long maxTriggerDelayMs;
    private SeglogSourceOffset availableNowEnd;
    private SeglogSourceOffset lastLatest;
    private long lastTriggerMs = System.currentTimeMillis();

    SeglogMicroBatchStream(ReadOptions opts, String checkpointLocation) {
        this.opts = opts;
        this.checkpoint = checkpointLocation;
        Map<String, String> raw = opts.raw;
        for (String bad : new String[] {"endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"}) {
            if (raw.containsKey(bad)) {
                throw new SeglogConfigException("seglog source: option '" + ReadOptions.KNOWN.get(bad)
                    + "' is not valid for a streaming read (as in Spark's Kafka source); a stream has no end");
            }
        }
        maxOffsets = raw.containsKey("maxoffsetspertrigger")
            ? ReadOptions.parseLong("maxOffsetsPerTrigger", raw.get("maxoffsetspertrigger"), 1, Long.MAX_VALUE, "an integer >= 1") : 0;
        minOffsets = raw.containsKey("minoffsetspertrigger")
            ? ReadOptions.parseLong("minOffsetsPerTrigger", raw.get("minoffsetspertrigger"), 1, Long.MAX_VALUE, "an integer >= 1") : 0;
        maxTriggerDelayMs = raw.containsKey("maxtriggerdelay") ? parseDuration(raw.get("maxtriggerdelay")) : 15 * 60 * 1000L;
        if (minOffsets > 0 && maxOffsets > 0 && minOffsets > maxOffsets) {
            throw new SeglogConfigException("seglog source: minOffsetsPerTrigger (" + minOffsets
                + ") must be at most maxOffsetsPerTrigger (" + maxOffsets + ")");
        }
    }

    /** "15m", "30s", "500ms", "2h" or a number of ms, as Spark's Kafka source reads maxTriggerDelay. */
    static long parseDuration(String raw) {
        String t = raw.trim().toLowerCase(java.util.Locale.ROOT);
        try {
            if (t.endsWith("ms")) return Long.parseLong(t.substring(0, t.length() - 2).trim());
            if (t.endsWith("s")) return Long.parseLong(t.substring(0, t.length() - 1).trim()) * 1000L;
            if (t.endsWith("m")) return Long.parseLong(t.substring(0, t.length() - 1).trim()) * 60_000L;
            if (t.endsWith("h")) return Long.parseLong(t.substring(0, t.length() - 1).trim()) * 3_600_000L;
            return Long.parseLong(t);
        } catch (NumberFormatException e) {
            throw ReadOptions.bad("maxTriggerDelay", raw, "a duration such as '15m', '30s' or '500ms'");
        }
    }

    // ------------------------------------------------------------------ where the log is now

    /** Every partition's readable end now: its committed end, capped by its log end. */
    private SeglogSourceOffset latestAvailable() {
        Map<String, TreeMap<Integer, Long>> out = new TreeMap<>();
        List<PartitionLog> logs = new ArrayList<>();
        try {
            for (PartitionRange r : Planner.resolveAll(opts.asLatestRead(), ScanBounds.NONE, logs)) {
                out.computeIfAbsent(r.topic, k -> new TreeMap<>()).put(r.partition, r.end);
            }
        } finally {
            for (PartitionLog l : logs) l.close();
        }
        return new SeglogSourceOffset(out);
    }

    // ------------------------------------------------------------------ MicroBatchStream

    @Override
    public Offset initialOffset() {
        org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(checkpoint, INITIAL);
        try {
            FileSystem fs = file.getFileSystem(hadoopConf());
            if (fs.exists(file)) {
                try (FSDataInputStream in = fs.open(file)) {
                    return SeglogSourceOffset.fromJson(new String(in.readAllBytes(), StandardCharsets.UTF_8));
                }
            }
            SeglogSourceOffset initial = resolveInitial();
            fs.mkdirs(file.getParent());
            org.apache.hadoop.fs.Path tmp = new org.apache.hadoop.fs.Path(checkpoint, "." + INITIAL + ".tmp");
            try (OutputStream out = fs.create(tmp, true)) {
                out.write(initial.json().getBytes(StandardCharsets.UTF_8));
            }
            if (!fs.rename(tmp, file)) {      // another attempt wrote it first: that one wins
                fs.delete(tmp, false);
                try (FSDataInputStream in = fs.open(file)) {
                    return SeglogSourceOffset.fromJson(new String(in.readAllBytes(), StandardCharsets.UTF_8));
                }
            }
            return initial;
        } catch (IOException e) {
            throw new IllegalStateException("seglog source: cannot keep the initial offsets under " + checkpoint + ": " + e, e);
        }
    }

    private static Configuration hadoopConf() {
        return SparkSession.active().sparkContext().hadoopConfiguration();
    }

    /** The starting offsets of a new query: startingOffsets / startingTimestamp / startingOffsetsByTimestamp. */
    private SeglogSourceOffset resolveInitial() {
        Map<String, TreeMap<Integer, Long>> out = new TreeMap<>();
        List<PartitionLog> logs = new ArrayList<>();
        try {
            for (PartitionRange r : Planner.resolveAll(opts, ScanBounds.NONE, logs)) {
                out.computeIfAbsent(r.topic, k -> new TreeMap<>()).put(r.partition, r.start);
            }
        } finally {
            for (PartitionLog l : logs) l.close();
        }
        // Partitions without a folder yet (never written) start at 0.
        for (Map.Entry<String, List<Integer>> e : Planner.checkLayout(opts).entrySet()) {
            TreeMap<Integer, Long> parts = out.computeIfAbsent(e.getKey(), k -> new TreeMap<>());
            for (int p : e.getValue()) parts.putIfAbsent(p, 0L);
        }
        return new SeglogSourceOffset(out);
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

    @Override
    public void prepareForTriggerAvailableNow() {
        availableNowEnd = latestAvailable();
    }

    @Override
    public Offset latestOffset(Offset startOffset, ReadLimit limit) {
        SeglogSourceOffset start = (SeglogSourceOffset) startOffset;
        SeglogSourceOffset latest = latestAvailable();
        lastLatest = latest;
        if (availableNowEnd != null) latest = capTo(latest, availableNowEnd);
        // From where each partition goes on: its start, or (a new partition) 0 / its log start.
        Map<String, TreeMap<Integer, Long>> from = new TreeMap<>();
        long total = 0;
        for (Map.Entry<String, TreeMap<Integer, Long>> t : latest.offsets.entrySet()) {
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                long s = Math.min(start.get(t.getKey(), p.getKey(), 0L), p.getValue());
                from.computeIfAbsent(t.getKey(), k -> new TreeMap<>()).put(p.getKey(), s);
                total += Math.max(0, p.getValue() - s);
            }
        }
        ReadMaxRows max = null;
        ReadMinRows min = null;
        for (ReadLimit l : limit instanceof CompositeReadLimit ? ((CompositeReadLimit) limit).getReadLimits() : new ReadLimit[] {limit}) {
            if (l instanceof ReadMaxRows) max = (ReadMaxRows) l;
            if (l instanceof ReadMinRows) min = (ReadMinRows) l;
        }
        if (min != null && availableNowEnd == null && total < min.minRows()
                && System.currentTimeMillis() - lastTriggerMs < min.maxTriggerDelayMs()) {
            return start;      // not enough new offsets yet, and the delay has not passed: no batch
        }
        SeglogSourceOffset end = max == null || total <= max.maxRows() ? latest : rateLimit(from, latest, total, max.maxRows());
        if (!end.json().equals(start.json())) lastTriggerMs = System.currentTimeMillis();
        return end;
    }

    private static SeglogSourceOffset capTo(SeglogSourceOffset latest, SeglogSourceOffset cap) {
        Map<String, TreeMap<Integer, Long>> out = new TreeMap<>();
        for (Map.Entry<String, TreeMap<Integer, Long>> t : cap.offsets.entrySet()) {
            for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                long now = latest.get(t.getKey(), p.getKey(), p.getValue());
                out.computeIfAbsent(t.getKey(), k -> new TreeMap<>()).put(p.getKey(), Math.min(now, p.getValue()));
            }
        }
        return new SeglogSourceOffset(out);
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
        return new SeglogSourceOffset(out);
    }

    @Override
    public Offset reportLatestOffset() {
        return lastLatest;
    }

    @Override
    public InputPartition[] planInputPartitions(Offset startOffset, Offset endOffset) {
        SeglogSourceOffset start = (SeglogSourceOffset) startOffset;
        SeglogSourceOffset end = (SeglogSourceOffset) endOffset;
        Path root = Paths.get(opts.root);
        Map<String, Long> checkpointed = LogStartCheckpoint.read(root);
        List<PartitionLog> logs = new ArrayList<>();
        try {
            List<PartitionRange> ranges = new ArrayList<>();
            long total = 0;
            for (Map.Entry<String, TreeMap<Integer, Long>> t : end.offsets.entrySet()) {
                for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
                    String topic = t.getKey();
                    int partition = p.getKey();
                    long until = p.getValue();
                    long from = start.get(topic, partition, 0L);
                    if (!Files.isDirectory(root.resolve(topic + "-" + partition))) {
                        if (until > from) reportDataLoss(topic + "-" + partition + ": the partition folder is gone; offsets "
                            + from + " to " + (until - 1) + " cannot be read");
                        continue;
                    }
                    PartitionLog log = PartitionLog.open(root, topic, partition, checkpointed.getOrDefault(topic + "-" + partition, 0L));
                    logs.add(log);
                    if (from < log.logStartOffset() && from < until) {
                        reportDataLoss(Planner.dataLossMessage(topic, partition, from, log.logStartOffset()).substring(15));
                        from = Math.min(log.logStartOffset(), until);
                    }
                    if (until < from) {
                        reportDataLoss(topic + "-" + partition + ": the end offset " + until + " is below the start "
                            + from + " (the log was truncated)");
                        continue;
                    }
                    if (from < until) {
                        long bytes = log.byteSize(from, until);
                        total += bytes;
                        ranges.add(new PartitionRange(topic, partition, from, until, bytes, log));
                    }
                }
            }
            List<List<Slice>> tasks = Planner.pack(ranges, Planner.targetTaskBytes(total, opts, SeglogScan.cores()));
            InputPartition[] out = new InputPartition[tasks.size()];
            for (int i = 0; i < out.length; i++) out[i] = new SeglogInputPartition(tasks.get(i).toArray(new Slice[0]));
            return out;
        } finally {
            for (PartitionLog l : logs) l.close();
        }
    }

    /** failOnDataLoss=true: fail naming the offsets; false: go on from what is left (Spark's Kafka source). */
    private void reportDataLoss(String what) {
        if (opts.failOnDataLoss) {
            throw new DataLossException("seglog source: " + what + ". Some data may have been lost. "
                + "Set failOnDataLoss=false to go on from the offsets that remain.");
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

    @Override
    public void commit(Offset end) {
        // Nothing to release: the log is read in place, and retention does not wait for readers.
    }

    @Override
    public void stop() {
    }

    /** Offsets behind the latest readable offsets, in StreamingQueryProgress (as Spark's Kafka source). */
    @Override
    public Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
        Map<String, String> out = new HashMap<>();
        if (latestConsumedOffset.isEmpty() || lastLatest == null) return out;
        SeglogSourceOffset consumed = (SeglogSourceOffset) latestConsumedOffset.get();
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
        return "seglog[" + opts.root + ":" + String.join(",", opts.topics) + "]";
    }
}
