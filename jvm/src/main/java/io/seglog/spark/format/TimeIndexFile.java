package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A segment's time index ({@code .timeindex}, docs/format.md "Time index"),
 * read into the heap (IndexEntries: a writer may trim the file under a lock-free reader).
 * Entries are 12 bytes: (timestamp ms as int64, offset - base as int32). An entry (T, O) promises that
 * every record of the segment at or below O has a timestamp of at most T. Entries strictly increase,
 * so the zero-filled tail of a preallocated file is the first all-zero slot after the first; the
 * all-zero entry (0, base) counts only as the first slot of a file whose next slot is an entry or
 * that is exactly one entry long.
 */
public final class TimeIndexFile {
    static final int ENTRY = 12;

    private final long base;
    private final ByteBuffer buf;
    private final int entries;
    private final boolean trimmed;   // the file holds its entries and nothing else (no zero tail)

    private TimeIndexFile(long base, ByteBuffer buf, int entries, boolean trimmed) {
        this.base = base;
        this.buf = buf;
        this.entries = entries;
        this.trimmed = trimmed;
    }

    /** A missing file is a {@link java.nio.file.NoSuchFileException}: the segment decides what it means. */
    public static TimeIndexFile open(Path path, long base) throws IOException {
        try (FileChannel ch = RootFiles.openReadable(path)) {
            return read(ch, base);
        }
    }

    /** Reads the entries of an open file (a segment opens its three files together: {@link Segment#open}). */
    static TimeIndexFile read(FileChannel ch, long base) throws IOException {
        IndexEntries.Read read = IndexEntries.read(ch, ENTRY, TimeIndexFile::countEntries);
        return new TimeIndexFile(base, read.buf(), read.entries(), read.trimmed(ENTRY));
    }

    private static boolean isZero(IndexEntries.Slots file, int i) throws IOException {
        ByteBuffer slot = file.read(i);
        return slot.getLong(0) == 0 && slot.getInt(8) == 0;
    }

    private static int countEntries(IndexEntries.Slots file, int slots) throws IOException {
        boolean firstIsEntry = !isZero(file, 0) || slots == 1 || !isZero(file, 1);
        if (!firstIsEntry) return 0;
        int lo = 1, hi = slots;                   // first all-zero slot after the first
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (!isZero(file, mid)) lo = mid + 1; else hi = mid;
        }
        return lo;
    }

    public int entries() {
        return entries;
    }

    /** Trimmed to its entries, as a sealed segment's indexes are (docs/format.md "Segment states"). */
    public boolean trimmed() {
        return trimmed;
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
        int lo = 0, hi = entries;                 // first entry with timestamp >= ts
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (timestampAt(mid) < ts) lo = mid + 1; else hi = mid;
        }
        return lo - 1;
    }
}
