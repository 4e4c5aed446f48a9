package io.seglog.spark.write;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * Kafka record batches, magic 2, uncompressed (docs/spec.md §2.2), encoded record by record into
 * one growing buffer: the same bytes as seglog's Python encoder for the same grouping (the
 * differential test holds them to that). Offsets in a batch are relative to the staged segment
 * (base 0); the publisher adds the real base offset, which the CRC does not cover (docs/format.md).
 *
 * <p>Grouping rule: a batch takes records while its exact size stays within {@code maxBatchBytes};
 * a record that alone exceeds it is a batch on its own (then checked against max.message.bytes).
 */
final class BatchEncoder {
    static final int HEADER_SIZE = 61;
    private static final int ATTRIBUTES_OFFSET = 21;
    private static final int CRC_OFFSET = 17;
    static final short LOG_APPEND_TIME_ATTR = 0x08;

    private final int maxBatchBytes;
    private final boolean logAppendTime;
    private ByteBuffer buf;
    private int count;            // records in the open batch
    private long baseTimestamp;   // first record's timestamp (the deltas' base)
    private long maxTimestamp;

    BatchEncoder(int maxBatchBytes, boolean logAppendTime) {
        this.maxBatchBytes = maxBatchBytes;
        this.logAppendTime = logAppendTime;
        // small at first, grown to what the batches need (many partitions per task stay cheap)
        this.buf = ByteBuffer.allocate(Math.min(Math.max(maxBatchBytes, 1024), 64 << 10) + HEADER_SIZE);
        reset();
    }

    int count() {
        return count;
    }

    long baseTimestamp() {
        return baseTimestamp;
    }

    long maxTimestamp() {
        return maxTimestamp;
    }

    int size() {
        return buf.position();
    }

    private void reset() {
        buf.clear();
        buf.position(HEADER_SIZE);
        count = 0;
        baseTimestamp = -1;
        maxTimestamp = -1;
    }

    /** Encoded size of a record (with its length varint) if appended to the open batch. */
    int recordSize(long timestamp, byte[] key, byte[] value, byte[][] hKeys, byte[][] hValues) {
        long tsDelta = count == 0 ? 0 : timestamp - baseTimestamp;
        int body = bodySize(tsDelta, count, key, value, hKeys, hValues);
        return body + varintSize(zigzag32(body));
    }

    /** Whether the record joins the open batch (false: the caller finishes the batch first). */
    boolean fits(int recordSize) {
        return count == 0 || buf.position() + recordSize <= maxBatchBytes;
    }

    void append(long timestamp, byte[] key, byte[] value, byte[][] hKeys, byte[][] hValues, int recordSize) {
        if (count == 0) {
            baseTimestamp = timestamp;
        }
        long tsDelta = timestamp - baseTimestamp;
        ensure(recordSize);
        int body = bodySize(tsDelta, count, key, value, hKeys, hValues);
        writeVarint(zigzag32(body));
        buf.put((byte) 0);
        writeVarlong(zigzag64(tsDelta));
        writeVarint(zigzag32(count));
        writeBytes(key);
        writeBytes(value);
        int n = hKeys == null ? 0 : hKeys.length;
        writeVarint(zigzag32(n));
        for (int i = 0; i < n; i++) {
            writeBytes(hKeys[i]);
            writeBytes(hValues[i]);
        }
        if (timestamp > maxTimestamp) {
            maxTimestamp = timestamp;
        }
        count++;
    }

    /** Finish the open batch: the header (base offset {@code baseOffset}) and CRC; the batch's
     *  bytes are {@code buffer()[0, size())} until the next append. */
    ByteBuffer finish(long baseOffset, int partitionLeaderEpoch) {
        int size = buf.position();
        buf.putLong(0, baseOffset);
        buf.putInt(8, size - 12);
        buf.putInt(12, partitionLeaderEpoch);
        buf.put(16, (byte) 2);
        buf.putShort(ATTRIBUTES_OFFSET, logAppendTime ? LOG_APPEND_TIME_ATTR : 0);
        buf.putInt(23, count - 1);
        buf.putLong(27, baseTimestamp);
        buf.putLong(35, maxTimestamp);
        buf.putLong(43, -1L);
        buf.putShort(51, (short) -1);
        buf.putInt(53, -1);
        buf.putInt(57, count);
        CRC32C crc = new CRC32C();
        crc.update(buf.array(), ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET);
        buf.putInt(CRC_OFFSET, (int) crc.getValue());
        ByteBuffer out = ByteBuffer.wrap(buf.array(), 0, size);
        return out;
    }

    /** Start a new batch (after the finished one was written). */
    void clear() {
        reset();
    }

    private void ensure(int extra) {
        if (buf.remaining() >= extra) {
            return;
        }
        long want = Math.max((long) buf.capacity() * 2, (long) buf.position() + extra);
        if (want > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("seglog InvalidRecordError: a record batch would exceed 2 GiB");
        }
        ByteBuffer bigger = ByteBuffer.allocate((int) want);
        buf.flip();
        bigger.put(buf);
        buf = bigger;
    }

    private void writeBytes(byte[] b) {
        if (b == null) {
            writeVarint(zigzag32(-1));
        } else {
            writeVarint(zigzag32(b.length));
            buf.put(b);
        }
    }

    private void writeVarint(int u) {
        while ((u & ~0x7f) != 0) {
            buf.put((byte) ((u & 0x7f) | 0x80));
            u >>>= 7;
        }
        buf.put((byte) u);
    }

    private void writeVarlong(long u) {
        while ((u & ~0x7fL) != 0) {
            buf.put((byte) ((u & 0x7f) | 0x80));
            u >>>= 7;
        }
        buf.put((byte) u);
    }

    static int bodySize(long tsDelta, int offsetDelta, byte[] key, byte[] value, byte[][] hKeys, byte[][] hValues) {
        int size = 1 + varlongSize(zigzag64(tsDelta)) + varintSize(zigzag32(offsetDelta))
                + bytesSize(key) + bytesSize(value);
        int n = hKeys == null ? 0 : hKeys.length;
        size += varintSize(zigzag32(n));
        for (int i = 0; i < n; i++) {
            size += bytesSize(hKeys[i]) + bytesSize(hValues[i]);
        }
        return size;
    }

    private static int bytesSize(byte[] b) {
        return b == null ? 1 : varintSize(zigzag32(b.length)) + b.length;
    }

    static int zigzag32(int v) {
        return (v << 1) ^ (v >> 31);
    }

    static long zigzag64(long v) {
        return (v << 1) ^ (v >> 63);
    }

    static int varintSize(int u) {
        int n = 1;
        while ((u & ~0x7f) != 0) {
            n++;
            u >>>= 7;
        }
        return n;
    }

    static int varlongSize(long u) {
        int n = 1;
        while ((u & ~0x7fL) != 0) {
            n++;
            u >>>= 7;
        }
        return n;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
