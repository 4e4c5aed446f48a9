package io.seglog.spark.read;

import org.apache.spark.sql.connector.read.InputPartition;

/** One task's work: offset slices of one or more partitions (small partitions share a task). */
public final class SeglogInputPartition implements InputPartition {
    public final Slice[] slices;

    public SeglogInputPartition(Slice[] slices) {
        this.slices = slices;
    }
}
