package io.seglog.spark.write;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.unsafe.Platform;

import io.seglog.spark.format.StagedSegment;
import io.seglog.spark.format.TopicCatalog;
import io.seglog.spark.format.TopicMetadata;

/**
 * One write task: every row to its log partition's stager (io.seglog.spark.write.SegmentStager), staged
 * segments under {@code <staging>/t<partition>-<taskId>/}; nothing is put in a partition folder here (the
 * driver publishes and commits, {@link DriverCommit}). The rules are the Python sink's (docs/spec.md §7):
 * <ul>
 * <li>partition: the {@code partition} column (in range, or the task fails naming the row's value), else
 *   Kafka's default partitioner (murmur2 of the key), else, for a null key, {@code pmod(xxhash64(value,
 *   timestamp), partitions)} as Spark's SQL computes it (deterministic: a retried task sends every row to
 *   the same partition);</li>
 * <li>timestamp: the column (a timestamp_ntz is a wall time in the session time zone), else the
 *   write's {@code now}; LogAppendTime stamps {@code now}; before/after.max.ms checked against it, and a
 *   record out of range goes to its topic's quarantine topic under policy {@code quarantine} (routed before
 *   its partition is chosen: it is partitioned, and its key checked, as a record of the quarantine topic);</li>
 * <li>a compacted topic takes only keyed records (MissingKeyError, docs/spec.md §3.9), judged where the
 *   record lands (a keyless record routed to a compacted quarantine topic is refused);</li>
 * <li>topics: as {@link TopicRequest} finds or plans them; planned ones are reported for the driver to create.</li>
 * </ul>
 * A refused record fails the task with a message naming it ({@code seglog <Python error name>: ...}), which
 * SegmentLogSink turns into the typed error of seglog/errors.py.
 */
final class SeglogDataWriter implements DataWriter<InternalRow> {
    private final WritePlan plan;
    private final int task;
    private final TaskFolder dir;   // made once, by its first staged segment
    private final Map<String, TopicTarget> targets = new HashMap<>();
    private final Map<String, TopicTarget> quarantines = new HashMap<>();   // by source topic
    private final List<StagedMessage.NewTopic> newTopics = new ArrayList<>();
    private final Map<String, SegmentStager[]> stagers = new HashMap<>();
    private final List<String[]> order = new ArrayList<>();    // (topic, partition) in first-written order
    private final BackgroundSync sync = new BackgroundSync();
    private final BatchRowsBudget rowsBudget;   // batch rows sent with the report
    private final InlineSegmentBudget inline;   // small segments sent whole with the report
    private final BytesView keyView = new BytesView();
    private final BytesView value = new BytesView();
    private final ZoneId sessionZone;
    private int staged;
    private long nullTopicRows;   // counted, not staged: the driver refuses the write naming the count

    /** {@code tasks}: how many tasks the write has (its reports share one bound: BatchRowsBudget). */
    SeglogDataWriter(WritePlan plan, int task, long taskId, int tasks) {
        this.plan = plan;
        this.task = task;
        this.rowsBudget = new BatchRowsBudget(tasks);
        this.inline = new InlineSegmentBudget(tasks);
        // taskId is unique in the application: a zombie attempt never writes into the published attempt's folder
        this.dir = new TaskFolder(Path.of(plan.staging, "t" + task + "-" + taskId));
        this.sessionZone = ZoneId.of(plan.sessionTimeZone);
        if (plan.target != null) {
            targets.put(plan.target.name, plan.target);
            // the topic option's topic, planned but not recorded yet, is created by the commit (DriverCommit.topic)
        }
    }

