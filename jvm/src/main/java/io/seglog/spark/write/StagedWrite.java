package io.seglog.spark.write;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;

/**
 * The stager as a job of its own, for the differential tests (tests/sink/jvm_stage.py over py4j, and
 * {@code tools.FormatTool}): every input task encodes its own rows, per log partition, into staged segments
 * under {@code <staging>/t<task>-<taskAttemptId>/}, and reports them as JSON; the tests publish them with the
 * Python core and compare. Writes go through {@code format("seglog")} ({@link SeglogDataWriter}, the same
 * {@link SegmentStager}).
 *
 * <p>Input columns, by position (the driver's projection, tests/sink/jvm_stage.py): {@code _base int} (the
 * first slot of the row's topic in the plan), {@code _n int} (its partition count), {@code _p int}
 * (the partition; null: Kafka's default partitioner of the key, murmur2 from kafka-clients),
 * {@code key binary}, {@code value binary}, {@code ts long} (microseconds since the epoch, null: now),
 * {@code headers array<struct<key string, value binary>>}.
 */
public final class StagedWrite {
    private StagedWrite() {}

    /** What every task needs, parsed once on the driver. */
    static final class Plan implements Serializable {
        private static final long serialVersionUID = 1L;
        final String staging;
        final StageConfig[] slots;
        final long now;   // the driver's time for the delivery (ms): one append time for every task
        final long renameMinBytes;   // staged segments this large are renamed in: made durable by the task

        Plan(String staging, StageConfig[] slots, long now, long renameMinBytes) {
            this.staging = staging;
            this.slots = slots;
            this.now = now;
            this.renameMinBytes = renameMinBytes;
        }
    }

    static Plan parse(String planJson) throws IOException {
        JsonNode root = new ObjectMapper().readTree(planJson);
        JsonNode slots = root.get("slots");
        StageConfig[] configs = new StageConfig[slots.size()];
        for (int i = 0; i < configs.length; i++) {
            JsonNode s = slots.get(i);
            configs[i] = new StageConfig(s.get("segment.bytes").asLong(), s.get("segment.index.bytes").asInt(),
                    s.get("index.interval.bytes").asLong(), s.get("segment.ms").asLong(),
                    s.get("max.message.bytes").asInt(), s.get("max_batch_bytes").asInt(),
                    s.get("log_append_time").asBoolean(), s.get("message.timestamp.before.max.ms").asLong(),
                    s.get("message.timestamp.after.max.ms").asLong(), s.get("codec").asInt());
        }
        return new Plan(root.get("staging").asText(), configs, root.get("now").asLong(),
                root.get("rename_min_bytes").asLong());
    }

    /**
     * Run the write job over {@code df} (a classic Dataset with the five columns above); returns one
     * JSON report per input partition (its successful attempt's staged segments).
     */
    public static String[] run(Object df, String planJson) throws IOException {
        Plan plan = parse(planJson);
        io.seglog.spark.format.GroupShared.createScratchDirectories(Paths.get(plan.staging));   // the driver's, as a run's
        JavaRDD<InternalRow> rows = io.seglog.spark.SparkLines.queryExecution(df).toRdd().toJavaRDD();
        List<String> reports = rows.mapPartitions(it -> Collections.singletonList(writeTask(plan, it)).iterator(),
                false).collect();
        return reports.toArray(new String[0]);
    }

    /** One task's staging outside a Spark job (the format tests' tool stages rows it makes itself). */
    public static String writeRows(String planJson, Iterator<InternalRow> rows) throws IOException {
        Plan plan = parse(planJson);
        io.seglog.spark.format.GroupShared.createScratchDirectories(Paths.get(plan.staging));   // tasks make only their own folder
        return writeTask(plan, rows);
    }

