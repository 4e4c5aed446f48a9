package io.seglog.spark.read;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;

/** Reads one task's slices in order, applying the pushed filters' row filter (ScanBounds.keeps). */
final class SeglogPartitionReader implements PartitionReader<InternalRow> {
    private final ReadOptions opts;
    private final ScanBounds bounds;
    private final boolean filtering;
    private final Slice[] slices;
    private final RowShaper shaper;
    private int next;
    private RecordCursor cursor;
    private InternalRow current;
    private long skipped;               // offsets this task skipped as data loss (failOnDataLoss=false)

    SeglogPartitionReader(ReadOptions opts, ScanBounds bounds, StructType readSchema, Slice[] slices) {
        this.opts = opts;
        this.bounds = bounds;
        this.filtering = bounds.needsRowFilter();
        this.slices = slices;
        this.shaper = new RowShaper(readSchema);
    }

    @Override
    public boolean next() {
        while (true) {
            if (cursor == null) {
                if (next >= slices.length) return false;
                Slice s = slices[next++];
                cursor = new RecordCursor(opts, s);
                shaper.partition(s.topic, s.partition);
            }
            if (!cursor.next()) {
                skipped += cursor.skipped();
                cursor.close();
                cursor = null;
                continue;
            }
            if (filtering && !bounds.keeps(cursor.record.offset(), cursor.record.timestamp())) continue;
            current = shaper.shape(cursor.record, cursor.timestampType);
            return true;
        }
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return SeglogMetrics.values(skipped + (cursor == null ? 0 : cursor.skipped()));
    }

    @Override
    public InternalRow get() {
        return current;
    }

    @Override
    public void close() {
        if (cursor != null) cursor.close();
        cursor = null;
    }
}
