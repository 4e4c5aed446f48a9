package io.seglog.spark.read;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.Record;

import io.seglog.spark.format.PartitionLog;
import io.seglog.spark.format.Segment;

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
 */
final class TransactionFates {
    static final int OPEN = 0, COMMIT = 1, ABORT = 2;

    private final PartitionLog log;
    private final long bound;
    private final Map<Long, TreeMap<Long, Boolean>> markers = new HashMap<>();   // pid -> offset -> committed
    private int segment = -1;
    private Segment.Batches walk;
    private boolean done;

    TransactionFates(PartitionLog log, long bound) {
        this.log = log;
        this.bound = bound;
    }

    /**
     * The last stable offset within [from, end): the first offset of a transaction still open (no marker
     * yet), or {@code end}. A read_committed consumer reads nothing from there on, so a stream must not
     * move its position past it (the records after it would be skipped for good). {@code end} is the
     * committed end: markers past it are not learnt.
     */
    static long lastStableOffset(PartitionLog log, long from, long end) {
        TransactionFates fates = null;
        for (int i = log.segmentIndexFor(from); i < log.segmentCount() && log.base(i) < end; i++) {
            Segment seg = log.segment(i);
            Segment.Batches it = seg.batchesHolding(Math.max(from, seg.base), end);
            while (it.hasNext()) {
                FileChannelRecordBatch b = it.next();
                if (b.baseOffset() >= end) return end;
                if (b.lastOffset() < from || b.isControlBatch() || !b.isTransactional()) continue;
                if (fates == null) fates = new TransactionFates(log, end);
                if (fates.fate(b.producerId(), b.baseOffset()) == OPEN) return Math.max(from, b.baseOffset());
            }
        }
        return end;
    }

    int fate(long producerId, long baseOffset) {
        while (true) {
            TreeMap<Long, Boolean> m = markers.get(producerId);
            if (m != null) {
                Map.Entry<Long, Boolean> e = m.higherEntry(baseOffset);
                if (e != null) return e.getValue() ? COMMIT : ABORT;
            }
            if (!advance(baseOffset)) return OPEN;
        }
    }

    /** Learns the next control marker after {@code from}; false at the bound (or the log's end). */
    private boolean advance(long from) {
        if (done) return false;
        while (true) {
            if (walk == null) {
                segment = segment < 0 ? log.segmentIndexFor(from + 1) : segment + 1;
                if (segment >= log.segmentCount() || log.base(segment) >= bound) {
                    done = true;
                    return false;
                }
                Segment seg = log.segment(segment);
                walk = seg.batchesHolding(Math.max(from + 1, seg.base), bound);
            }
            while (walk.hasNext()) {
                FileChannelRecordBatch b = walk.next();
                if (!b.isControlBatch() || b.baseOffset() <= from) continue;
                for (Record r : b) {
                    boolean commit = ControlRecordType.parse(r.key()) == ControlRecordType.COMMIT;
                    markers.computeIfAbsent(b.producerId(), k -> new TreeMap<>()).put(b.baseOffset(), commit);
                    return true;
                }
            }
            walk = null;
        }
    }
}
