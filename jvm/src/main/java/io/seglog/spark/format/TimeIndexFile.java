package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * A segment's time index ({@code .timeindex}, docs/format.md "Time index"),
 * read into the heap (IndexEntries: a writer may trim the file under a lock-free reader).
 * Entries are 12 bytes: (timestamp ms as int64, offset - base as int32). An entry (T, O) promises that
 * every record of the segment at or below O has a timestamp of at most T. Entries strictly increase,
 * so the zero-filled tail of a preallocated file is the first all-zero slot after the first; the
 * all-zero entry (0, base) counts only as the first slot of a file whose next slot is an entry or
 * that is exactly one entry long.
 */
public final class TimeIndexFile extends IndexFile {
    static final int ENTRY = 12;

    private TimeIndexFile(long base, IndexEntries.Read read) {
        super(base, read, ENTRY);
    }

    /** The index of the segment based at {@code base} ({@link IndexFile#open}). */
    public static TimeIndexFile open(Path path, long base) throws IOException {
        return open(path, ch -> read(ch, base));
    }

    /** Reads the entries of an open file (a segment opens its three files together: {@link Segment#open}). */
    static TimeIndexFile read(FileChannel ch, long base) throws IOException {
        return new TimeIndexFile(base, IndexEntries.read(ch, ENTRY, TimeIndexFile::countEntries));
    }

    private static boolean isZero(IndexEntries.Slots file, int i) throws IOException {
        ByteBuffer slot = file.read(i);
        return slot.getLong(0) == 0 && slot.getInt(8) == 0;
    }

    private static int countEntries(IndexEntries.Slots file, int slots) throws IOException {
        boolean firstIsEntry = !isZero(file, 0) || slots == 1 || !isZero(file, 1);
        if (!firstIsEntry) return 0;
        return prefixEnd(1, slots, i -> !isZero(file, i));   // the first all-zero slot after the first
    }

    public long timestampAt(int i) {
        return buf.getLong(i * ENTRY);
    }

    public long offsetAt(int i) {
        return base + buf.getInt(i * ENTRY + 8);
    }

    /** The last entry whose timestamp is strictly below {@code ts}, or -1: every record at or below its
     *  offset is older than ts, so the first record at or after ts comes later (docs/format.md). */
    public int lastStrictlyBelow(long ts) {
        return entriesWhile(i -> timestampAt(i) < ts) - 1;   // before the first entry with timestamp >= ts
    }
}
