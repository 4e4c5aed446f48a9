package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.marker;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static io.seglog.spark.TestLogs.txnBatch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The columnar output against the row output on the same bytes (differential): every column, pruned schemas,
 * null keys, values and header values, headers, every codec, CreateTime and LogAppendTime, transactional
 * batches with control batches (both isolation levels), offset gaps of a compacted topic, the pushed row
 * filter, and batch sizes that cut Kafka's batches anywhere. Both are also held to the conformance corpus
 * (ConformanceTest reads every case through both).
 */
class VectorShaperTest {
    @TempDir
    Path root;

    private static final CompressionType[] CODECS = {CompressionType.NONE, CompressionType.GZIP,
        CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD};

    /** {@code count} records from {@code base} (offsets spaced by {@code step}: gaps when above 1), some with
     *  null keys, null values, headers with null values. */
    private static ByteBuffer mixed(long base, int count, int step, CompressionType codec, TimestampType type) {
        ByteBuffer buf = ByteBuffer.allocate(1 << 16);
        MemoryRecordsBuilder b = MemoryRecords.builder(buf, RecordBatch.CURRENT_MAGIC_VALUE, Compression.of(codec).build(),
            type, base, type == TimestampType.LOG_APPEND_TIME ? 1_700_000_999_000L : RecordBatch.NO_TIMESTAMP, 0);
        for (int i = 0; i < count; i++) {
            long offset = base + (long) i * step;
            byte[] key = offset % 4 == 0 ? null : ("k" + offset).getBytes(StandardCharsets.UTF_8);
            byte[] value = offset % 7 == 3 ? null : ("value-" + offset + "-é").getBytes(StandardCharsets.UTF_8);
            Header[] headers = offset % 3 == 0 ? new Header[0] : new Header[] {
                new RecordHeader("h" + offset % 5, offset % 2 == 0 ? null : new byte[] {(byte) offset, 1}),
                new RecordHeader("ü", new byte[0])};
            // CreateTime timestamps going back and forth, some without one (-1)
            long ts = offset % 11 == 5 ? RecordBatch.NO_TIMESTAMP : 1_700_000_000_000L + (offset * 37) % 100;
            b.appendWithOffset(offset, ts, key, value, headers);
        }
        ByteBuffer out = b.build().buffer();
        return out;
    }

    private List<ByteBuffer> writeLog(String topic, int step) {
        List<ByteBuffer> batches = new ArrayList<>();
        long next = 0;
        for (CompressionType codec : CODECS) {
            for (TimestampType type : new TimestampType[] {TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME}) {
                int n = 5 + (int) (next % 4);
                batches.add(mixed(next, n, step, codec, type));
                next += (long) n * step;
            }
        }
        batches.add(txnBatch(next, 4, 7));             // aborted
        batches.add(marker(next + 4, 7, false));
        batches.add(txnBatch(next + 5, 3, 8));         // committed
        batches.add(marker(next + 8, 8, true));
        batches.add(mixed(next + 9, 6, 1, CompressionType.NONE, TimestampType.CREATE_TIME));
        segment(partitionDir(root, topic, 0), 0, batches);
        commit(root, topic, Map.of(0, next + 15));
        return batches;
    }

    private static List<InternalRow> rows(ReadOptions opts, ScanBounds bounds, StructType schema, Slice[] slices) {
        List<InternalRow> out = new ArrayList<>();
        try (SeglogPartitionReader r = new SeglogPartitionReader(opts, bounds, schema, slices)) {
            while (r.next()) out.add(r.get().copy());
        }
        return out;
    }

    private static List<InternalRow> columnar(ReadOptions opts, ScanBounds bounds, StructType schema, Slice[] slices,
                                              int[] batchSizes) {
        UnsafeProjection unsafe = UnsafeProjection.create(schema);
        List<InternalRow> out = new ArrayList<>();
        List<Integer> sizes = new ArrayList<>();
        try (SeglogColumnarPartitionReader r = new SeglogColumnarPartitionReader(opts, bounds, schema, slices)) {
            while (r.next()) {
                ColumnarBatch batch = r.get();
                sizes.add(batch.numRows());
                for (int i = 0; i < batch.numRows(); i++) out.add(unsafe.apply(batch.getRow(i)).copy());
            }
        }
        for (int i = 0; i + 1 < sizes.size(); i++) assertEquals(opts.maxRowsPerBatch, sizes.get(i), "only the last batch is short");
        batchSizes[0] = sizes.size();
        return out;
    }

    private void sameRows(String topic, long end, ScanBounds bounds) {
        StructType full = SeglogSchema.of(true);
        StructType[] schemas = {full, new StructType().add(full.apply("value")).add(full.apply("offset")),
            new StructType().add(full.apply("headers")).add(full.apply("timestamp")).add(full.apply("topic"))
                .add(full.apply("partition")).add(full.apply("timestampType")).add(full.apply("key")),
            new StructType()};
        Slice[] slices = {new Slice(topic, 0, 0, end / 2, end), new Slice(topic, 0, end / 2, end, end)};
        for (String iso : new String[] {"read_uncommitted", "read_committed"}) {
            for (int maxRows : new int[] {1, 3, 4096}) {
                Map<String, String> m = new HashMap<>(Map.of("path", root.toString(), "topic", topic,
                    "kafka.isolation.level", iso, "includeHeaders", "true", "maxRowsPerBatch", String.valueOf(maxRows)));
                ReadOptions opts = ReadOptions.parse(m);
                for (StructType schema : schemas) {
                    List<InternalRow> want = rows(opts, bounds, schema, slices);
                    int[] batches = {0};
                    List<InternalRow> got = columnar(opts, bounds, schema, slices, batches);
                    assertTrue(want.size() > 10, "the log holds records: " + want.size());
                    assertEquals(want, got, iso + " maxRowsPerBatch=" + maxRows + " " + schema.simpleString());
                    assertEquals((want.size() + maxRows - 1) / maxRows, batches[0], "batches of maxRowsPerBatch rows");
                }
            }
        }
    }

    @Test
    void columnarBatchesHoldTheRowsOfTheRowPath() {
        List<ByteBuffer> written = writeLog("t", 1);
        long end = 0;
        for (ByteBuffer b : written) end = b.getLong(0) + b.getInt(23) + 1;   // base + lastOffsetDelta + 1
        sameRows("t", end, ScanBounds.NONE);
    }

    @Test
    void offsetGapsOfACompactedTopicReadAlike() throws Exception {
        Files.createDirectories(root);
        Files.writeString(root.resolve("cleaner-offset-checkpoint"), "0\n1\ng 0 0\n");
        List<ByteBuffer> written = writeLog("g", 3);
        long end = 0;
        for (ByteBuffer b : written) end = b.getLong(0) + b.getInt(23) + 1;
        sameRows("g", end, ScanBounds.NONE);
    }

    @Test
    void thePushedRowFilterKeepsTheSameRecords() {
        List<ByteBuffer> written = writeLog("f", 1);
        long end = 0;
        for (ByteBuffer b : written) end = b.getLong(0) + b.getInt(23) + 1;
        ScanBounds bounds = new ScanBounds();
        bounds.tsMin = 1_700_000_000_020L;
        bounds.tsMax = 1_700_000_000_080L;
        sameRows("f", end, bounds);
    }
}
