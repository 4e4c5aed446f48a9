package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Reads an index file's entries into the heap. Readers take no lock (docs/spec.md §4), and a writer
 * may trim the file's zero tail at any moment (a seal) or drop entries (a truncation, which zeroes
 * them from the last one backwards, then a seal trims the file). Through a memory map, a read of a
 * page the file no longer has is a SIGBUS, which the JVM raises as an InternalError that Spark
 * takes for fatal (it exits the JVM, the driver's in local mode); positional reads only ever come
 * back short. So:
 *
 * <ul>
 *   <li>the entries are counted with positional reads (a slot past the end of the file reads as
 *       zeros: not an entry), as the Python indexer counts them;</li>
 *   <li>the counted entries are read into the heap and counted again there, so entries a
 *       truncation was zeroing meanwhile are left out and the copy is a whole prefix of entries;</li>
 *   <li>a file that came back shorter than counted (trimmed below them) is read again; the file
 *       only shrinks to its entries, so a few tries settle it.</li>
 * </ul>
 *
 * An index holds few entries for its segment (one per index.interval.bytes), so the copy is small
 * next to the records a reader reads from the segment.
 */
final class IndexEntries {
    private static final int ATTEMPTS = 5;

    private IndexEntries() {}

    /** One slot's bytes (position 0 to the entry size). */
    interface Slots {
        ByteBuffer read(int i) throws IOException;
    }

    /** The number of entries among the first {@code slotCount} slots (the rest is a zero tail). */
    interface Counter {
        int count(Slots slots, int slotCount) throws IOException;
    }

    /** The entries ({@code entries} of them, possibly none, in {@code buf}) and the file's size and slots when read. */
    static final class Read {
        private final ByteBuffer buf;
        private final int entries;
        private final int slots;
        private final long fileSize;

        Read(ByteBuffer buf, int entries, int slots, long fileSize) {
            this.buf = buf;
            this.entries = entries;
            this.slots = slots;
            this.fileSize = fileSize;
        }

        public ByteBuffer buf() { return buf; }
        public int entries() { return entries; }
        public int slots() { return slots; }
        public long fileSize() { return fileSize; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Read)) return false;
            Read that = (Read) o;
            return java.util.Objects.equals(buf, that.buf)
                    && entries == that.entries
                    && slots == that.slots
                    && fileSize == that.fileSize;
        }

        @Override public int hashCode() { return java.util.Objects.hash(buf, entries, slots, fileSize); }

        @Override public String toString() { return "Read[buf=" + buf + ", entries=" + entries + ", slots=" + slots + ", fileSize=" + fileSize + "]"; }

        /** The file holds its entries and nothing else (no zero tail): a sealed segment's index. */
        boolean trimmed(int entrySize) {
            return entries == slots && fileSize == (long) slots * entrySize;
        }
    
    }

    /** Slots read at their position in the file; zeros past its end. */
    static Slots inFile(FileChannel ch, int entrySize) {
        ByteBuffer slot = ByteBuffer.allocate(entrySize);
        return i -> {
            slot.clear();
            readFully(ch, slot, (long) i * entrySize);
            while (slot.hasRemaining()) {
                slot.put((byte) 0);
            }
            return slot.flip();
        };
    }

    /** {@code buf}'s bytes [index, index + length) as a new buffer (Java 13's slice(index, length); the 3.5 jars are Java 11). */
    static ByteBuffer slice(ByteBuffer buf, int index, int length) {
        ByteBuffer d = buf.duplicate();
        d.limit(index + length);
        d.position(index);
        return d.slice();
    }

    static Slots inBuffer(ByteBuffer buf, int entrySize) {
        return i -> slice(buf, i * entrySize, entrySize);
    }

    static Read read(FileChannel ch, int entrySize, Counter counter) throws IOException {
        for (int attempt = 1; ; attempt++) {
            long size = ch.size();
            int slots = (int) Math.min(size / entrySize, Integer.MAX_VALUE / entrySize);
            int counted = slots == 0 ? 0 : counter.count(inFile(ch, entrySize), slots);
            ByteBuffer buf = ByteBuffer.allocate(counted * entrySize);
            readFully(ch, buf, 0);
            if (buf.hasRemaining() && attempt < ATTEMPTS) {
                continue;                    // trimmed below the entries counted (a truncation): again
            }
            int whole = buf.position() / entrySize;
            buf.clear();
            int entries = whole == 0 ? 0 : counter.count(inBuffer(buf, entrySize), whole);
            return new Read(slice(buf, 0, entries * entrySize), entries, slots, size);
        }
    }

    /** Fills {@code buf} from {@code at} until it is full or the file ends. */
    private static void readFully(FileChannel ch, ByteBuffer buf, long at) throws IOException {
        long start = at - buf.position();
        while (buf.hasRemaining()) {
            if (ch.read(buf, start + buf.position()) < 0) {
                return;
            }
        }
    }
}
