package io.seglog.spark.write;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;

/** Sent to the executors: makes one {@link SeglogDataWriter} per task attempt. */
final class SeglogDataWriterFactory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final WritePlan plan;
    private final int tasks;   // the write's, Spark's PhysicalWriteInfo.numPartitions (BatchRowsBudget)

    SeglogDataWriterFactory(WritePlan plan, int tasks) {
        this.plan = plan;
        this.tasks = tasks;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        return new SeglogDataWriter(plan, partitionId, taskId, tasks);
    }
}
