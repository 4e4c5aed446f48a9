package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Maps an index file's entries read-only. Readers take no lock (docs/spec.md §4), and a writer may
 * trim the file's zero tail at any moment (a seal, a clean close). A read through a map of a page
 * the file no longer has is a SIGBUS, which the JVM turns into an InternalError: Spark takes that
 * for a fatal error and exits the JVM (the driver's, in local mode). So:
 *
 * <ul>
 *   <li>the entries are counted with positional reads, never through a map (a slot past the end
 *       of the file reads as zeros: not an entry), as the Python indexer counts them;</li>
 *   <li>only the counted entries are mapped, and a writer removes entries from the file only by a
 *       truncation (docs/format.md "Offset index");</li>
 *   <li>a writer that trims the file between the count and the map makes the map fail ("cannot
 *       extend file" on a read-only channel): then everything is read again; the file only shrinks
 *       to its entries, so a few tries settle it.</li>
 * </ul>
 */
final class IndexMap {
    private static final int ATTEMPTS = 5;

    private IndexMap() {}

    /** The number of entries among the file's first {@code slots} slots, read through {@code slots}. */
    interface Counter {
        int count(Slots slots, int slotCount) throws IOException;
    }

    /** The mapped entries ({@code entries} of them, possibly none) and the file's size and slots when counted. */
    record Mapped(ByteBuffer map, int entries, int slots, long fileSize) {
        /** The file holds its entries and nothing else (no zero tail): a sealed segment's index. */
        boolean trimmed(int entrySize) {
            return entries == slots && fileSize == (long) slots * entrySize;
        }
    }

    /** One slot's bytes at a time, read at their position in the file (never through a map). */
    static final class Slots {
        private final FileChannel ch;
        private final int entrySize;
        private final ByteBuffer buf;

        Slots(FileChannel ch, int entrySize) {
            this.ch = ch;
            this.entrySize = entrySize;
            this.buf = ByteBuffer.allocate(entrySize);
        }

        /** Slot {@code i}'s bytes (position 0 to entrySize); zeros past the end of the file. */
        ByteBuffer read(int i) throws IOException {
            buf.clear();
            long at = (long) i * entrySize;
            while (buf.hasRemaining()) {
                if (ch.read(buf, at + buf.position()) < 0) {
                    break;
                }
            }
            while (buf.hasRemaining()) {
                buf.put((byte) 0);
            }
            return buf.flip();
        }
    }

    static Mapped map(FileChannel ch, int entrySize, Counter counter) throws IOException {
        for (int attempt = 1; ; attempt++) {
            long size = ch.size();
            int slots = (int) Math.min(size / entrySize, Integer.MAX_VALUE / entrySize);
            int entries = slots == 0 ? 0 : counter.count(new Slots(ch, entrySize), slots);
            if (entries == 0) {
                return new Mapped(ByteBuffer.allocate(0), 0, slots, size);
            }
            try {
                return new Mapped(ch.map(FileChannel.MapMode.READ_ONLY, 0, (long) entries * entrySize),
                                  entries, slots, size);
            } catch (IOException shrunk) {
                if (attempt == ATTEMPTS || ch.size() >= size) {
                    throw shrunk;            // not a concurrent trim: a real I/O failure
                }
            }
        }
    }
}
