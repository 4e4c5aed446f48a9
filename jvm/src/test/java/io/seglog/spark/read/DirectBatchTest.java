package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Random;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

/**
 * The direct decode against Kafka's own records of the same batch (differential), over random batches: null,
 * empty and long keys and values, headers (skipped), timestamps before and after the first, gaps in offsets,
 * CreateTime and LogAppendTime; and bytes that do not parse exactly as the declared records are refused (the
 * reader then leaves the batch to Kafka's iterator, which reports it).
 */
class DirectBatchTest {
    private static byte[] bytesOrNull(Random rnd) {
        int kind = rnd.nextInt(6);
        if (kind == 0) return null;
        if (kind == 1) return new byte[0];
        byte[] b = new byte[kind == 2 ? 200 + rnd.nextInt(20_000) : rnd.nextInt(40)];
        rnd.nextBytes(b);
        return b;
    }

    private static ByteBuffer batch(Random rnd, TimestampType type, CompressionType codec) {
        long base = rnd.nextInt(1 << 20);
        ByteBuffer buf = ByteBuffer.allocate(4 << 20);
        MemoryRecordsBuilder b = MemoryRecords.builder(buf, RecordBatch.CURRENT_MAGIC_VALUE, Compression.of(codec).build(),
            type, base, type == TimestampType.LOG_APPEND_TIME ? 1_700_000_999_000L : RecordBatch.NO_TIMESTAMP, 0);
        int n = 1 + rnd.nextInt(300);
        long offset = base;
        for (int i = 0; i < n; i++) {
            Header[] headers = new Header[rnd.nextInt(3)];
            for (int h = 0; h < headers.length; h++) headers[h] = new RecordHeader("h" + h, bytesOrNull(rnd));
            b.appendWithOffset(offset, 1_700_000_000_000L + rnd.nextInt(100_000) - 50_000, bytesOrNull(rnd), bytesOrNull(rnd), headers);
            offset += 1 + (rnd.nextInt(4) == 0 ? rnd.nextInt(5) : 0);
        }
        return b.build().buffer();
    }

    private static byte[] slice(ByteBuffer b) {
        return b == null ? null : Arrays.copyOfRange(b.array(), b.arrayOffset() + b.position(), b.arrayOffset() + b.limit());
    }

    private static byte[] bytes(byte[] all, int pos, int len) {
        return len < 0 ? null : Arrays.copyOfRange(all, pos, pos + len);
    }

    @Test
    void decodesWhatKafkasRecordsHold() {
        Random rnd = new Random(20261126);
        DirectBatch d = new DirectBatch();
        for (int round = 0; round < 300; round++) {
            TimestampType type = round % 3 == 0 ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
            ByteBuffer buf = batch(rnd, type, CompressionType.NONE);
            RecordBatch kafka = MemoryRecords.readableRecords(buf.duplicate()).firstBatch();
            assertTrue(DirectBatch.eligible(kafka));
            byte[] all = Arrays.copyOfRange(buf.array(), buf.arrayOffset() + buf.position(), buf.arrayOffset() + buf.limit());
            assertTrue(d.decode(kafka, all, all.length), "round " + round);
            Iterator<Record> it = kafka.iterator();
            int i = 0;
            while (it.hasNext()) {
                Record r = it.next();
                assertEquals(r.offset(), d.offset(i));
                assertEquals(r.timestamp(), d.timestamp(i));
                assertArrayEquals(r.hasKey() ? slice(r.key()) : null, bytes(all, d.keyPos[i], d.keyLen[i]));
                assertArrayEquals(r.hasValue() ? slice(r.value()) : null, bytes(all, d.valuePos[i], d.valueLen[i]));
                i++;
            }
            assertEquals(i, d.count);
            assertEquals(type, d.timestampType);
        }
    }

    @Test
    void compressedBatchesAreNotEligible() {
        ByteBuffer buf = batch(new Random(1), TimestampType.CREATE_TIME, CompressionType.GZIP);
        assertFalse(DirectBatch.eligible(MemoryRecords.readableRecords(buf).firstBatch()));
    }

    @Test
    void refusesBytesThatDoNotParseAsTheDeclaredRecords() {
        Random rnd = new Random(7);
        DirectBatch d = new DirectBatch();
        for (int round = 0; round < 300; round++) {
            ByteBuffer buf = batch(rnd, TimestampType.CREATE_TIME, CompressionType.NONE);
            RecordBatch kafka = MemoryRecords.readableRecords(buf.duplicate()).firstBatch();
            byte[] all = Arrays.copyOfRange(buf.array(), buf.arrayOffset() + buf.position(), buf.arrayOffset() + buf.limit());
            // a record count one too many, one too few, a cut tail, and a damaged byte in the records
            byte[] more = all.clone();
            more[60]++;
            assertFalse(d.decode(kafka, more, more.length), "count + 1, round " + round);
            if (kafka.countOrNull() > 1) {
                byte[] fewer = all.clone();
                fewer[60]--;
                assertFalse(d.decode(kafka, fewer, fewer.length), "count - 1, round " + round);
            }
            assertFalse(d.decode(kafka, all, all.length - 1 - rnd.nextInt(Math.min(30, all.length - 61))), "cut, round " + round);
            byte[] damaged = all.clone();
            int at = 61 + rnd.nextInt(all.length - 61);
            damaged[at] ^= (byte) (1 << rnd.nextInt(8));
            // a flip inside a key or a value still parses (the CRC, checked when the batch was read, reports it);
            // one in a length field must not read past the batch or return a wrong count
            if (d.decode(kafka, damaged, damaged.length)) {
                assertEquals(kafka.countOrNull().intValue(), d.count);
                for (int i = 0; i < d.count; i++) {
                    assertTrue(d.keyLen[i] < 0 || d.keyPos[i] + d.keyLen[i] <= damaged.length);
                    assertTrue(d.valueLen[i] < 0 || d.valuePos[i] + d.valueLen[i] <= damaged.length);
                }
            }
        }
    }
}
