package io.seglog.spark.write;

import java.util.Map;
import java.util.UUID;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * {@code writeStream.format("seglog")}: each micro-batch (epoch) is staged by its tasks and committed once by
 * {@link DriverCommit}, as a batch write whose writer is the query (its id, or option writerId) and whose
 * version is the epoch: a re-delivered epoch (a restart from the checkpoint after a crash) is skipped when it
 * was committed, and rolled back and written again when it was not.
 */
final class SeglogStreamingWrite implements StreamingWrite {
    private final WriteOptions options;
    private final Map<String, String> given;
    private final String queryId;
    private final TopicTarget target;
    private final TopicRequest topics;
    private final InputColumns columns;
    private final String zone;
    private WritePlan current;   // the plan of the micro-batch whose factory was made last (batches run one at a time)
    private io.seglog.spark.format.FileLock run;   // its run lock (DriverCommit.runLock)

    SeglogStreamingWrite(WriteOptions options, Map<String, String> given, String queryId, TopicTarget target,
                         TopicRequest topics, InputColumns columns, String zone) {
        this.options = options;
        this.given = given;
        this.queryId = queryId;
        this.target = target;
        this.topics = topics;
        this.columns = columns;
        this.zone = zone;
    }

    @Override
    public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
        WriteOptions o = options.forStream(given, queryId, 0);
        String staging = DriverCommit.writerStaging(o.root, o.writer, o.topic).resolve("epoch-" + UUID.randomUUID()).toString();
        // one "now" per delivery, the driver's, as the Python sink's (docs/spec.md §3.1)
        WritePlan plan = new WritePlan(o.root, staging, target, topics, columns, System.currentTimeMillis(), zone, false,
                o.renameMinBytes);
        if (run != null) run.release();   // a micro-batch neither committed nor aborted (the query stopped)
        current = plan;
        run = DriverCommit.startRun(staging);
        return new Factory(plan, info.numPartitions());
    }

    private static final class Factory implements StreamingDataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final WritePlan plan;
        private final int tasks;   // the micro-batch's (BatchRowsBudget)

        Factory(WritePlan plan, int tasks) {
            this.plan = plan;
            this.tasks = tasks;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
            return new SeglogDataWriter(plan, partitionId, taskId, tasks);
        }
    }

    @Override
    public void commit(long epochId, WriterCommitMessage[] messages) {
        StagedMessage[] staged = new StagedMessage[messages.length];
        for (int i = 0; i < messages.length; i++) staged[i] = (StagedMessage) messages[i];
        try {
            DriverCommit.commit(options.forStream(given, queryId, epochId), current, staged);
        } finally {
            run.release();
        }
    }

    @Override
    public void abort(long epochId, WriterCommitMessage[] messages) {
        if (current != null) io.seglog.spark.format.StagingRuns.endRun(java.nio.file.Path.of(current.staging));
        if (run != null) run.release();
    }
}
