package io.seglog.spark.read;

import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.LongAdder;

import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.Record;

import io.seglog.spark.format.PartitionLog;
import io.seglog.spark.format.Segment;
import io.seglog.spark.format.SegmentGoneException;

/**
 * read_committed (docs/kafka.md "Transactions", the Python core's indexer/transactions.py): a
 * transactional batch of producer P belongs to the transaction that P's next control marker after it
 * ends. Markers are learnt lazily, walking batch headers forward from the first transactional batch a
 * read meets, only as far as needed. No marker yet: the transaction is open, and a read_committed
 * consumer stops at its first offset (the last stable offset).
 *
 * The walk stops at {@code bound}, the committed end: a marker past it is not committed (Kafka's last stable
 * offset never passes the high watermark), and the bytes there may be torn by a write in flight or a roll
 * back cutting them, so they are never read (docs/spec.md §4).
 *
 * A stream keeps one per partition across its triggers ({@link #lastStableOffset}): what it learnt (the
 * markers, where the marker walk stopped, how far every transaction is decided) holds for later triggers,
 * since a marker below the committed end is committed and a fate, once decided, never changes. So a trigger
 * reads the batches appended since the last one, not the backlog again (issue 24). Knowledge is kept by
 * offset, never as open files: each trigger walks the log it opened itself.
 */
final class TransactionFates {
    static final int OPEN = 0, COMMIT = 1, ABORT = 2;
    /** Batch headers read by fates in this JVM (tests hold a trigger's read_committed cost to what is new). */
    private static final LongAdder BATCHES_READ = new LongAdder();

    private PartitionLog log;
    /** Kafka's check.crcs (the read's checkCrcs): false walks the batch headers only, decoding just the markers. */
    private final boolean checkCrcs;
    private long bound;
    private final Map<Long, TreeMap<Long, Boolean>> markers = new HashMap<>();   // pid -> offset -> committed
    // Invariant: every control marker with an offset in [markersFrom, markersTo) is in `markers`; -1 before any.
    private long markersFrom = -1;
    private long markersTo = -1;
    private int segment = -1;            // the marker walk's place in this look's log
    private Segment.Batches walk;
    private boolean done;                // this look's log holds nothing more below the bound
    // A stream's memory: every transactional batch based in [decidedFrom, decidedTo) has its marker below the
    // committed end; -1 before any.
    private long decidedFrom = -1;
    private long decidedTo = -1;

    /** An executor's, for one read of {@code log} below {@code bound}, checking CRCs or not (the read's checkCrcs). */
    TransactionFates(PartitionLog log, long bound, boolean checkCrcs) {
        this.log = log;
        this.bound = bound;
        this.checkCrcs = checkCrcs;
    }

    /** A stream's, for one partition: given a log at each {@link #lastStableOffset}. */
    TransactionFates() {
        this(null, -1, true);
    }

    static long batchesRead() {
        return BATCHES_READ.sum();
    }

    /**
     * The last stable offset within [from, end) of {@code log}: the first offset of a transaction still open
     * (no marker yet), or {@code end}. A read_committed consumer reads nothing from there on, so a stream
     * must not move its position past it (the records after it would be skipped for good). {@code end} is
     * the committed end: markers past it are not learnt. Batches below what earlier calls decided are not
     * read again.
     */
    long lastStableOffset(PartitionLog log, long from, long end) {
        if (end < bound) forgetAll();    // the committed end moved down (a truncation): offsets may hold other records
        this.log = log;
        this.bound = end;
        segment = -1;
        walk = null;
        done = false;
        try {
            boolean within = decidedFrom >= 0 && decidedFrom <= from && from <= decidedTo;
            long scanFrom = within ? decidedTo : from;
            if (!within) decidedFrom = from;
            long stable = firstOpen(scanFrom, from, end);
            decidedTo = stable;
            dropMarkersBelow(stable);
            return stable;
        } finally {
            this.log = null;
            walk = null;
        }
    }