    @Override
    public void write(InternalRow row) throws IOException {
        if (plan.skip) return;   // this txnVersion is committed already: the write is a no-op
        InputColumns c = plan.columns;
        if (plan.target == null && row.isNullAt(c.topic)) {
            nullTopicRows++;
            return;
        }
        TopicTarget t = target(row);
        byte[] key = c.key < 0 ? null : bytes(row, c.key, keyView).array();   // reused array: used within this row
        bytes(row, c.value, value);
        long ts;
        if (t.stage.logAppendTime || c.timestamp < 0 || row.isNullAt(c.timestamp)) {
            ts = plan.now;
        } else {
            long micros = row.getLong(c.timestamp);
            if (c.timestampNtz) micros = ntzToUtcMicros(micros);
            ts = Math.floorDiv(micros, 1000);
            if (ts < 0) {
                throw new InvalidRecordException("seglog InvalidRecordError: topic '" + t.name + "': a record (key "
                        + SegmentStager.showKey(key) + ") has a timestamp " + ts + " ms before the epoch "
                        + "(1970-01-01T00:00:00Z); Kafka records cannot hold such times");
            }
            String broken = t.stage.timeLimitBroken(ts, plan.now);
            if (broken != null && t.quarantine != null) {
                t = quarantine(t);   // routed against the plan's now: every task and retry routes alike
                broken = t.quarantine == null ? t.stage.timeLimitBroken(ts, plan.now) : null;
            }
            if (broken != null) {
                throw new TimestampOutOfRangeException("seglog TimestampOutOfRangeError: topic '" + t.name + "': a record (key "
                        + SegmentStager.showKey(key) + ") has timestamp " + ts + ", " + (ts - plan.now) + " ms from now ("
                        + plan.now + "); " + broken + "; the batch was refused whole, nothing was written");
            }
        }
        int partition = partition(row, t, key);
        if (key == null && t.compacted) {
            throw new MissingKeyException("seglog MissingKeyError: topic '" + t.name + "' is compacted (cleanup.policy "
                    + "holds 'compact'): " + (c.key < 0 ? "every record needs a key and the input has no 'key' column"
                    : "a record has a null key; every record needs a key") + "; nothing was written");
        }
        byte[][] hKeys = null;
        byte[][] hValues = null;
        if (c.headers >= 0 && !row.isNullAt(c.headers)) {
            ArrayData hs = row.getArray(c.headers);
            int n = hs.numElements();
            hKeys = new byte[n][];
            hValues = new byte[n][];
            for (int i = 0; i < n; i++) {
                InternalRow h = hs.getStruct(i, 2);
                if (h == null || h.isNullAt(0)) {
                    throw new InvalidRecordException("seglog InvalidRecordError: topic '" + t.name + "': a record (key "
                            + SegmentStager.showKey(key) + ") has a header with a null key");
                }
                hKeys[i] = h.getUTF8String(0).getBytes();
                hValues[i] = h.isNullAt(1) ? null : h.getBinary(1);
            }
        }
        SegmentStager stager = stager(t, partition);
        try {
            stager.add(ts, key, value, hKeys, hValues);
        } catch (IllegalArgumentException e) {
            throw named(t, e);
        }
    }

    /** The stager's refusal (a batch over max.message.bytes names its record) with the topic named. */
    private static RuntimeException named(TopicTarget t, IllegalArgumentException e) {
        String m = e.getMessage();
        String tag = "seglog RecordTooLargeError: ";
        if (!(e instanceof RecordTooLargeException) || m == null || !m.startsWith(tag)) return e;
        return new RecordTooLargeException(tag + "topic '" + t.name + "': " + m.substring(tag.length()) + "; nothing was written", e);
    }

    private TopicTarget target(InternalRow row) {
        if (plan.target != null) return plan.target;
        String name = row.getUTF8String(plan.columns.topic).toString();
        TopicTarget t = targets.get(name);
        if (t == null) {
            t = plannedOrExisting(plan.topics.named(name, "a row's 'topic' column"));
            targets.put(name, t);
        }
        return t;
    }

    private TopicTarget quarantine(TopicTarget source) {
        TopicTarget q = quarantines.get(source.name);
        if (q == null) {
            q = targets.get(source.quarantine);
            if (q == null) {
                q = plannedOrExisting(plan.topics.quarantine(source.quarantine, source));
                targets.put(q.name, q);
            }
            quarantines.put(source.name, q);
        }
        return q;
    }

    /** A topic's target; a planned one (not recorded yet) is reported for the driver to create. */
    private TopicTarget plannedOrExisting(TopicMetadata meta) {
        if (meta.createdMs() == 0 && TopicCatalog.load(Path.of(plan.root), meta.name()).isEmpty()) {
            newTopics.add(new StagedMessage.NewTopic(meta.name(), meta.partitions(), new java.util.TreeMap<>(meta.config())));
        }
        return TopicTarget.of(meta);
    }

