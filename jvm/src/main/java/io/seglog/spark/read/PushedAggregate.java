package io.seglog.spark.read;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import io.seglog.spark.format.CorruptLogException;
import io.seglog.spark.format.PartitionLog;
import io.seglog.spark.format.Segment;

/**
 * A pushed-down aggregate (SupportsPushDownAggregates): COUNT(*) (or COUNT of a column that is never null),
 * MIN and MAX of {@code offset} and {@code timestamp}, grouped by {@code topic} and/or {@code partition} or not
 * at all, over the read's range and pushed filters, answered on the driver (a LocalScan: no job) from the
 * same plan ({@link Planner#resolveAll}) and the same batch walk ({@link RecordCursor#nextBatch}) as a read,
 * so it is exact wherever a read is: control batches and aborted transactions are not counted
 * (read_committed), an open transaction ends the count, a compacted topic's gaps are not counted.
 *
 * What it reads: by default every batch it walks is checked whole (its CRC, as a read checks it: a flipped byte
 * is reported by every reader, docs/spec.md §11). With checkCrcs=false (Kafka's check.crcs) the walk reads the
 * 61-byte headers only, each checked for structure as a read checks it ({@code Segment.Batches#checkingCrcs}), and
 * reads the body of just the batches it decodes. On a dense log with neither timestamp aggregates nor a row filter
 * the count is arithmetic on offsets (every offset of a data batch is a record there; each batch's record count must
 * agree, else the batch is reported), no record decoded. Otherwise a batch wholly inside the range whose every
 * record passes takes its count and largest timestamp from its header; the rest (a range's two ends, a row filter,
 * MIN(timestamp), a compacted topic's offsets) are decoded.
 */
final class PushedAggregate implements Serializable {
    /** Each aggregate, named as its output column (so a plan shows what was pushed: RelationV2[partition, COUNT(*)]). */
    enum Kind {
        COUNT("COUNT(*)"), MIN_OFFSET("MIN(offset)"), MAX_OFFSET("MAX(offset)"), MIN_TIMESTAMP("MIN(timestamp)"),
        MAX_TIMESTAMP("MAX(timestamp)");

        final String column;

        Kind(String column) {
            this.column = column;
        }
    }
    private static final Set<String> NEVER_NULL = Set.of("topic", "partition", "offset", "timestamp", "timestampType");

    final List<String> groupBy;     // "topic" / "partition", in Spark's order
    final List<Kind> aggregates;
    final String described;

    private PushedAggregate(List<String> groupBy, List<Kind> aggregates, String described) {
        this.groupBy = groupBy;
        this.aggregates = aggregates;
        this.described = described;
    }

    /** The aggregate seglog can answer exactly, or null (Spark then aggregates the rows itself). */
    static PushedAggregate of(Aggregation a) {
        List<String> groupBy = new ArrayList<>();
        for (Expression e : a.groupByExpressions()) {
            String c = column(e);
            if (!"topic".equals(c) && !"partition".equals(c)) return null;
            groupBy.add(c);
        }
        List<Kind> kinds = new ArrayList<>();
        for (AggregateFunc f : a.aggregateExpressions()) {
            Kind k = kind(f);
            if (k == null) return null;
            kinds.add(k);
        }
        return new PushedAggregate(groupBy, kinds, a.toString());
    }

    /** Per partition: its record count, offsets' and timestamps' bounds (the SQL catalog's DESCRIBE, TopicStats). */
    static PushedAggregate perPartition() {
        return new PushedAggregate(List.of("partition"), List.of(Kind.COUNT, Kind.MIN_OFFSET, Kind.MAX_OFFSET,
            Kind.MIN_TIMESTAMP, Kind.MAX_TIMESTAMP), "per partition");
    }

    private static String column(Expression e) {
        if (!(e instanceof NamedReference)) return null;
        String[] names = ((NamedReference) e).fieldNames();
        return names.length == 1 ? names[0] : null;
    }

    private static Kind kind(AggregateFunc f) {
        if (f instanceof CountStar) return Kind.COUNT;
        if (f instanceof Count) {
            Count c = (Count) f;
            return !c.isDistinct() && NEVER_NULL.contains(column(c.column())) ? Kind.COUNT : null;
        }
        String c = f instanceof Min ? column(((Min) f).column()) : f instanceof Max ? column(((Max) f).column()) : null;
        if ("offset".equals(c)) return f instanceof Min ? Kind.MIN_OFFSET : Kind.MAX_OFFSET;
        if ("timestamp".equals(c)) return f instanceof Min ? Kind.MIN_TIMESTAMP : Kind.MAX_TIMESTAMP;
        return null;
    }

