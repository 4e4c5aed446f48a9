package io.seglog.spark.format;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * A segment's offset index ({@code .index}, docs/format.md "Offset index"),
 * read into the heap (IndexEntries: a writer may trim the file under a lock-free reader).
 * Entries are 8 bytes: (offset - base as int32, byte position of a batch as int32); the key is the
 * batch's last offset, the value where the batch starts. Entries strictly increase in both fields
 * and every real entry has a position above zero, so a preallocated zero-filled tail (an active or
 * inactive segment) is the first slot whose position is zero: found by binary search.
 */
public final class OffsetIndexFile extends IndexFile {
    static final int ENTRY = 8;

    private OffsetIndexFile(long base, IndexEntries.Read read) {
        super(base, read, ENTRY);
    }

    /** The index of the segment based at {@code base} ({@link IndexFile#open}). */
    public static OffsetIndexFile open(Path path, long base) throws IOException {
        return open(path, ch -> read(ch, base));
    }

    static OffsetIndexFile read(FileChannel ch, long base) throws IOException {
        return new OffsetIndexFile(base, IndexEntries.read(ch, ENTRY, OffsetIndexFile::countEntries));
    }

    /** Entries are the prefix of slots with a position above zero (the tail is zeros). */
    private static int countEntries(IndexEntries.Slots file, int slots) throws IOException {
        return prefixEnd(0, slots, i -> file.read(i).getInt(4) > 0);
    }

    public long offsetAt(int i) {
        return base + buf.getInt(i * ENTRY);
    }

    public int positionAt(int i) {
        return buf.getInt(i * ENTRY + 4);
    }

    /** The last entry whose offset is at most {@code target}, or -1 (then the scan starts at 0). */
    public int floorEntry(long target) {
        long rel = target - base;
        if (rel < 0) return -1;
        return entriesWhile(i -> buf.getInt(i * ENTRY) <= rel) - 1;   // before the first entry with key > rel
    }
}
