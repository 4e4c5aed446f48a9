package io.seglog.spark.format;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.RecordBatch;

/**
 * One segment read-only: its {@code .log} through Kafka's {@link FileRecords} (positional reads, so a
 * concurrent truncation past the committed end is an end of file, never a fault) and its two indexes.
 * A segment exists when its {@code .log} does; its indexes are created before it (docs/format.md).
 */
public final class Segment implements Closeable {
    public static final String LOG = ".log";

    public final long base;
    /** Offsets run on from batch to batch (each base = the previous last + 1); false where compaction may
     *  have left gaps ({@link OffsetGaps}): then each batch must only start above the previous one. */
    public final boolean dense;
    private final Path logPath;
    private final FileRecords records;
    private final int size;
    private final OffsetIndexFile offsetIndex;
    private TimeIndexFile timeIndex;
    private long largest = Long.MIN_VALUE;   // computed on first need

    private Segment(long base, boolean dense, Path logPath, FileRecords records, OffsetIndexFile offsetIndex) {
        this.base = base;
        this.dense = dense;
        this.logPath = logPath;
        this.records = records;
        this.size = records.sizeInBytes();
        this.offsetIndex = offsetIndex;
    }

    public static String fileName(long base, String suffix) {
        return String.format("%020d%s", base, suffix);
    }

    /** Opens the segment; a segment deleted since it was listed is a {@link SegmentGoneException}. */
    public static Segment open(Path dir, long base, boolean dense) {
        Path log = dir.resolve(fileName(base, LOG));
        try {
            OffsetIndexFile index = OffsetIndexFile.open(dir.resolve(fileName(base, ".index")), base);
            FileRecords records = FileRecords.open(log.toFile(), false);
            return new Segment(base, dense, log, records, index);
        } catch (NoSuchFileException e) {
            throw new SegmentGoneException(log + " was deleted while the log was read", e);
        } catch (IOException e) {
            throw new CorruptLogException("cannot open " + log + ": " + e, e);
        }
    }

    public Path path() {
        return logPath;
    }

    public int size() {
        return size;
    }

    public OffsetIndexFile offsetIndex() {
        return offsetIndex;
    }

    public TimeIndexFile timeIndex() {
        if (timeIndex == null) {
            try {
                timeIndex = TimeIndexFile.open(logPath.resolveSibling(fileName(base, ".timeindex")), base);
            } catch (IOException e) {
                throw new CorruptLogException("cannot open the time index of " + logPath + ": " + e, e);
            }
        }
        return timeIndex;
    }

    /** Checked batches from file position {@code pos} (see {@link Batches}). */
    public Batches batchesFrom(int pos, long expectedBase, long expectedLast) {
        return new Batches(pos, expectedBase, expectedLast);
    }

    /**
     * Checked batches from the batch holding {@code offset} (index floor, then a forward walk:
     * docs/spec.md §3.4). Batches ending below {@code offset} are skipped.
     */
    public Batches batchesHolding(long offset) {
        int floor = offsetIndex.floorEntry(offset);
        if (floor < 0) {
            return new Batches(0, base, -1);
        }
        return new Batches(offsetIndex.positionAt(floor), -1, offsetIndex.offsetAt(floor));
    }

    /** The byte position of the batch at or before the index floor of {@code offset} (an estimate). */
    public int floorPosition(long offset) {
        int floor = offsetIndex.floorEntry(offset);
        return floor < 0 ? 0 : offsetIndex.positionAt(floor);
    }

    /**
     * The segment's largest timestamp: its last time index entry's (every record up to that entry's
     * offset, and up to the last offset index entry written with or after it, is at most that) and
     * every batch from the last offset index entry on (the part no entry covers yet).
     */
    public long largestTimestamp(long nextBase) {
        if (largest == Long.MIN_VALUE) {
            TimeIndexFile ti = timeIndex();
            if (sealed(ti, nextBase)) {
                // A sealed segment's last time index entry says its largest timestamp (docs/format.md).
                largest = ti.timestampAt(ti.entries() - 1);
                return largest;
            }
            long max = ti.entries() > 0 ? ti.timestampAt(ti.entries() - 1) : RecordBatch.NO_TIMESTAMP;
            int n = offsetIndex.entries();
            Batches it = n == 0 ? new Batches(0, base, -1)
                                : new Batches(offsetIndex.positionAt(n - 1), -1, offsetIndex.offsetAt(n - 1));
            it.tolerateTornTail = true;
            while (it.hasNext()) {
                max = Math.max(max, it.next().maxTimestamp());
            }
            largest = max;
        }
        return largest;
    }