    /** The scan's output: the group-by columns, then one column per aggregate (Spark's order). */
    StructType schema() {
        StructType s = new StructType();
        for (String g : groupBy) s = s.add(g, g.equals("topic") ? DataTypes.StringType : DataTypes.IntegerType, false);
        for (int i = 0; i < aggregates.size(); i++) {
            Kind k = aggregates.get(i);
            s = s.add(k.column, k == Kind.COUNT ? DataTypes.LongType
                : k == Kind.MIN_TIMESTAMP || k == Kind.MAX_TIMESTAMP ? DataTypes.TimestampType : DataTypes.LongType,
                k != Kind.COUNT);
        }
        return s;
    }

    private boolean wants(Kind k) {
        return aggregates.contains(k);
    }

    /** One group's running answer. */
    static final class Totals {
        long count;
        long minOffset = Long.MAX_VALUE, maxOffset = Long.MIN_VALUE;
        long minTimestamp = Long.MAX_VALUE, maxTimestamp = Long.MIN_VALUE;

        void add(Totals o) {
            count += o.count;
            minOffset = Math.min(minOffset, o.minOffset);
            maxOffset = Math.max(maxOffset, o.maxOffset);
            minTimestamp = Math.min(minTimestamp, o.minTimestamp);
            maxTimestamp = Math.max(maxTimestamp, o.maxTimestamp);
        }

        void record(long offset, long timestamp) {
            count++;
            minOffset = Math.min(minOffset, offset);
            maxOffset = Math.max(maxOffset, offset);
            minTimestamp = Math.min(minTimestamp, timestamp);
            maxTimestamp = Math.max(maxTimestamp, timestamp);
        }
    }

    /** The answer rows, one per group that holds records (one row, even for no records, without a group-by). */
    InternalRow[] rows(ReadOptions opts, ScanBounds bounds) {
        DataLoss loss = new DataLoss(opts.failOnDataLoss);
        List<PartitionRange> ranges = Planner.retrying("aggregating " + opts.selection.describe(), loss, () -> {
            List<PartitionLog> logs = new ArrayList<>();
            try {
                return Planner.resolveAll(opts, bounds, logs, loss, LogLooks.fresh(), true);
            } finally {
                for (PartitionLog l : logs) l.close();
            }
        });
        // The partitions' walks run side by side (each its own cursor and files); their answers are taken in
        // range order, so groups come out as a sequential walk would make them.
        // A walk runs under the caller's session (a tiered root is read with its Hadoop configuration).
        List<java.util.concurrent.Future<Totals>> parts = new ArrayList<>(ranges.size());
        scala.Option<org.apache.spark.sql.SparkSession> caller = org.apache.spark.sql.SparkSession.getActiveSession();
        for (PartitionRange r : ranges) {
            Slice slice = new Slice(r.topic, r.partition, r.start, r.end, r.bound);
            boolean dense = r.log.dense;
            parts.add(WALKERS.submit(() -> {
                if (caller.isDefined()) org.apache.spark.sql.SparkSession.setActiveSession(caller.get());
                else org.apache.spark.sql.SparkSession.clearActiveSession();
                try {
                    return totals(opts, bounds, slice, dense);
                } finally {
                    org.apache.spark.sql.SparkSession.clearActiveSession();
                }
            }));
        }
        Map<List<Object>, Totals> groups = new LinkedHashMap<>();
        try {
            for (int i = 0; i < ranges.size(); i++) {
                PartitionRange r = ranges.get(i);
                List<Object> key = new ArrayList<>();
                for (String g : groupBy) key.add(g.equals("topic") ? r.topic : (Object) r.partition);
                Totals t = answer(parts.get(i));
                if (t.count > 0) groups.computeIfAbsent(key, k -> new Totals()).add(t);
            }
        } finally {
            for (java.util.concurrent.Future<Totals> f : parts) f.cancel(true);
        }
        if (groupBy.isEmpty() && groups.isEmpty()) groups.put(List.of(), new Totals());
        List<InternalRow> out = new ArrayList<>();
        for (Map.Entry<List<Object>, Totals> e : groups.entrySet()) out.add(row(e.getKey(), e.getValue()));
        return out.toArray(new InternalRow[0]);
    }

