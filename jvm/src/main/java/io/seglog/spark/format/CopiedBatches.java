package io.seglog.spark.format;

import java.nio.ByteBuffer;

/**
 * Whole record batches back to back in {@code data}, their real offsets already in place, as an append takes
 * them (the core's EncodedBatches): {@code positions} has {@code count + 1} entries (batch i is
 * [positions[i], positions[i + 1]) of data), and per batch its last offset, first timestamp and largest
 * timestamp (-1: none).
 */
final class CopiedBatches {
    final ByteBuffer data;
    final long[] positions;
    final long[] lastOffsets;
    final long[] firstTs;
    final long[] maxTs;
    final int count;

    CopiedBatches(ByteBuffer data, long[] positions, long[] lastOffsets, long[] firstTs, long[] maxTs) {
        this.data = data;
        this.positions = positions;
        this.lastOffsets = lastOffsets;
        this.firstTs = firstTs;
        this.maxTs = maxTs;
        this.count = lastOffsets.length;
    }

    long size(int i) {
        return positions[i + 1] - positions[i];
    }
}