    /** Sealed, from the files alone: both indexes trimmed and the last time index entry inside the
     *  segment (below the next segment's base; the active segment, nextBase = MAX, is never sealed). */
    private boolean sealed(TimeIndexFile ti, long nextBase) {
        return nextBase != Long.MAX_VALUE && offsetIndex.trimmed() && ti.trimmed() && ti.entries() > 0
            && ti.offsetAt(ti.entries() - 1) >= base && ti.offsetAt(ti.entries() - 1) < nextBase;
    }

    /** The offset after the last whole, valid batch (a torn tail of a crashed writer is not read). */
    public long nextOffset() {
        int n = offsetIndex.entries();
        Batches it = n == 0 ? new Batches(0, base, -1)
                            : new Batches(offsetIndex.positionAt(n - 1), -1, offsetIndex.offsetAt(n - 1));
        it.tolerateTornTail = true;
        long next = n == 0 ? base : offsetIndex.offsetAt(n - 1) + 1;
        while (it.hasNext()) {
            next = it.next().lastOffset() + 1;
        }
        return next;
    }

    @Override
    public void close() {
        try {
            records.closeHandlers();
        } catch (IOException e) {
            // read-only: nothing to lose
        }
    }

    /**
     * Batches from a file position, each checked: its CRC (Kafka's {@code ensureValid}), and offsets
     * dense from the previous batch (the CRC leaves the base offset out: docs/format.md). The first
     * batch must start at {@code expectedBase} (position 0: the segment's base) or end at
     * {@code expectedLast} (an index entry's key), whichever is given. In a segment that may have gaps
     * ({@link #dense} false) "dense" weakens to "above": the first batch at or above the base, each
     * next one above the previous last offset (the Python core's check, indexer/segment.py).
     */
    public final class Batches implements Iterator<FileChannelRecordBatch> {
        private final Iterator<FileChannelRecordBatch> it;
        private long expectedBase;
        private long expectedLast;
        private long prevLast;
        private boolean first = true;
        private FileChannelRecordBatch next;
        boolean tolerateTornTail;

        Batches(int pos, long expectedBase, long expectedLast) {
            this.it = pos >= size ? java.util.Collections.emptyIterator() : records.batchesFrom(pos).iterator();
            this.expectedBase = expectedBase;
            this.expectedLast = expectedLast;
        }

        @Override
        public boolean hasNext() {
            if (next != null) return true;
            FileChannelRecordBatch b;
            try {
                if (!it.hasNext()) return false;
                b = it.next();
                b.ensureValid();
            } catch (org.apache.kafka.common.KafkaException e) {
                if (tolerateTornTail) return false;
                throw new CorruptLogException(logPath + ": a corrupt batch: " + e.getMessage(), e);
            }
            if (first) {
                if (expectedBase >= 0 && (dense ? b.baseOffset() != expectedBase : b.baseOffset() < expectedBase)) {
                    throw new CorruptLogException(logPath + ": the batch at position " + b.position()
                        + " starts at offset " + b.baseOffset() + ", expected " + expectedBase + (dense ? "" : " or above"));
                }
                if (expectedLast >= 0 && b.lastOffset() != expectedLast) {
                    throw new CorruptLogException(logPath + ": the batch at position " + b.position()
                        + " ends at offset " + b.lastOffset() + ", but the offset index says " + expectedLast);
                }
                first = false;
            } else if (dense ? b.baseOffset() != prevLast + 1 : b.baseOffset() <= prevLast) {
                if (tolerateTornTail) return false;
                throw new CorruptLogException(logPath + ": the batch at position " + b.position()
                    + " starts at offset " + b.baseOffset() + ", expected " + (prevLast + 1) + (dense ? "" : " or above"));
            }
            prevLast = b.lastOffset();
            next = b;
            return true;
        }

        @Override
        public FileChannelRecordBatch next() {
            if (!hasNext()) throw new NoSuchElementException();
            FileChannelRecordBatch b = next;
            next = null;
            return b;
        }
    }
}
