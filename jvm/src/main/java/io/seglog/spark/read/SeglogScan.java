package io.seglog.spark.read;

import java.util.List;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;

/** A planned batch read: the ranges are resolved on the driver when Spark asks for the partitions. */
final class SeglogScan implements Scan, Batch {
    private final ReadOptions given;    // parsed leniently at load(): batch or stream is not known yet
    private ReadOptions opts;            // the batch read's, on toBatch()
    private final ScanBounds bounds;
    private final StructType readSchema;
    private long skippedWhenPlanned;     // data loss skipped by planning (failOnDataLoss=false): a driver metric

    SeglogScan(ReadOptions opts, ScanBounds bounds, StructType readSchema) {
        this.given = opts;
        this.opts = opts;
        this.bounds = bounds;
        this.readSchema = readSchema;
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    @Override
    public String description() {
        return "seglog " + opts.root + " topics=" + opts.selection.describe() + " pushed=" + bounds;
    }

    @Override
    public Batch toBatch() {
        opts = given.forBatch();
        Planner.checkLayout(opts);   // a topic the root does not have: NoSuchTopicException, before any task
        return this;
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
        return new SeglogMicroBatchStream(given, checkpointLocation);
    }

    static int cores() {
        return SparkSession.active().sparkContext().defaultParallelism();
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return SeglogMetrics.supported();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
        return SeglogMetrics.values(skippedWhenPlanned);
    }

    @Override
    public InputPartition[] planInputPartitions() {
        DataLoss loss = new DataLoss(opts.failOnDataLoss);
        List<List<Slice>> tasks = Planner.plan(opts, bounds, cores(), loss);
        skippedWhenPlanned = loss.skipped();
        InputPartition[] out = new InputPartition[tasks.size()];
        for (int i = 0; i < out.length; i++) out[i] = new SeglogInputPartition(tasks.get(i).toArray(new Slice[0]));
        return out;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SeglogReaderFactory(opts, bounds, readSchema);
    }
}