    private int partition(InternalRow row, TopicTarget t, byte[] key) {
        InputColumns c = plan.columns;
        if (c.partition >= 0 && !row.isNullAt(c.partition)) {
            int p = c.partitionType instanceof ByteType ? row.getByte(c.partition)
                    : c.partitionType instanceof ShortType ? row.getShort(c.partition) : row.getInt(c.partition);
            if (p < 0 || p >= t.partitions) {
                throw new SeglogWriteException("seglog write: partition out of range: topic " + t.name + " has " + t.partitions
                        + " partitions (0 to " + (t.partitions - 1) + "); the batch has a row with partition " + p
                        + "; nothing was written");
            }
            return p;
        }
        if (key != null) return Murmur2Partition.partition(key, t.partitions);
        // Spark's xxhash64(value, timestamp): seed 42, each non-null column in turn
        long h = 42L;
        if (!value.isNull()) {
            byte[] v = value.array();
            h = XXH64.hashUnsafeBytes(v, Platform.BYTE_ARRAY_OFFSET, v.length, h);
        }
        if (c.timestamp >= 0 && !row.isNullAt(c.timestamp)) h = XXH64.hashLong(row.getLong(c.timestamp), h);
        return (int) Math.floorMod(h, (long) t.partitions);
    }

    /** A binary or string field's bytes (an UnsafeRow lays both out alike). */
    private static BytesView bytes(InternalRow row, int ordinal, BytesView view) {
        if (row.isNullAt(ordinal) || row instanceof UnsafeRow) return view.at(row, ordinal);
        Object v = row.get(ordinal, null);
        return view.at(v instanceof byte[] ? (byte[]) v : row.getUTF8String(ordinal).getBytes());
    }

    private long ntzToUtcMicros(long micros) {
        LocalDateTime wall = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
                (int) Math.floorMod(micros, 1_000_000L) * 1000, ZoneOffset.UTC);
        Instant at = wall.atZone(sessionZone).toInstant();
        return Math.addExact(Math.multiplyExact(at.getEpochSecond(), 1_000_000L), at.getNano() / 1000);
    }

    private SegmentStager stager(TopicTarget t, int partition) throws IOException {
        SegmentStager[] byPartition = stagers.get(t.name);
        if (byPartition == null) {
            byPartition = new SegmentStager[t.partitions];
            stagers.put(t.name, byPartition);
        }
        SegmentStager s = byPartition[partition];
        if (s == null) {
            // a staged segment the driver renames in is forced by the task (durable); a smaller one is copied,
            // and the copy is forced by the publisher (StagedPublisher); within the task's InlineSegmentBudget, a
            // smaller one is held in memory and sent with the report: no staging folder or file for it
            s = new SegmentStager(dir, "s" + staged++, t.stage, System.currentTimeMillis(), sync, plan.renameMinBytes,
                    rowsBudget, inline);
            byPartition[partition] = s;
            order.add(new String[] {t.name, Integer.toString(partition)});
        }
        return s;
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        for (Map.Entry<String, SegmentStager[]> e : stagers.entrySet()) {
            for (SegmentStager s : e.getValue()) {
                if (s == null) continue;
                try {
                    s.finish();
                } catch (IllegalArgumentException refused) {
                    throw named(targets.get(e.getKey()), refused);
                }
            }
        }
        sync.finish();   // every staged segment is on disk when the task reports it
        List<StagedMessage.Output> outputs = new ArrayList<>();
        for (String[] tp : order) {
            SegmentStager s = stagers.get(tp[0])[Integer.parseInt(tp[1])];
            List<StagedSegment> segs = new ArrayList<>();
            for (SegmentStager.Staged g : s.segments()) {
                segs.add(g.reported());
            }
            outputs.add(new StagedMessage.Output(tp[0], Integer.parseInt(tp[1]), s.records(), segs));
        }
        return new StagedMessage(task, outputs, newTopics, nullTopicRows);
    }

    @Override
    public void abort() {
        for (SegmentStager[] ss : stagers.values()) {
            for (SegmentStager s : ss) if (s != null) s.abort();
        }
    }

    @Override
    public void close() {
        sync.close();
    }
}
