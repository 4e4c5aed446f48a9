package io.seglog.spark.read;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.Iterator;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.seglog.spark.format.BatchBuffer;
import io.seglog.spark.format.CorruptLogException;
import io.seglog.spark.format.DataLossException;
import io.seglog.spark.format.LogStartBeyondEndException;
import io.seglog.spark.format.LogStartCheckpoint;
import io.seglog.spark.format.OffsetGaps;
import io.seglog.spark.format.SegmentListings;
import io.seglog.spark.format.PartitionLog;
import io.seglog.spark.format.Segment;
import io.seglog.spark.format.SegmentGoneException;

/**
 * The records of one slice [start, end) of a partition, as a Kafka consumer with the read's isolation
 * level returns them: never control records; read_committed also skips aborted transactions and stops
 * at an open one. Seeks with the offset index, reads with Kafka's record classes (every codec).
 *
 * Readers take no lock: a segment renamed .deleted before it is opened makes the cursor open the log
 * again at the offset it reached; below the new log start it fails naming the offsets, or with
 * failOnDataLoss=false skips to the log start (docs/spec.md §3.7), logged in the executor's log and
 * counted ({@link #skipped()}).
 *
 * Invariant: every offset of [start, end) the log should hold is returned or accounted for (a control
 * batch, an aborted transaction, a record compaction removed, an open transaction that ends the read).
 * The slice's offsets were committed when it was planned, so a segment that ends short of the next one's
 * base, or a log that ends short of the slice's end, lost records: that is reported (naming the file and
 * the position), never read as fewer rows. Bytes past the slice's bound (the committed end) are never
 * judged (Segment.Batches).
 */
