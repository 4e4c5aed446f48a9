package io.seglog.spark.read;

import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Columnar output: one task's records ({@link TaskRecords}) in batches of at most maxRowsPerBatch rows
 * ({@link VectorShaper}). A count reads no column: each batch is only its row count. The batch returned is
 * reused: Spark consumes it before asking for the next (PartitionReader's contract).
 */
final class SeglogColumnarPartitionReader implements PartitionReader<ColumnarBatch> {
    private final TaskRecords records;
    private final VectorShaper shaper;
    private final int maxRows;
    private Slice shaping;
    private ColumnarBatch current;

    SeglogColumnarPartitionReader(ReadOptions opts, ScanBounds bounds, StructType readSchema, Slice[] slices) {
        this(opts, bounds, readSchema, slices, RemoteConf.SESSION);
    }

    SeglogColumnarPartitionReader(ReadOptions opts, ScanBounds bounds, StructType readSchema, Slice[] slices,
        java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf) {
        this.records = new TaskRecords(opts, bounds, slices, hadoopConf);
        this.maxRows = opts.maxRowsPerBatch;
        this.shaper = new VectorShaper(readSchema, maxRows);
    }

    @Override
    public boolean next() {
        shaper.reset();
        int rows = 0;
        while (rows < maxRows && records.next()) {
            if (records.slice != shaping) {
                shaping = records.slice;
                shaper.partition(shaping.topic, shaping.partition);
            }
            shaper.append(records.record(), records.timestampType());
            rows++;
        }
        if (rows == 0) return false;
        current = shaper.batch(rows);
        return true;
    }

    @Override
    public ColumnarBatch get() {
        return current;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return SeglogMetrics.values(records.skipped());
    }

    @Override
    public void close() {
        records.close();
        shaper.close();
    }
}
