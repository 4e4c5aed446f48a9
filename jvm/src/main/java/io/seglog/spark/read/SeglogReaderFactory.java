package io.seglog.spark.read;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Sent to executors: everything a task needs to read its slices (options, bounds, pruned schema). Columnar
 *  batches unless columnarReads=false (then rows); batch and micro-batch reads alike. */
final class SeglogReaderFactory implements PartitionReaderFactory {
    private final ReadOptions opts;
    private final ScanBounds bounds;
    private final StructType readSchema;
    /** The session's Hadoop configuration, shipped when the root has a remote tier (its tasks read tiered segments). */
    private final RemoteConf hadoopConf;

    SeglogReaderFactory(ReadOptions opts, ScanBounds bounds, StructType readSchema) {
        this.opts = opts;
        this.bounds = bounds;
        this.readSchema = readSchema;
        this.hadoopConf = RemoteConf.forExecutors(opts.root);
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return opts.columnarReads;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new SeglogPartitionReader(opts, bounds, readSchema, ((SeglogInputPartition) partition).slices, hadoopConf);
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return new SeglogColumnarPartitionReader(opts, bounds, readSchema, ((SeglogInputPartition) partition).slices, hadoopConf);
    }
}
