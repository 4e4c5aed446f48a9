package io.seglog.spark.format;

import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.RecordBatch;

/**
 * The records of an uncompressed v2 batch frame it exactly: as many records as its header counts, each a zigzag
 * varint length and that many bytes, the last ending where the batch ends (docs/format.md "Record batches"). What a
 * read without CRC checks ({@link Segment.Batches#checkingCrcs}) still holds a batch's body to: a damaged record
 * length is then reported naming the batch, never read as other records. A compressed batch's records are framed
 * inside its compressed bytes: its codec and Kafka's iterator report them as they are decompressed.
 */
final class RecordFraming {
    private static final int RECORDS_COUNT_OFFSET = 57;
    private static final int RECORDS_OFFSET = 61;

    private RecordFraming() {}

    /** Null when the batch in {@code bytes[0, batch.sizeInBytes())} is framed exactly (or compressed), else what is wrong. */
    static String check(RecordBatch batch, byte[] bytes) {
        if (batch.compressionType() != CompressionType.NONE) return null;
        int size = batch.sizeInBytes();
        int n = ((bytes[RECORDS_COUNT_OFFSET] & 0xff) << 24) | ((bytes[RECORDS_COUNT_OFFSET + 1] & 0xff) << 16)
            | ((bytes[RECORDS_COUNT_OFFSET + 2] & 0xff) << 8) | (bytes[RECORDS_COUNT_OFFSET + 3] & 0xff);
        int pos = RECORDS_OFFSET;
        for (int i = 0; i < n; i++) {
            // a zigzag varint of at most 5 bytes (Kafka's ByteUtils.readVarint)
            int raw = 0, shift = 0;
            while (true) {
                if (pos >= size || shift > 28) return "record " + i + " of " + n + ": its length runs past the batch's end";
                byte x = bytes[pos++];
                raw |= (x & 0x7f) << shift;
                if ((x & 0x80) == 0) break;
                shift += 7;
            }
            int length = (raw >>> 1) ^ -(raw & 1);
            if (length <= 0 || length > size - pos) {
                return "record " + i + " of " + n + " has length " + length + " at batch byte " + pos + ", but "
                    + (size - pos) + " bytes are left in the batch";
            }
            pos += length;
        }
        if (pos != size) return "its " + n + " records end at batch byte " + pos + " but the batch is " + size + " bytes";
        return null;
    }
}