    /** Driver threads for the partitions' walks: one per core (the walk reads and checks bytes: CPU-bound). */
    private static final java.util.concurrent.ExecutorService WALKERS = java.util.concurrent.Executors.newFixedThreadPool(
        Math.max(1, Runtime.getRuntime().availableProcessors()), r -> {
            Thread t = new Thread(r, "seglog-pushed-aggregate");
            t.setDaemon(true);
            return t;
        });

    /** A walk's answer; its failure is rethrown as it was raised (a typed seglog error naming the partition). */
    private static Totals answer(java.util.concurrent.Future<Totals> f) {
        try {
            return f.get();
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException) throw (RuntimeException) c;
            if (c instanceof Error) throw (Error) c;
            throw new IllegalStateException(c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while aggregating", e);
        }
    }

    private InternalRow row(List<Object> key, Totals t) {
        Object[] values = new Object[groupBy.size() + aggregates.size()];
        for (int i = 0; i < key.size(); i++) {
            Object k = key.get(i);
            values[i] = k instanceof String ? UTF8String.fromString((String) k) : k;
        }
        for (int i = 0; i < aggregates.size(); i++) {
            Object v;
            boolean none = t.count == 0;
            switch (aggregates.get(i)) {
                case COUNT: v = t.count; break;
                case MIN_OFFSET: v = none ? null : t.minOffset; break;
                case MAX_OFFSET: v = none ? null : t.maxOffset; break;
                case MIN_TIMESTAMP: v = none ? null : micros(t.minTimestamp); break;
                default: v = none ? null : micros(t.maxTimestamp); break;
            }
            values[key.size() + i] = v;
        }
        return new GenericInternalRow(values);
    }

    private static long micros(long ms) {
        try {
            return Math.multiplyExact(ms, 1000L);
        } catch (ArithmeticException e) {
            throw new ArithmeticException("seglog source: timestamp " + ms + " ms is outside Spark's timestamp range");
        }
    }

    /** One partition range's answer, from one batch walk (see the class comment for what it reads). */
    private Totals totals(ReadOptions opts, ScanBounds bounds, Slice slice, boolean dense) {
        Totals t = new Totals();
        if (slice.start >= slice.end) return t;
        boolean filtering = bounds.needsRowFilter();
        boolean timestamps = wants(Kind.MIN_TIMESTAMP) || wants(Kind.MAX_TIMESTAMP);
        boolean plainArithmetic = dense && !filtering && !timestamps;
        try (RecordCursor cursor = RecordCursor.forAggregates(opts, slice)) {
            FileChannelRecordBatch b;
            while ((b = cursor.nextBatch()) != null) {
                long from = Math.max(cursor.batchFrom, b.baseOffset());
                long to = Math.min(slice.end, b.lastOffset() + 1);
                // a compressed batch's count is known once its records are read (Segment's walk bounds every count
                // by what the batch can hold, but a compressed one's only by the inflation ceiling)
                boolean countKnown = b.compressionType() == org.apache.kafka.common.record.CompressionType.NONE;
                if (plainArithmetic && countKnown) {
                    Integer n = b.countOrNull();
                    if (n == null || n != b.lastOffset() - b.baseOffset() + 1) {
                        throw new CorruptLogException(slice + ": the batch at offset " + b.baseOffset() + " (position "
                            + b.position() + "): " + Segment.denseCountDisagrees(b));
                    }
                    t.count += to - from;
                    t.minOffset = Math.min(t.minOffset, from);
                    t.maxOffset = Math.max(t.maxOffset, to - 1);
                    continue;
                }
                boolean whole = from == b.baseOffset() && to == b.lastOffset() + 1;
                boolean offsetsKnown = dense || !(wants(Kind.MIN_OFFSET) || wants(Kind.MAX_OFFSET));
                if (whole && !filtering && offsetsKnown && countKnown && !wants(Kind.MIN_TIMESTAMP)) {
                    Integer n = b.countOrNull();
                    if (n == null || n == 0) continue;
                    t.count += n;
                    t.minOffset = Math.min(t.minOffset, from);
                    t.maxOffset = Math.max(t.maxOffset, to - 1);
                    t.maxTimestamp = Math.max(t.maxTimestamp, b.maxTimestamp());
                    continue;
                }
                for (Iterator<Record> rs = cursor.recordsOf(b); rs.hasNext(); ) {
                    Record r = rs.next();
                    long off = r.offset();
                    if (off < from || off >= to) continue;
                    if (filtering && !bounds.keeps(off, r.timestamp())) continue;
                    t.record(off, r.timestamp());
                }
            }
        }
        return t;
    }
}
