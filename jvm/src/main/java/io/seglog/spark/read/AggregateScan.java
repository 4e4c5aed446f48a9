package io.seglog.spark.read;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.types.StructType;

/** A read whose aggregate was pushed down ({@link PushedAggregate}): answered on the driver when Spark plans it,
 *  its rows handed to Spark as a local relation (no task). */
final class AggregateScan implements LocalScan {
    private final ReadOptions opts;
    private final ScanBounds bounds;
    private final PushedAggregate aggregate;

    AggregateScan(ReadOptions opts, ScanBounds bounds, PushedAggregate aggregate) {
        this.opts = opts;
        this.bounds = bounds;
        this.aggregate = aggregate;
    }

    @Override
    public StructType readSchema() {
        return aggregate.schema();
    }

    @Override
    public String description() {
        return "seglog " + opts.root + " topics=" + opts.selection.describe() + " pushed=" + bounds + " pushedAggregate="
            + aggregate.described;
    }

    @Override
    public InternalRow[] rows() {
        return aggregate.rows(opts.forBatch(), bounds);
    }
}
