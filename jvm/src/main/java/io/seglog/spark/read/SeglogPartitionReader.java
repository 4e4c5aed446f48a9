package io.seglog.spark.read;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;

/** Row output: one task's records ({@link TaskRecords}) shaped one at a time ({@link RowShaper}), where
 *  Spark asks for rows (columnarReads=false). */
final class SeglogPartitionReader implements PartitionReader<InternalRow> {
    private final TaskRecords records;
    private final RowShaper shaper;
    private Slice shaping;
    private InternalRow current;

    SeglogPartitionReader(ReadOptions opts, ScanBounds bounds, StructType readSchema, Slice[] slices) {
        this(opts, bounds, readSchema, slices, RemoteConf.SESSION);
    }

    SeglogPartitionReader(ReadOptions opts, ScanBounds bounds, StructType readSchema, Slice[] slices,
        java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf) {
        this.records = new TaskRecords(opts, bounds, slices, hadoopConf);
        this.shaper = new RowShaper(readSchema);
    }

    @Override
    public boolean next() {
        if (!records.next()) return false;
        if (records.slice != shaping) {
            shaping = records.slice;
            shaper.partition(shaping.topic, shaping.partition);
        }
        current = shaper.shape(records.record(), records.timestampType());
        return true;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return SeglogMetrics.values(records.skipped());
    }

    @Override
    public InternalRow get() {
        return current;
    }

    @Override
    public void close() {
        records.close();
    }
}
