package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.batch;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.marker;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static io.seglog.spark.TestLogs.txnBatch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.CorruptLogException;

/**
 * The pushed aggregate against the row reader on the same bytes, for random offset ranges: a dense log (header
 * walk and arithmetic), transactions under both isolation levels, and a compacted log whose batches keep a base
 * offset that is no longer a record (as Kafka's cleaner keeps it for magic 2): MIN/MAX(offset) must be records'.
 * A damaged record count on a dense log is reported, never counted.
 */
class PushedAggregateTest {
    @TempDir
    Path root;

    private static final AggregateFunc[][] AGGREGATES = {
        {new CountStar()},
        {new CountStar(), new Min(FieldReference.apply("offset")), new Max(FieldReference.apply("offset"))},
        {new CountStar(), new Min(FieldReference.apply("timestamp")), new Max(FieldReference.apply("timestamp")),
            new Min(FieldReference.apply("offset")), new Max(FieldReference.apply("offset"))},
    };

    /** Records at {@code offsets} in one batch whose base offset is {@code base} (below the first record's). */
    private static ByteBuffer sparse(long base, long... offsets) {
        MemoryRecordsBuilder b = MemoryRecords.builder(ByteBuffer.allocate(4096), RecordBatch.CURRENT_MAGIC_VALUE,
            Compression.NONE, TimestampType.CREATE_TIME, base, RecordBatch.NO_TIMESTAMP, 0);
        for (long o : offsets) b.appendWithOffset(o, 1_700_000_000_000L + (o * 13) % 50, ("k" + o).getBytes(StandardCharsets.UTF_8),
            ("v" + o).getBytes(StandardCharsets.UTF_8));
        return b.build().buffer();
    }

    /** [count, min offset, max offset, min ts ms, max ts ms] of the row reader over [lo, hi). */
    private long[] brute(ReadOptions opts, String topic, long lo, long hi, long bound) {
        StructType schema = new StructType().add("offset", "long").add("timestamp", "timestamp");
        long[] out = {0, Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE};
        try (SeglogPartitionReader r = new SeglogPartitionReader(opts, ScanBounds.NONE, schema,
                 new Slice[] {new Slice(topic, 0, lo, hi, bound)})) {
            while (r.next()) {
                long off = r.get().getLong(0), ts = r.get().getLong(1) / 1000;
                out[0]++;
                out[1] = Math.min(out[1], off);
                out[2] = Math.max(out[2], off);
                out[3] = Math.min(out[3], ts);
                out[4] = Math.max(out[4], ts);
            }
        }
        return out;
    }

    private void agreesWithRows(String topic, long end) {
        Random random = new Random(28);
        for (String iso : new String[] {"read_uncommitted", "read_committed"}) {
            ReadOptions opts = ReadOptions.parse(Map.of("path", root.toString(), "topic", topic, "kafka.isolation.level", iso));
            for (int round = 0; round < 60; round++) {
                long lo = random.nextInt((int) end + 1), hi = lo + random.nextInt((int) end + 2 - (int) lo);
                ScanBounds bounds = new ScanBounds();
                bounds.offsetMin = lo;
                bounds.offsetMax = hi - 1;
                long[] want = brute(opts, topic, lo, Math.min(hi, end), end);
                for (AggregateFunc[] funcs : AGGREGATES) {
                    PushedAggregate agg = PushedAggregate.of(new Aggregation(funcs, new Expression[0]));
                    InternalRow[] rows = agg.rows(opts.forBatch(), bounds);
                    assertEquals(1, rows.length);
                    String what = topic + " " + iso + " [" + lo + ", " + hi + ") " + Arrays.toString(funcs);
                    assertEquals(want[0], rows[0].getLong(0), what);
                    for (int i = 1; i < funcs.length; i++) {
                        String col = ((FieldReference) ((funcs[i] instanceof Min) ? ((Min) funcs[i]).column() : ((Max) funcs[i]).column())).fieldNames()[0];
                        int k = (col.equals("offset") ? 1 : 3) + (funcs[i] instanceof Max ? 1 : 0);
                        if (want[0] == 0) {
                            assertEquals(true, rows[0].isNullAt(i), what);
                        } else {
                            assertEquals(want[k] * (k >= 3 ? 1000 : 1), rows[0].getLong(i), what + " " + funcs[i]);
                        }
                    }
                }
            }
        }
    }

    @Test
    void aDenseLogWithTransactionsAgreesWithTheRows() {
        Path dir = partitionDir(root, "d", 0);
        segment(dir, 0, List.of(batch(0, 10), txnBatch(10, 5, 7), batch(15, 5), marker(20, 7, false),
            txnBatch(21, 4, 8), batch(25, 6), marker(31, 8, true)));
        segment(dir, 32, List.of(batch(32, 8), batch(40, 3)));
        commit(root, "d", Map.of(0, 43L));
        agreesWithRows("d", 43);
    }

    @Test
    void aCompactedLogsOffsetsAreItsRecords() throws Exception {
        Files.createDirectories(root);
        Files.writeString(root.resolve("cleaner-offset-checkpoint"), "0\n1\ng 0 0\n");
        List<ByteBuffer> batches = new ArrayList<>();
        batches.add(sparse(0, 2, 3, 5));                 // base 0 and last 5: offsets 0, 1, 4 are gone
        batches.add(sparse(6, 9));
        batches.add(batch(10, 4));
        batches.add(sparse(14, 15, 17, 19));
        segment(partitionDir(root, "g", 0), 0, batches);
        commit(root, "g", Map.of(0, 20L));
        agreesWithRows("g", 20);
    }

    @Test
    void aDamagedRecordCountOnADenseLogIsReported() {
        ByteBuffer damaged = batch(5, 5);
        damaged.putInt(57, 4);                           // the record count, disagreeing with the offsets,
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();   // under a CRC made to match (a writer's bug,
        crc.update(damaged.duplicate().position(21));            // not a flipped byte): the offsets catch it
        damaged.putInt(17, (int) crc.getValue());
        segment(partitionDir(root, "c", 0), 0, List.of(batch(0, 5), damaged, batch(10, 5)));
        commit(root, "c", Map.of(0, 15L));
        ReadOptions opts = ReadOptions.parse(Map.of("path", root.toString(), "topic", "c"));
        PushedAggregate count = PushedAggregate.of(new Aggregation(new AggregateFunc[] {new CountStar()}, new Expression[0]));
        CorruptLogException e = assertThrows(CorruptLogException.class, () -> count.rows(opts.forBatch(), new ScanBounds()));
        assertEquals(true, e.getMessage().contains("holds 4 records"), e.getMessage());
    }
}
