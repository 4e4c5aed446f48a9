package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.batch;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.DefaultRecordBatch;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.common.utils.ByteBufferOutputStream;
import org.apache.kafka.common.utils.Crc32C;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.BatchBounds;
import io.seglog.spark.format.CorruptLogException;

/**
 * Hostile batches under a valid CRC (issue 37 items 1, 2, 7): a compressed batch claiming 2^31-1 records, one whose
 * records inflate past {@link BatchBounds#INFLATED_BATCH_MAX}, and zstd and snappy batches whose records are damaged.
 * Each read and pushed count ends in a CorruptLogException naming the segment file and the batch's position, never an
 * OutOfMemoryError, Kafka's bare InvalidRecordException or a KafkaException of a NegativeArraySizeException.
 */
class HostileBatchesTest {
    @TempDir
    Path root;

    private static final int AT = 0;         // the hostile batch is the segment's first

    private static ByteBuffer compressed(Compression c, long base, int count) {
        SimpleRecord[] rs = new SimpleRecord[count];
        for (int i = 0; i < count; i++) rs[i] = new SimpleRecord(1_700_000_000_000L + i, ("k" + i).getBytes(), ("v" + i).getBytes());
        return MemoryRecords.withRecords(base, c, 0, rs).buffer();
    }

    /** The batch with its CRC computed again after a change (so only the bounds can refuse it). */
    private static ByteBuffer sealed(ByteBuffer b) {
        long crc = Crc32C.compute(b, 21, b.limit() - 21);
        b.putInt(DefaultRecordBatch.CRC_OFFSET, (int) crc);
        return b;
    }

    private static ByteBuffer claiming(ByteBuffer b, int count) {
        b.putInt(DefaultRecordBatch.LAST_OFFSET_DELTA_OFFSET, count - 1);
        b.putInt(DefaultRecordBatch.RECORDS_COUNT_OFFSET, count);
        return sealed(b);
    }

    /** Flips bytes of the records section (past the codec's own header) and seals the batch again. */
    private static ByteBuffer damaged(ByteBuffer b, int from) {
        for (int i = 61 + from; i < b.limit(); i += 3) b.put(i, (byte) (b.get(i) ^ 0x5a));
        return sealed(b);
    }

    /** A zstd batch of one record whose value is {@code size} zero bytes (compresses to a few KB). */
    private static ByteBuffer bomb(long base, int size) throws Exception {
        ByteBufferOutputStream out = new ByteBufferOutputStream(1 << 16);
        ByteBuffer head = ByteBuffer.allocate(61);
        out.write(head.array());
        try (OutputStream z = Compression.zstd().build().wrapForOutput(out, RecordBatch.MAGIC_VALUE_V2)) {
            ByteBuffer rec = ByteBuffer.allocate(32);
            org.apache.kafka.common.utils.ByteUtils.writeVarint(6 + org.apache.kafka.common.utils.ByteUtils.sizeOfVarint(size) + size, rec);
            rec.put((byte) 0).put((byte) 0).put((byte) 0);                           // attributes, ts delta, offset delta
            org.apache.kafka.common.utils.ByteUtils.writeVarint(1, rec);
            rec.put((byte) 'k');
            org.apache.kafka.common.utils.ByteUtils.writeVarint(size, rec);
            z.write(rec.array(), 0, rec.position());
            byte[] zeros = new byte[1 << 20];
            for (int left = size; left > 0; left -= zeros.length) z.write(zeros, 0, Math.min(left, zeros.length));
            z.write(0);                                                               // no headers
        }
        ByteBuffer b = out.buffer();
        b.flip();
        ByteBuffer template = compressed(Compression.zstd().build(), base, 1);
        for (int i = 0; i < 61; i++) b.put(i, template.get(i));
        b.putInt(8, b.limit() - 12);
        return sealed(b);
    }

    private void topic(String name, ByteBuffer hostile, long end) {
        List<ByteBuffer> batches = new ArrayList<>();
        batches.add(hostile);
        batches.add(batch(end, 1));
        segment(partitionDir(root, name, 0), 0, batches);
        commit(root, name, Map.of(0, end + 1));
    }

    private ReadOptions options(String name) {
        Map<String, String> o = new HashMap<>(Map.of("path", root.toString(), "topic", name));
        return ReadOptions.parse(o).forBatch();
    }

    private void read(String name) {
        StructType schema = new StructType().add("key", "binary").add("value", "binary").add("offset", "long");
        ReadOptions opts = options(name);
        for (List<Slice> task : Planner.plan(opts, ScanBounds.NONE, 1, DataLoss.untold())) {
            try (SeglogPartitionReader r = new SeglogPartitionReader(opts, ScanBounds.NONE, schema, task.toArray(new Slice[0]))) {
                while (r.next()) r.get();
            }
        }
    }

    private long count(String name) {
        PushedAggregate agg = PushedAggregate.of(new Aggregation(new AggregateFunc[] {new CountStar()}, new Expression[0]));
        InternalRow[] rows = agg.rows(options(name), ScanBounds.NONE);
        return rows[0].getLong(0);
    }

    private void refused(String name, String... says) {
        for (Runnable r : new Runnable[] {() -> read(name), () -> count(name)}) {
            CorruptLogException e = assertThrows(CorruptLogException.class, r::run);
            String m = e.getMessage();
            assertTrue(m.contains("00000000000000000000.log") && m.contains("position " + AT), m);
            for (String s : says) assertTrue(m.contains(s), m);
        }
    }

    @Test
    void aCompressedBatchClaimingTwoToTheThirtyOneRecordsIsACorruptBatch() {
        topic("count", claiming(compressed(Compression.zstd().build(), 0, 4), Integer.MAX_VALUE), Integer.MAX_VALUE);
        refused("count", "record count 2147483647 cannot fit");
    }

    @Test
    void aCountAboveWhatTheInflatedRecordsHoldIsACorruptBatch() {
        // under the ceiling's bound, but more than 4 records' inflated bytes can hold
        topic("over", claiming(compressed(Compression.zstd().build(), 0, 4), 1000), 1000);
        refused("over", "record count 1000 cannot fit");
    }

    @Test
    void aBatchInflatingPastTheCeilingIsACorruptBatch() throws Exception {
        topic("bomb", bomb(0, BatchBounds.INFLATED_BATCH_MAX + (1 << 20)), 1);
        refused("bomb", "more than " + BatchBounds.INFLATED_BATCH_MAX + " bytes");
    }

    @Test
    void aBatchAtTheCeilingIsRead() throws Exception {
        topic("fits", bomb(0, BatchBounds.INFLATED_BATCH_MAX - 64), 1);
        read("fits");
        assertEquals(2, count("fits"));
    }

    @Test
    void damagedZstdAndSnappyRecordsNameTheFileAndPosition() {
        topic("zstd", damaged(compressed(Compression.zstd().build(), 0, 40), 4), 40);
        refused("zstd");
        topic("snappy", damaged(compressed(Compression.snappy().build(), 0, 40), 20), 40);
        refused("snappy");
    }
}
