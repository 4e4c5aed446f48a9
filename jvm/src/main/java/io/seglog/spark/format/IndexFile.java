package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A segment index read into the heap (as Kafka's AbstractIndex is for its OffsetIndex and TimeIndex): fixed-size
 * entries, relative to the segment's base offset, strictly increasing, so both the zero tail of a preallocated
 * file and a lookup are binary searches. The subclasses say the entry layout and what counts as an entry; this
 * class holds the entries (read by {@link IndexEntries}: a writer may trim the file under a lock-free reader).
 */
abstract class IndexFile {
    final long base;
    final ByteBuffer buf;
    private final int entries;
    private final boolean trimmed;   // the file holds its entries and nothing else (no zero tail)

    IndexFile(long base, IndexEntries.Read read, int entrySize) {
        this.base = base;
        this.buf = read.buf();
        this.entries = read.entries();
        this.trimmed = read.trimmed(entrySize);
    }

    /** Reads an index from its open file. */
    interface Reader<T extends IndexFile> {
        T read(FileChannel ch) throws IOException;
    }

    /** The index at {@code path}, read by {@code reader}. A missing file is a {@link java.nio.file.NoSuchFileException}:
     *  the segment decides what that means ({@link Segment#open}). */
    static <T extends IndexFile> T open(Path path, Reader<T> reader) throws IOException {
        try (FileChannel ch = RootFiles.openReadable(path)) {      // never through a link
            return reader.read(ch);
        }
    }

    /** A predicate on slot or entry {@code i}, true on a prefix of [lo, hi). */
    interface Prefix {
        boolean test(int i) throws IOException;
    }

    /** The first i in [lo, hi) where {@code holds} is false (hi if none), {@code holds} true on a prefix: binary search. */
    static int prefixEnd(int lo, int hi, Prefix holds) throws IOException {
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (holds.test(mid)) lo = mid + 1; else hi = mid;
        }
        return lo;
    }

    /** The entries before the first that {@code holds} is false for (a lookup in the heap: no I/O). */
    final int entriesWhile(Prefix holds) {
        try {
            return prefixEnd(0, entries, holds);
        } catch (IOException e) {
            throw new IllegalStateException(e);   // unreachable: the entries are in the heap
        }
    }

    public final int entries() {
        return entries;
    }

    /** Trimmed to its entries, as a sealed segment's indexes are (docs/format.md "Segment states"). */
    public final boolean trimmed() {
        return trimmed;
    }
}
