package io.seglog.spark.read;

import java.util.Iterator;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;

/**
 * The records of one task's slices, in order, each passing the pushed filters' row filter
 * ({@link ScanBounds#keeps}): the one walk both outputs share, so rows ({@link SeglogPartitionReader}) and
 * columnar batches ({@link SeglogColumnarPartitionReader}) hold the same records, and the same faults
 * (data loss, corruption, a segment gone) surface through both ({@link RecordCursor}).
 */
final class TaskRecords implements AutoCloseable {
    private final ReadOptions opts;
    private final ScanBounds bounds;
    private final boolean filtering;
    private final Slice[] slices;
    private int next;
    private RecordCursor cursor;
    private long skipped;               // offsets skipped as data loss by the slices already read

    /** The current record's slice (a new object when the walk enters the next slice). */
    Slice slice;
    /** After {@link #nextBatch}: the batch's records to return are those at or past {@code batchFrom} and below
     *  {@code batchEnd} (the slice's end) that {@link #keeps}. */
    long batchFrom;
    long batchEnd;
    TimestampType batchTimestampType;
    private FileChannelRecordBatch drawn;   // the batch nextBatch() returned, as the walk drew it

    private final java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf;

    TaskRecords(ReadOptions opts, ScanBounds bounds, Slice[] slices) {
        this(opts, bounds, slices, RemoteConf.SESSION);
    }

    TaskRecords(ReadOptions opts, ScanBounds bounds, Slice[] slices,
                java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf) {
        this.hadoopConf = hadoopConf;
        this.opts = opts;
        this.bounds = bounds;
        this.filtering = bounds.needsRowFilter();
        this.slices = slices;
    }

    /** Advances to the next record the task returns; false when every slice is read. */
    boolean next() {
        while (true) {
            if (cursor == null) {
                if (next >= slices.length) return false;
                slice = slices[next++];
                cursor = new RecordCursor(opts, slice, hadoopConf);
            }
            if (!cursor.next()) {
                skipped += cursor.skipped();
                cursor.close();
                cursor = null;
                continue;
            }
            if (filtering && !bounds.keeps(cursor.record.offset(), cursor.record.timestamp())) continue;
            return true;
        }
    }

    /**
     * Batch by batch, the same walk as {@link #next} (the same slices, cursor, faults and data loss): the next batch
     * holding records of this task, as read into the cursor's buffer ({@link #batchBytes}), or null when every
     * slice is read. Valid until the next call. Not to be mixed with {@link #next} within one task.
     */
    RecordBatch nextBatch() {
        while (true) {
            if (cursor == null) {
                if (next >= slices.length) return null;
                slice = slices[next++];
                cursor = new RecordCursor(opts, slice, hadoopConf);
            }
            FileChannelRecordBatch b = cursor.nextBatch();
            if (b == null) {
                skipped += cursor.skipped();
                cursor.close();
                cursor = null;
                continue;
            }
            batchFrom = cursor.batchFrom;
            batchEnd = slice.end;
            batchTimestampType = b.timestampType();
            drawn = b;
            return cursor.inMemory(b);
        }
    }

    /** The records of the batch {@link #nextBatch} returned, a record that does not parse reported as corruption
     *  naming the segment and the position ({@link CheckedRecords}). */
    Iterator<Record> batchRecords() {
        return cursor.recordsOf(drawn);
    }

    /** The batch {@link #nextBatch} returned keeps its bytes until {@link #releaseHeldBytes}: vectors point into them. */
    void holdBatchBytes() {
        cursor.holdBatchBytes();
    }

    /** The columnar batch pointing into held bytes was consumed: they may be read into again (but the current batch's;
     *  a slice's cursor once closed holds nothing any more). */
    void releaseHeldBytes() {
        if (cursor != null) cursor.releaseHeldBytes();
    }

    /** The buffer the batch {@link #nextBatch} returned was read into (from its position 0). */
    byte[] batchBytes() {
        return cursor.bufferBytes();
    }

    /** Whether the pushed filters keep a record (the row filter {@link #next} applies). */
    boolean keeps(long offset, long timestamp) {
        return !filtering || bounds.keeps(offset, timestamp);
    }

    Record record() {
        return cursor.record;
    }

    TimestampType timestampType() {
        return cursor.timestampType;
    }

    /** Offsets skipped as data loss so far (failOnDataLoss=false): the task's metric. */
    long skipped() {
        return skipped + (cursor == null ? 0 : cursor.skipped());
    }

    @Override
    public void close() {
        if (cursor != null) cursor.close();
        cursor = null;
    }
}