    private long firstOpen(long scanFrom, long from, long end) {
        if (scanFrom >= end) return end;     // all decided: no segment to read
        long seen = scanFrom;                // the offset after the last batch read
        for (int i = log.segmentIndexFor(scanFrom); i < log.segmentCount() && log.base(i) < end; i++) {
            Segment seg = log.segment(i);
            Segment.Batches it = seg.batchesHolding(Math.max(scanFrom, seg.base), end).checkingCrcs(checkCrcs);
            while (it.hasNext()) {
                FileChannelRecordBatch b = it.next();
                BATCHES_READ.increment();
                seen = Math.max(seen, b.lastOffset() + 1);
                if (b.baseOffset() >= end) return end;
                if (b.lastOffset() < scanFrom || b.isControlBatch() || !b.isTransactional()) continue;
                if (fate(b.producerId(), b.baseOffset()) == OPEN) return Math.max(from, b.baseOffset());
            }
        }
        // A kept listing that ends before the committed end lacks a segment its folder's mtime did not show:
        // an open transaction there would be read past. List again (a listing taken now that ends short is a
        // lost tail, which the read reports).
        if (seen < end && log.keptListing()) {
            throw new SegmentGoneException(log.dir + ": the kept segment listing ends at offset " + seen
                + ", before the committed end " + end + "; listing the folder again");
        }
        return end;
    }

    /** No batch at or past {@code offset} asks for a marker below it: those are let go (memory stays bounded by
     *  the undecided part of the log). */
    private void dropMarkersBelow(long offset) {
        if (markersTo < offset) {
            markers.clear();
            markersFrom = markersTo = offset;
            return;
        }
        markersFrom = Math.max(markersFrom, offset);
        for (Iterator<TreeMap<Long, Boolean>> it = markers.values().iterator(); it.hasNext(); ) {
            TreeMap<Long, Boolean> m = it.next();
            m.headMap(markersFrom).clear();
            if (m.isEmpty()) it.remove();
        }
    }

    private void forgetAll() {
        markers.clear();
        markersFrom = markersTo = decidedFrom = decidedTo = -1;
    }

    int fate(long producerId, long baseOffset) {
        if (markersFrom < 0 || baseOffset + 1 < markersFrom) {   // what is known does not reach back to the batch
            markers.clear();
            markersFrom = markersTo = baseOffset + 1;
            segment = -1;
            walk = null;
        }
        while (true) {
            TreeMap<Long, Boolean> m = markers.get(producerId);
            if (m != null) {
                Map.Entry<Long, Boolean> e = m.higherEntry(baseOffset);
                if (e != null) return e.getValue() ? COMMIT : ABORT;
            }
            if (!advance()) return OPEN;
        }
    }

    /** Learns the next control marker at or after markersTo; false at the bound (or the log's end). */
    private boolean advance() {
        while (!done && markersTo < bound) {
            if (walk == null) {
                segment = segment < 0 ? log.segmentIndexFor(markersTo) : segment + 1;
                if (segment >= log.segmentCount() || log.base(segment) >= bound) {
                    done = true;
                    return false;
                }
                Segment seg = log.segment(segment);
                walk = seg.batchesHolding(Math.max(markersTo, seg.base), bound).checkingCrcs(checkCrcs);
            }
            while (walk.hasNext()) {
                FileChannelRecordBatch b = walk.next();
                BATCHES_READ.increment();
                if (b.lastOffset() < markersTo) continue;
                markersTo = b.lastOffset() + 1;
                if (!b.isControlBatch()) continue;
                for (Iterator<Record> rs = CheckedRecords.of(b, log.segment(segment).where(), b.position()); rs.hasNext(); ) {
                    Record r = rs.next();
                    boolean commit = ControlRecordType.parse(r.key()) == ControlRecordType.COMMIT;
                    markers.computeIfAbsent(b.producerId(), k -> new TreeMap<>()).put(b.baseOffset(), commit);
                    return true;
                }
            }
            walk = null;
        }
        return false;
    }
}
