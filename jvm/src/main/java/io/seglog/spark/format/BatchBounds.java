package io.seglog.spark.format;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.DefaultRecordBatch;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.utils.BufferSupplier;

/**
 * What a v2 batch can hold, the JVM's home of the Python core's rules (conf/limits.py INFLATED_BATCH_MAX and
 * MIN_RECORD_SIZE, indexer/codec/records.py record_count_problem; tests/conformance/batch_bounds.json pins both):
 * a record takes at least {@link #MIN_RECORD_SIZE} bytes, of the records section when uncompressed, of at most
 * {@link #INFLATED_BATCH_MAX} inflated bytes when compressed. The count is checked before anything is sized by it
 * (Kafka's {@code iterator()} of a compressed batch allocates a list of the claimed count: a 170-byte batch claiming
 * 2^31-1 records is an OutOfMemoryError that kills the driver). A compressed batch is inflated here under the ceiling
 * ({@link #inflate}) instead of by Kafka's iterator, which holds every record however large they claim to be.
 */
public final class BatchBounds {
    public static final int INFLATED_BATCH_MAX = 64 << 20;
    public static final int MIN_RECORD_SIZE = 7;
    private static final int HEADER = DefaultRecordBatch.RECORD_BATCH_OVERHEAD;
    private static final int ATTRIBUTES_OFFSET = 21;
    private static final int LENGTH_OFFSET = 8;

    private BatchBounds() {
    }

    /** Why {@code count} cannot be the record count of a batch of {@code sizeInBytes}, or null (Python's words). */
    public static String countProblem(long count, boolean compressed, int sizeInBytes) {
        long room = compressed ? INFLATED_BATCH_MAX : sizeInBytes - HEADER;
        if (count < 0) return "negative record count " + count;
        if (count > room / MIN_RECORD_SIZE) {
            String where = compressed ? INFLATED_BATCH_MAX + " bytes, the most a compressed batch's records inflate to"
                : "batchLength " + (sizeInBytes - 12);
            return "record count " + count + " cannot fit in " + where + " (a record takes at least " + MIN_RECORD_SIZE
                + " bytes)";
        }
        return null;
    }

    /** {@link #countProblem} of a v2 batch's header. */
    public static String countProblem(RecordBatch b) {
        Integer n = b.countOrNull();
        return countProblem(n == null ? -1 : n, b.compressionType() != CompressionType.NONE, b.sizeInBytes());
    }

    /**
     * The compressed v2 batch {@code b} as the equivalent uncompressed batch (its header with the codec bits cleared
     * and its length for the inflated records; the CRC is not recomputed: the iterator does not read it), its records
     * decompressed into at most {@link #INFLATED_BATCH_MAX} bytes. Throws IllegalStateException naming the bound when
     * they would exceed it, or the codec's own exception on bad bytes: the caller names the file and position.
     */
    public static RecordBatch inflate(RecordBatch b) throws IOException {
        ByteBuffer whole = ByteBuffer.allocate(b.sizeInBytes());
        ((DefaultRecordBatch) b).writeTo(whole);
        whole.flip();
        ByteBuffer records = whole.duplicate().position(HEADER).slice();
        byte[] out = new byte[HEADER + Math.min(INFLATED_BATCH_MAX, Math.max(1 << 16, 32 * records.remaining()))];
        int at = HEADER;
        try (InputStream in = Compression.of(b.compressionType()).build().wrapForInput(records, RecordBatch.MAGIC_VALUE_V2,
                BufferSupplier.NO_CACHING)) {
            while (true) {
                if (at == out.length) {
                    if (at - HEADER >= INFLATED_BATCH_MAX) {
                        if (in.read() < 0) break;
                        throw new IllegalStateException("its " + b.compressionType().name + " records decompress to more than "
                            + INFLATED_BATCH_MAX + " bytes, the most a batch's records may inflate to (INFLATED_BATCH_MAX)");
                    }
                    out = java.util.Arrays.copyOf(out, HEADER + (int) Math.min(INFLATED_BATCH_MAX, 2L * (at - HEADER)));
                }
                int n = in.read(out, at, out.length - at);
                if (n < 0) break;
                at += n;
            }
        }
        ByteBuffer head = whole.duplicate();   // an absolute bulk get is Java 13; the 3.5 jars are Java 11
        head.position(0);
        head.get(out, 0, HEADER);
        ByteBuffer result = ByteBuffer.wrap(out, 0, at).order(ByteOrder.BIG_ENDIAN);
        result.putShort(ATTRIBUTES_OFFSET, (short) (result.getShort(ATTRIBUTES_OFFSET) & ~0x07));
        result.putInt(LENGTH_OFFSET, at - 12);
        RecordBatch plain = MemoryRecords.readableRecords(result.slice()).firstBatch();
        if (plain == null) throw new IllegalStateException("its inflated records do not make a batch");
        return plain;
    }
}
