package io.seglog.spark.write;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.utils.ByteBufferOutputStream;

/**
 * Kafka record batches, magic 2 (docs/spec.md §2.2), encoded record by record into one growing
 * buffer: uncompressed, the same bytes as seglog's Python encoder for the same grouping (the
 * differential test holds them to that). Offsets in a batch are relative to the staged segment
 * (base 0); the publisher adds the real base offset, which the CRC does not cover (docs/format.md).
 *
 * <p>Grouping rule: a batch takes records while its exact uncompressed size stays within
 * {@code maxBatchBytes}; a record that alone exceeds it is a batch on its own (then checked against
 * max.message.bytes). As Log.append_columns then compress_encoded: the topic's codec compresses
 * each finished batch's records section (everything after the 61-byte header) as one stream, with
 * kafka-clients' own {@code Compression} at Kafka's default level (gzip 6, lz4 fast, zstd 3: what
 * indexer/codec/compression.py writes); the header stays uncompressed, its codec bits set and its CRC
 * over the compressed bytes (docs/kafka.md, "Compression").
 */
final class BatchEncoder {
    static final int HEADER_SIZE = 61;
    private static final int ATTRIBUTES_OFFSET = 21;
    private static final int CRC_OFFSET = 17;
    static final short LOG_APPEND_TIME_ATTR = 0x08;

    private final int maxBatchBytes;
    private final boolean logAppendTime;
    private final int codec;
    private final Compression compression;   // null: uncompressed
    private ByteBuffer buf;
    private ByteBuffer compressed;           // the compressed batch, reused (grown by Kafka's stream)
    private int count;            // records in the open batch
    private long baseTimestamp;   // first record's timestamp (the deltas' base)
    private long maxTimestamp;

    BatchEncoder(int maxBatchBytes, boolean logAppendTime) {
        this(maxBatchBytes, logAppendTime, 0);
    }

    /** {@code codec}: Kafka's codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd). */
    BatchEncoder(int maxBatchBytes, boolean logAppendTime, int codec) {
        this.maxBatchBytes = maxBatchBytes;
        this.logAppendTime = logAppendTime;
        this.codec = codec;
        this.compression = codec == 0 ? null : Compression.of(CompressionType.forId(codec)).build();
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
    int recordSize(long timestamp, byte[] key, BytesView value, byte[][] hKeys, byte[][] hValues) {
        long tsDelta = count == 0 ? 0 : timestamp - baseTimestamp;
        int body = bodySize(tsDelta, count, key, value, hKeys, hValues);
        return body + varintSize(zigzag32(body));
    }

    /** Whether the record joins the open batch (false: the caller finishes the batch first). */
    boolean fits(int recordSize) {
        return count == 0 || buf.position() + recordSize <= maxBatchBytes;
    }

    void append(long timestamp, byte[] key, BytesView value, byte[][] hKeys, byte[][] hValues, int recordSize) {
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
        writeBytes(value);   // copied once, from where the row holds it
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

    /** Finish the open batch: the header (base offset {@code baseOffset}), compressed with the
     *  topic's codec, and CRC. The returned buffer (position 0, limit the batch's size as written)
     *  holds the batch until the next append; base offset and leader epoch may still be patched
     *  in it (outside the CRC). */
    ByteBuffer finish(long baseOffset, int partitionLeaderEpoch) {
        int size = buf.position();
        buf.putLong(0, baseOffset);
        buf.putInt(12, partitionLeaderEpoch);
        buf.put(16, (byte) 2);
        buf.putShort(ATTRIBUTES_OFFSET, (short) ((logAppendTime ? LOG_APPEND_TIME_ATTR : 0) | codec));
        buf.putInt(23, count - 1);
        buf.putLong(27, baseTimestamp);
        buf.putLong(35, maxTimestamp);
        buf.putLong(43, -1L);
        buf.putShort(51, (short) -1);
        buf.putInt(53, -1);
        buf.putInt(57, count);
        ByteBuffer out = compression == null ? buf : compress(size);
        size = compression == null ? size : out.position();
        out.putInt(8, size - 12);
        CRC32C crc = new CRC32C();
        crc.update(out.array(), ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET);
        out.putInt(CRC_OFFSET, (int) crc.getValue());
        return ByteBuffer.wrap(out.array(), 0, size);
    }

    /** The header as it is, then the records section {@code buf[61, size)} through the codec's stream
     *  (one stream per batch, as Kafka's MemoryRecordsBuilder); position = the compressed size. */
    private ByteBuffer compress(int size) {
        if (compressed == null || compressed.capacity() < HEADER_SIZE + 64) {
            compressed = ByteBuffer.allocate(Math.max(HEADER_SIZE + 64, size / 2));
        }
        compressed.clear();
        compressed.put(buf.array(), 0, HEADER_SIZE);
        ByteBufferOutputStream stream = new ByteBufferOutputStream(compressed);
        try (OutputStream os = compression.wrapForOutput(stream, RecordBatch.MAGIC_VALUE_V2)) {
            os.write(buf.array(), HEADER_SIZE, size - HEADER_SIZE);
        } catch (IOException e) {
            throw new UncheckedIOException("seglog: compressing a record batch", e);
        }
        compressed = stream.buffer();   // Kafka's stream grows into a new buffer when it must
        return compressed;
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
            throw new InvalidRecordException("seglog InvalidRecordError: a record batch would exceed 2 GiB");
        }
        ByteBuffer bigger = ByteBuffer.allocate((int) want);
        buf.flip();
        bigger.put(buf);
        buf = bigger;
    }

    private void writeBytes(BytesView b) {
        if (b.isNull()) {
            writeVarint(zigzag32(-1));
        } else {
            int n = b.length();
            writeVarint(zigzag32(n));
            int at = buf.position();
            b.copyTo(buf.array(), buf.arrayOffset() + at);
            buf.position(at + n);
        }
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

    static int bodySize(long tsDelta, int offsetDelta, byte[] key, BytesView value, byte[][] hKeys, byte[][] hValues) {
        int v = value.length();
        int size = 1 + varlongSize(zigzag64(tsDelta)) + varintSize(zigzag32(offsetDelta))
                + bytesSize(key) + (v < 0 ? 1 : varintSize(zigzag32(v)) + v);
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
