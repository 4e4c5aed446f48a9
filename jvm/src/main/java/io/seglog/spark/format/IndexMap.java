package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Maps an index file read-only, whole entries only. Readers take no lock (docs/spec.md §4): the
 * writer may trim the file (a seal, a roll, a truncation) between our size query and the map, and
 * mapping past the end of a read-only channel fails ("cannot extend file"). Then the size is read
 * again and the map retried; the file only shrinks to its entries, so a few tries settle it.
 */
final class IndexMap {
    private static final int ATTEMPTS = 5;

    private IndexMap() {}

    /** The map (capacity a multiple of {@code entrySize}, possibly empty) and the file size it was made from. */
    record Mapped(ByteBuffer map, long fileSize) {
        int slots(int entrySize) {
            return map.capacity() / entrySize;
        }
    }

    static Mapped map(FileChannel ch, int entrySize) throws IOException {
        for (int attempt = 1; ; attempt++) {
            long size = ch.size();
            long slots = Math.min(size / entrySize, Integer.MAX_VALUE / entrySize);
            if (slots == 0) {
                return new Mapped(ByteBuffer.allocate(0), size);
            }
            try {
                return new Mapped(ch.map(FileChannel.MapMode.READ_ONLY, 0, slots * entrySize), size);
            } catch (IOException shrunk) {
                if (attempt == ATTEMPTS || ch.size() >= size) {
                    throw shrunk;            // not a concurrent trim: a real I/O failure
                }
            }
        }
    }
}