    /** One task: every row to its slot's stager; the report names the staged segments. */
    static String writeTask(Plan plan, Iterator<InternalRow> it) throws IOException {
        TaskContext ctx = TaskContext.get();
        int task = ctx == null ? 0 : ctx.partitionId();
        int attempt = ctx == null ? 0 : ctx.attemptNumber();
        // taskAttemptId is unique in the application: a zombie attempt of an earlier stage attempt
        // can never write into the folder of the attempt whose report is published
        long attemptId = ctx == null ? 0 : ctx.taskAttemptId();
        TaskFolder dir = new TaskFolder(Paths.get(plan.staging, "t" + task + "-" + attemptId));   // made once
        // One "now" per delivery, the driver's (docs/internals.md, "jvm/"): a LogAppendTime stamp, a null
        // timestamp and the before/after.max.ms check are the same in every task and every retry.
        long now = plan.now;
        SegmentStager[] stagers = new SegmentStager[plan.slots.length];   // by slot: no map lookup per row
        BytesView keyView = new BytesView();
        BytesView value = new BytesView();
        boolean ok = false;
        try (BackgroundSync sync = new BackgroundSync()) {
            while (it.hasNext()) {
                InternalRow row = it.next();
                byte[] key = keyView.at(row, 3).array();   // reused array: used up within this row
                int partition;
                if (!row.isNullAt(2)) {
                    partition = row.getInt(2);
                } else if (key != null) {
                    partition = Murmur2Partition.partition(key, row.getInt(1));
                } else {
                    throw new IllegalStateException("seglog: a row with a null key and no partition");
                }
                int slot = row.getInt(0) + partition;
                StageConfig cfg = plan.slots[slot];
                SegmentStager stager = stagers[slot];
                if (stager == null) {
                    stager = new SegmentStager(dir, "s" + slot, cfg, System.currentTimeMillis(), sync,
                            plan.renameMinBytes, null);
                    stagers[slot] = stager;
                }
                value.at(row, 4);
                long ts;
                if (cfg.logAppendTime) {
                    ts = now;
                } else if (row.isNullAt(5)) {
                    ts = now;
                } else {
                    ts = row.getLong(5) / 1000;
                    if (ts < 0) {
                        throw new IllegalArgumentException("seglog InvalidRecordError: a record has a timestamp " + ts
                                + " ms before the epoch (1970-01-01T00:00:00Z); Kafka records cannot hold such times");
                    }
                    checkTimestamp(ts, now, cfg);
                }
                byte[][] hKeys = null;
                byte[][] hValues = null;
                if (!row.isNullAt(6)) {
                    ArrayData hs = row.getArray(6);
                    int n = hs.numElements();
                    hKeys = new byte[n][];
                    hValues = new byte[n][];
                    for (int i = 0; i < n; i++) {
                        InternalRow h = hs.getStruct(i, 2);
                        if (h == null || h.isNullAt(0)) {
                            throw new IllegalArgumentException(
                                    "seglog InvalidRecordError: a record has a header with a null key");
                        }
                        hKeys[i] = h.getUTF8String(0).getBytes();
                        hValues[i] = h.isNullAt(1) ? null : h.getBinary(1);
                    }
                }
                stager.add(ts, key, value, hKeys, hValues);
            }
            for (SegmentStager s : stagers) {
                if (s != null) {
                    s.finish();
                }
            }
            sync.finish();   // every staged segment to be renamed in is on disk when the task reports it
            ok = true;
        } finally {
            if (!ok) {   // (the sync thread is stopped by now: try-with-resources closes before finally)
                for (SegmentStager s : stagers) {
                    if (s != null) {
                        s.abort();
                    }
                }
            }
        }
        return report(task, attempt, stagers);
    }

    /** Log._append's check (KIP-937): CreateTime timestamps within before/after.max.ms of now. */
    static void checkTimestamp(long ts, long now, StageConfig cfg) {
        String which = cfg.timeLimitBroken(ts, now);
        if (which != null) {
            throw new IllegalArgumentException("seglog TimestampOutOfRangeError: a record has timestamp " + ts + ", "
                    + (ts - now) + " ms from now (" + now + "); " + which);
        }
    }

    private static String report(int task, int attempt, SegmentStager[] stagers) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\"task\":").append(task).append(",\"attempt\":").append(attempt).append(",\"outputs\":[");
        boolean first = true;
        for (int slot = 0; slot < stagers.length; slot++) {
            SegmentStager s = stagers[slot];
            if (s == null) {
                continue;
            }
            if (!first) {
                sb.append(',');
            }
            first = false;
            sb.append("{\"slot\":").append(slot).append(",\"records\":").append(s.records())
                    .append(",\"bytes\":").append(s.bytes()).append(",\"segments\":[");
            List<SegmentStager.Staged> segs = new ArrayList<>(s.segments());
            for (int i = 0; i < segs.size(); i++) {
                SegmentStager.Staged g = segs.get(i);
                if (i > 0) {
                    sb.append(',');
                }
                sb.append("{\"stem\":\"").append(jsonEscape(g.stem)).append("\",\"size\":").append(g.size)
                        .append(",\"records\":").append(g.records).append(",\"batches\":").append(g.batches)
                        .append(",\"durable\":").append(g.durable).append('}');
            }
            sb.append("]}");
        }
        return sb.append("]}").toString();
    }

    private static String jsonEscape(String s) {
        StringBuilder sb = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }
}
