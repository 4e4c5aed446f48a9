package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;

/** Kafka's own record classes read what BatchEncoder writes, in every codec: CRC, header fields, every record. */
class BatchEncoderTest {
    private static byte[] bytes(Random rng, int max) {
        if (rng.nextInt(10) == 0) {
            return null;
        }
        byte[] b = new byte[rng.nextInt(max + 1)];
        rng.nextBytes(b);
        return b;
    }

    @Test
    void kafkaReadsEveryBatchAndRecord() {
        Random rng = new Random(7);
        for (int codec = 0; codec <= 4; codec++) {
            for (boolean appendTime : new boolean[] {false, true}) {
                check(rng, codec, appendTime);
            }
        }
    }

    private static void check(Random rng, int codec, boolean appendTime) {
        BatchEncoder enc = new BatchEncoder(1 << 20, appendTime, codec);
        List<byte[]> keys = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        List<Long> stamps = new ArrayList<>();
        List<byte[][]> hk = new ArrayList<>();
        List<byte[][]> hv = new ArrayList<>();
        long ts = 1_700_000_000_000L;
        for (int i = 0; i < 500; i++) {
            byte[] k = bytes(rng, 30);
            byte[] v = bytes(rng, 3000);
            ts = appendTime ? 1_800_000_000_000L : ts + rng.nextInt(2001) - 1000;
            int nh = rng.nextInt(3);
            byte[][] hKeys = nh == 0 ? null : new byte[nh][];
            byte[][] hValues = nh == 0 ? null : new byte[nh][];
            for (int j = 0; j < nh; j++) {
                hKeys[j] = BatchEncoder.utf8("h" + j);
                hValues[j] = bytes(rng, 10);
            }
            BytesView vv = BytesView.of(v);
            enc.append(ts, k, vv, hKeys, hValues, enc.recordSize(ts, k, vv, hKeys, hValues));
            keys.add(k);
            values.add(v);
            stamps.add(ts);
            hk.add(hKeys);
            hv.add(hValues);
        }
        ByteBuffer out = enc.finish(1234, 0);
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(out.array(), 0, out.limit()).slice());
        int n = 0;
        for (RecordBatch batch : records.batches()) {
            batch.ensureValid();
            assertEquals(codec, batch.compressionType().id);
            assertEquals(1234, batch.baseOffset());
            assertEquals(1234 + 499, batch.lastOffset());
            assertEquals(appendTime ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME,
                    batch.timestampType());
            assertEquals(stamps.stream().mapToLong(Long::longValue).max().getAsLong(), batch.maxTimestamp());
            for (Record r : batch) {
                assertEquals(1234 + n, r.offset());
                assertEquals((long) stamps.get(n), r.timestamp());
                if (keys.get(n) == null) {
                    assertNull(r.key());
                } else {
                    assertArrayEquals(keys.get(n), Utils.toArray(r.key()));
                }
                if (values.get(n) == null) {
                    assertNull(r.value());
                } else {
                    assertArrayEquals(values.get(n), Utils.toArray(r.value()));
                }
                Header[] hs = r.headers();
                assertEquals(hk.get(n) == null ? 0 : hk.get(n).length, hs.length);
                for (int j = 0; j < hs.length; j++) {
                    assertEquals("h" + j, hs[j].key());
                    assertArrayEquals(hv.get(n)[j], hs[j].value());
                }
                n++;
            }
        }
        assertEquals(500, n);
    }

    @Test
    void murmur2PartitionIsKafkas() {
        // Kafka's UtilsTest vector: murmur2("21") = -973932308
        assertEquals(-973932308, Utils.murmur2("21".getBytes()));
        assertEquals((-973932308 & 0x7fffffff) % 7, Murmur2Partition.partition("21".getBytes(), 7));
    }
}
