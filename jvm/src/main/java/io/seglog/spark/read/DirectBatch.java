package io.seglog.spark.read;

import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;

/**
 * The records of one uncompressed v2 record batch, decoded straight from its bytes for the columnar output: where
 * each key and value lies in the batch's buffer, each record's offset and timestamp delta, and no object per
 * record (Kafka's iterator makes a record, two buffer slices and a header array for each). The layout is Kafka's
 * (docs/format.md "Record batches"): after the 61-byte batch header, per record a zigzag varint length, then
 * attributes (int8), timestamp delta (varlong), offset delta (varint), key length (varint, negative: null) and key,
 * value length and value, header count (varint) and headers (key length + key, value length + value).
 *
 * <p>Invariant: {@link #decode} accepts a batch only if its bytes parse exactly as the count of records its header
 * declares, each record exactly its declared length; anything else is left to Kafka's iterator, which reports it as
 * a read did before this decoder existed (the caller falls back to it). The batch's CRC was checked when it was read, or
 * with checkCrcs=false not (this exact parse, or Kafka's iterator behind read.CheckedRecords, then reports a damaged
 * record length as a corrupt batch).
 */
final class DirectBatch {
    private static final int RECORDS_COUNT_OFFSET = 57;
    private static final int RECORDS_OFFSET = 61;

    int count;
    long baseOffset;
    long firstTimestamp;
    long maxTimestamp;
    TimestampType timestampType;
    int[] offsetDelta = new int[1024];
    long[] timestampDelta = new long[1024];
    int[] keyPos = new int[1024];
    int[] keyLen = new int[1024];        // negative: a null key
    int[] valuePos = new int[1024];
    int[] valueLen = new int[1024];      // negative: a null value

    private byte[] b;
    private int pos;
    private int limit;

    /** Whether {@code batch} can be decoded here at all: a v2 batch without compression. */
    static boolean eligible(RecordBatch batch) {
        return batch.magic() == RecordBatch.MAGIC_VALUE_V2 && batch.compressionType() == CompressionType.NONE;
    }

    /** Decodes the batch held in {@code bytes[0, size)}; false (nothing to use) when its bytes do not parse exactly. */
    boolean decode(RecordBatch batch, byte[] bytes, int size) {
        b = bytes;
        limit = size;
        if (size < RECORDS_OFFSET) return false;
        int n = ((b[RECORDS_COUNT_OFFSET] & 0xff) << 24) | ((b[RECORDS_COUNT_OFFSET + 1] & 0xff) << 16)
            | ((b[RECORDS_COUNT_OFFSET + 2] & 0xff) << 8) | (b[RECORDS_COUNT_OFFSET + 3] & 0xff);
        if (n < 0) return false;
        ensure(n);
        baseOffset = batch.baseOffset();
        timestampType = batch.timestampType();
        maxTimestamp = batch.maxTimestamp();
        firstTimestamp = readLongAt(27);
        pos = RECORDS_OFFSET;
        try {
            for (int i = 0; i < n; i++) {
                int length = varint();
                if (length < 0 || length > limit - pos) return false;
                int start = pos;
                pos++;                                   // attributes (unused in v2)
                timestampDelta[i] = varlong();
                offsetDelta[i] = varint();
                int k = varint();
                keyPos[i] = pos;
                keyLen[i] = k;
                if (k > 0) skip(k);
                int v = varint();
                valuePos[i] = pos;
                valueLen[i] = v;
                if (v > 0) skip(v);
                int headers = varint();
                if (headers < 0) return false;
                for (int h = 0; h < headers; h++) {
                    int hk = varint();
                    if (hk < 0) return false;
                    skip(hk);
                    int hv = varint();
                    if (hv > 0) skip(hv);
                }
                if (pos - start != length) return false;
            }
        } catch (IndexOutOfBoundsException e) {
            return false;                                // a length running past the batch
        }
        if (pos != limit) return false;                  // bytes past the declared records
        count = n;
        return true;
    }

    private void ensure(int n) {
        if (offsetDelta.length >= n) return;
        int m = Math.max(n, offsetDelta.length * 2);
        offsetDelta = new int[m];
        timestampDelta = new long[m];
        keyPos = new int[m];
        keyLen = new int[m];
        valuePos = new int[m];
        valueLen = new int[m];
    }

    private void skip(int n) {
        if (n > limit - pos) throw new IndexOutOfBoundsException();
        pos += n;
    }

    private byte next() {
        if (pos >= limit) throw new IndexOutOfBoundsException();
        return b[pos++];
    }

    private long readLongAt(int at) {
        long v = 0;
        for (int i = 0; i < 8; i++) v = (v << 8) | (b[at + i] & 0xff);
        return v;
    }

    /** A zigzag varint of at most 5 bytes (Kafka's ByteUtils.readVarint). */
    private int varint() {
        int value = 0;
        for (int shift = 0; shift < 35; shift += 7) {
            byte x = next();
            value |= (x & 0x7f) << shift;
            if ((x & 0x80) == 0) return (value >>> 1) ^ -(value & 1);
        }
        throw new IndexOutOfBoundsException();          // more than 5 bytes: not a varint
    }

    /** A zigzag varlong of at most 10 bytes (Kafka's ByteUtils.readVarlong). */
    private long varlong() {
        long value = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            byte x = next();
            value |= (long) (x & 0x7f) << shift;
            if ((x & 0x80) == 0) return (value >>> 1) ^ -(value & 1);
        }
        throw new IndexOutOfBoundsException();
    }

    /** The record's timestamp as Kafka's iterator gives it: the batch's max timestamp under LogAppendTime. */
    long timestamp(int i) {
        return timestampType == TimestampType.LOG_APPEND_TIME ? maxTimestamp : firstTimestamp + timestampDelta[i];
    }

    long offset(int i) {
        return baseOffset + offsetDelta[i];
    }

    byte[] bytes() {
        return b;
    }
}
