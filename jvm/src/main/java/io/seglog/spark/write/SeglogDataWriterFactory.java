package io.seglog.spark.write;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;

/** Sent to the executors: makes one {@link SeglogDataWriter} per task attempt. */
final class SeglogDataWriterFactory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final WritePlan plan;

    SeglogDataWriterFactory(WritePlan plan) {
        this.plan = plan;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        return new SeglogDataWriter(plan, partitionId, taskId);
    }
}
