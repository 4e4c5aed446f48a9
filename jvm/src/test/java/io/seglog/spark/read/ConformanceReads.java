package io.seglog.spark.read;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import io.seglog.spark.format.PartitionLog;

/**
 * The read path's package-private pieces, for the conformance runner (io.seglog.spark.conformance.ConformanceTest,
 * docs/internals.md, "Conformance corpus"): a batch read's plan of one partition ({@link Planner#resolve}, from the
 * earliest offset to the latest, as {@code spark.read.format("seglog")} plans it) and its records through either
 * output's partition reader (rows, or columnar batches), with a given isolation level.
 */
public final class ConformanceReads {
    private ConformanceReads() {}

    // Range and Row are final classes, not records: the conformance runners are Java 11 source, since
    // tests/jvm_conformance.py compiles them for the JVM that runs them (Spark 3.5's line runs on Java 11).

    /** [start, end) of a read from earliest to latest, and its bound (the committed end the read judges up to). */
    public static final class Range {
        private final long start, end, bound;

        Range(long start, long end, long bound) {
            this.start = start;
            this.end = end;
            this.bound = bound;
        }

        public long start() { return start; }
        public long end() { return end; }
        public long bound() { return bound; }
    }

    /** One record as the cursor returns it; a null key or value, and a null header value, stay null. */
    public static final class Row {
        private final long offset, timestamp;
        private final byte[] key, value;
        private final List<Map.Entry<String, byte[]>> headers;

        Row(long offset, long timestamp, byte[] key, byte[] value, List<Map.Entry<String, byte[]>> headers) {
            this.offset = offset;
            this.timestamp = timestamp;
            this.key = key;
            this.value = value;
            this.headers = headers;
        }

        public long offset() { return offset; }
        public long timestamp() { return timestamp; }
        public byte[] key() { return key; }
        public byte[] value() { return value; }
        public List<Map.Entry<String, byte[]>> headers() { return headers; }
    }

    private static ReadOptions options(Path root, String topic, String isolation) {
        return ReadOptions.parse(Map.of("path", root.toString(), "topic", topic, "kafka.isolation.level", isolation));
    }

    public static Range plan(Path root, String topic, int partition, PartitionLog log, long committed) {
        PartitionRange r = Planner.resolve(options(root, topic, ReadOptions.READ_UNCOMMITTED), ScanBounds.NONE, topic,
            partition, log, committed, DataLoss.untold());
        return new Range(r.start, r.end, r.bound);
    }

    /** The two outputs of the JVM reader: Spark's rows, and columnar batches (cut small, so Kafka batches
     *  straddle them). The corpus must read alike through both. */
    public enum Output { ROWS, COLUMNAR }

    /** Every record of the range through {@code output}'s partition reader; {@code sink} gets each as it comes (so
     *  a caller knows how many came before a fault). */
    public static void read(Path root, String topic, int partition, Range range, String isolation, Output output,
                            java.util.function.Consumer<Row> sink) {
        ReadOptions opts = ReadOptions.parse(Map.of("path", root.toString(), "topic", topic, "kafka.isolation.level",
            isolation, "includeHeaders", "true", "maxRowsPerBatch", "7"));
        Slice[] slices = {new Slice(topic, partition, range.start(), range.end(), range.bound())};
        StructType schema = SeglogSchema.of(true);
        if (output == Output.ROWS) {
            try (SeglogPartitionReader reader = new SeglogPartitionReader(opts, ScanBounds.NONE, schema, slices)) {
                while (reader.next()) sink.accept(row(reader.get()));
            }
            return;
        }
        try (SeglogColumnarPartitionReader reader = new SeglogColumnarPartitionReader(opts, ScanBounds.NONE, schema, slices)) {
            while (reader.next()) {
                ColumnarBatch batch = reader.get();
                for (int i = 0; i < batch.numRows(); i++) sink.accept(row(batch.getRow(i)));
            }
        }
    }

    /** A row of the full schema (headers included) as a {@link Row}: timestamps back to ms. */
    static Row row(InternalRow r) {
        List<Map.Entry<String, byte[]>> headers = new ArrayList<>();
        ArrayData hs = r.getArray(7);
        for (int j = 0; j < hs.numElements(); j++) {
            InternalRow h = hs.getStruct(j, 2);
            headers.add(new java.util.AbstractMap.SimpleImmutableEntry<>(h.getUTF8String(0).toString(),
                h.isNullAt(1) ? null : h.getBinary(1)));
        }
        return new Row(r.getLong(4), Math.floorDiv(r.getLong(5), 1000L), r.isNullAt(0) ? null : r.getBinary(0),
            r.isNullAt(1) ? null : r.getBinary(1), headers);
    }

    private static byte[] bytes(ByteBuffer b) {
        if (b == null) return null;
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }
}