final class RecordCursor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RecordCursor.class);
    /** Milliseconds before each reopen: a swap or a two-step truncation settles within them. */
    private static final long[] REOPEN_WAITS_MS = {0, 2, 10, 50, 100};

    private final ReadOptions opts;
    private final Slice slice;
    private long position;            // the next offset to return
    private PartitionLog log;
    private int segment;
    private Segment.Batches batches;
    private long segmentLast = -1;    // the last offset of the last batch drawn from the current segment
    private boolean aheadAsked;       // the segments after the current one were asked to start arriving
    private Iterator<Record> records = Collections.emptyIterator();
    private final BatchBuffer buffer;   // every batch of the walk is read into it, in turn
    private TransactionFates fates;
    private boolean finished;
    private int reopens;
    private long skipped;             // offsets skipped as data loss (failOnDataLoss=false)


    Record record;                    // the current record, after next() returned true
    TimestampType timestampType;
    long batchFrom;                   // the first offset to count of the batch nextBatch() returned

    private final java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf;

    RecordCursor(ReadOptions opts, Slice slice) {
        this(opts, slice, RemoteConf.SESSION);
    }

    /** {@code hadoopConf}: what reaches the root's remote tier (the one shipped to executors). */
    RecordCursor(ReadOptions opts, Slice slice, java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf) {
        this(opts, slice, hadoopConf, new BatchBuffer());
    }

    /** A walk whose batches are checked and counted, never shaped into rows or vectors (pushed aggregates): they are
     *  read outside the heap ({@link BatchBuffer#direct}), and {@link #bufferBytes} is not available. */
    static RecordCursor forAggregates(ReadOptions opts, Slice slice) {
        return new RecordCursor(opts, slice, RemoteConf.SESSION, BatchBuffer.direct());
    }

    private RecordCursor(ReadOptions opts, Slice slice, java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf,
                         BatchBuffer buffer) {
        this.buffer = buffer;
        this.hadoopConf = hadoopConf;
        this.opts = opts;
        this.slice = slice;
        this.position = slice.start;
    }

    private void openLog() {
        Path root = Paths.get(opts.root);
        long checkpointed = LogStartCheckpoint.read(root).getOrDefault(slice.topic + "-" + slice.partition, 0L);
        try {
            log = PartitionLog.open(root, slice.topic, slice.partition, checkpointed, OffsetGaps.at(root), SegmentListings.NONE,
                hadoopConf);
        } catch (DataLossException e) {
            throw new DataLossException("seglog source: " + slice.topic + "-" + slice.partition
                + ": the partition folder is gone; offsets " + position + " to " + (slice.end - 1) + " cannot be read");
        }
        log.requireStartWithinEnd();
        fates = opts.readCommitted ? new TransactionFates(log, slice.bound, opts.checkCrcs) : null;
        long logStart = log.logStartOffset();
        if (position < logStart) {
            if (opts.failOnDataLoss) {
                throw new DataLossException(Planner.dataLossMessage(slice.topic, slice.partition, position, logStart));
            }
            LOG.warn("seglog source: {}. Some data may have been lost; the read goes on from offset {} because "
                + "failOnDataLoss=false (set failOnDataLoss=true to fail the query instead).",
                Planner.lossOf(slice.topic, slice.partition, position, logStart), logStart);
            skipped += Math.min(logStart, slice.end) - position;
            position = logStart;
        }
        segment = log.segmentIndexFor(position) - 1;
        segmentLast = -1;
        batches = null;
        records = Collections.emptyIterator();
    }

    /** Offsets this cursor skipped as data loss (failOnDataLoss=false). */
    long skipped() {
        return skipped;
    }

    /** The log changed under the reader (a segment deleted or swapped, a start moved): close it and wait
     *  before opening it again, at most REOPEN_WAITS_MS.length times; then the change is the caller's. */
    private void reopenAfter(RuntimeException e) {
        if (reopens >= REOPEN_WAITS_MS.length) throw e;
        LOG.info("seglog source: {}: the log changed under the reader at offset {} ({}); opening it again",
            slice, position, e.getMessage());
        closeLog();
        pause(REOPEN_WAITS_MS[reopens++]);
    }

    /** Advances to the next record; false when the slice is read. */
    boolean next() {
        while (!finished) {
            try {
                if (advance()) return true;
            } catch (SegmentGoneException | LogStartBeyondEndException e) {
                reopenAfter(e);
            }
        }
        return false;
    }

    private static void pause(long ms) {
        if (ms <= 0) return;
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private boolean advance() {
        if (log == null) openLog();
        while (true) {
            while (records.hasNext()) {
                Record r = records.next();
                long off = r.offset();
                if (off < position) continue;
                if (off >= slice.end) {
                    finished = true;
                    return false;
                }
                position = off + 1;
                record = r;
                return true;
            }
            FileChannelRecordBatch b = nextDataBatch();
            if (b == null) {
                finished = true;
                return false;
            }
            timestampType = b.timestampType();
            records = recordsOf(b);
        }
    }

    /**
     * Batch by batch, for the pushed aggregate ({@link PushedAggregate}): the next batch holding records this
     * cursor returns, or null when the slice is read. Its records to count are those in
     * [{@link #batchFrom}, the slice's end); the cursor moves past the batch. Faults, data loss and a log
     * that changes underneath are handled as for {@link #next()}: the two walks are one ({@link #nextDataBatch}).
     */
    FileChannelRecordBatch nextBatch() {
        while (!finished) {
            try {
                if (log == null) openLog();
                FileChannelRecordBatch b = nextDataBatch();
                if (b == null) {
                    finished = true;
                    return null;
                }
                batchFrom = position;
                position = b.lastOffset() + 1;
                return b;
            } catch (SegmentGoneException | LogStartBeyondEndException e) {
                reopenAfter(e);
            }
        }
        return null;
    }

    /** The batch {@code b} (the one just drawn) as read into the walk's buffer, or {@code b} itself when it was not
     *  read so (a batch older than magic 2): the same records either way. Valid until the next batch is drawn. */
    RecordBatch inMemory(FileChannelRecordBatch b) {
        RecordBatch m = batches.inMemory();
        return m != null ? m : b;
    }

    /** The records of {@code b} (the batch just drawn), a record that does not parse reported naming the segment
     *  and the batch's position ({@link CheckedRecords}). */
    Iterator<Record> recordsOf(FileChannelRecordBatch b) {
        return CheckedRecords.of(inMemory(b), log.segment(segment).where(), b.position());
    }

    /** The bytes of the batch {@link #inMemory} returned last stay until {@link #releaseHeldBytes} (a columnar batch
     *  points into them: BatchBytesVector). */
    void holdBatchBytes() {
        buffer.hold();
    }

    /** What {@link #holdBatchBytes} held may be read into again, but the current batch's bytes. */
    void releaseHeldBytes() {
        buffer.releaseAllButCurrent();
    }

    /** The walk's buffer: the batch {@link #inMemory} returned last starts at its position 0. */
    byte[] bufferBytes() {
        return buffer.array();
    }

    /**
     * The next batch with records at or after {@code position} and below the slice's end, as a consumer of
     * the read's isolation level sees them: control batches and aborted transactions skipped (the position
     * moves past them), an open transaction ending the read; null when nothing is left.
     */
    private FileChannelRecordBatch nextDataBatch() {
        while (true) {
            if (position >= slice.end) return null;
            if (batches == null || !batches.hasNext()) {
                if (!nextSegment()) return null;
                continue;
            }
            FileChannelRecordBatch b = batches.next();
            if (!aheadAsked) {          // the segment's first batch is in: the next segments may start arriving
                aheadAsked = true;
                prefetchNext();
            }
            segmentLast = b.lastOffset();
            if (b.lastOffset() < position) continue;
            if (b.baseOffset() >= slice.end) return null;
            if (b.isControlBatch()) {
                position = b.lastOffset() + 1;
                continue;
            }
            if (fates != null && b.isTransactional()) {
                int fate = fates.fate(b.producerId(), b.baseOffset());
                if (fate == TransactionFates.OPEN) return null;      // the last stable offset: nothing from here on
                if (fate == TransactionFates.ABORT) {
                    position = b.lastOffset() + 1;
                    continue;
                }
            }
            return b;
        }
    }

    private boolean nextSegment() {
        // Offsets below `covered` were returned or accounted for (the last batch drawn ends at segmentLast; a walk
        // that met a batch starting at or past the bound accounts for the gap below that batch: the segment holds
        // nothing there, as a cleaned segment's emptied batches above the committed end show).
        long covered = Math.max(position, segmentLast + 1);
        if (batches != null) covered = Math.max(covered, batches.metPastBound());
        if (batches != null && segment + 1 < log.segmentCount()) {
            long next = log.base(segment + 1);
            if (segmentLast >= next) {
                // A merged or cleaned segment opened under a listing taken before its swap holds the offsets of
                // segments listed after it (docs/spec.md §3.10): never read them twice, open the log again.
                throw new SegmentGoneException(log.dir + ": segment " + log.base(segment) + " reaches offset "
                    + segmentLast + " past the next one listed, " + next + ": segments were swapped in while in use");
            }
            if (covered < Math.min(next, slice.end)) {
                if (!log.dense) {
                    // A cleaned segment always ends where the next begins (batches emptied by the cleaner are kept
                    // for their last offset: docs/spec.md §3.9): a hole is a listing taken while the cleaner swapped
                    // a group in. Never skip it: open the log again at the offset reached (the core does the same).
                    throw new SegmentGoneException(log.dir + ": segment " + log.base(segment) + " ends at offset "
                        + segmentLast + " but the next one listed starts at " + next
                        + ": segments were swapped in while in use");
                }
                // Dense offsets run on from segment to segment: the sealed segment lost its tail.
                throw new CorruptLogException(log.segment(segment).where() + ": offsets " + covered + " to " + (next - 1)
                    + " are lost: the .log ends at position " + batches.position()
                    + (segmentLast >= 0 ? " after offset " + segmentLast : "") + ", and the next segment starts at " + next);
            }
        }
        if (segment + 1 >= log.segmentCount()) {
            // The log ends, and the slice's offsets were committed when it was planned: the last segment lost
            // its tail (a torn batch below the bound is reported by Batches with its position), or the log
            // was cut below its committed end since.
            if (covered < slice.end) {
                String where = log.segmentCount() == 0 ? log.dir + ": the log has no segment"
                    : log.segment(log.segmentCount() - 1).where() + ": the log ends at position "
                        + (batches != null && segment == log.segmentCount() - 1 ? batches.position() : log.segment(log.segmentCount() - 1).size());
                throw new CorruptLogException(where + ", but offsets " + covered + " to " + (slice.end - 1)
                    + " were committed (the committed end was " + slice.bound + " when the read was planned): those records are lost");
            }
            return false;
        }
        segmentLast = -1;
        segment++;
        if (log.base(segment) >= slice.end) return false;
        Segment seg = log.segment(segment);
        if (seg.size() == 0 && segment < log.segmentCount() - 1) {
            // Offsets base..next base - 1 belonged to this segment and its .log is empty: lost records are
            // reported, never skipped (docs/format.md "Segment states").
            throw new CorruptLogException(seg.where() + ": the .log is empty but offsets " + seg.base + " to "
                + (log.base(segment + 1) - 1) + " belonged to it: those records are lost");
        }
        batches = seg.batchesHolding(Math.max(position, seg.base), slice.bound).readInto(buffer).checkingCrcs(opts.checkCrcs)
            .readingUntil(slice.end);
        aheadAsked = false;         // asked once its first batch is in (nextDataBatch)
        return true;
    }

    /** Tiered segments of the slice ahead of this one start arriving while it is read (no stall at each segment;
     *  each fetches at most its read-ahead window ahead of a walk). Asked once the segment's first batch is in
     *  ({@link #nextDataBatch}): a walk's own fetch, which it waits for, never shares the server with them. */
    private static final int SEGMENTS_AHEAD = 2;

    private void prefetchNext() {
        for (int next = segment + 1; next <= segment + SEGMENTS_AHEAD && next < log.segmentCount() && log.base(next) < slice.end; next++) {
            log.segment(next).prefetch(log.base(next), slice.end);
        }
    }

    private void closeLog() {
        if (log != null) log.close();
        log = null;
    }

    @Override
    public void close() {
        closeLog();
    }
}
