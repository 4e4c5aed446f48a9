package io.seglog.spark.write;

import java.nio.file.Path;

import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

import io.seglog.spark.format.StagingRuns;

/** A batch {@code format("seglog")} write: tasks stage, the driver commits ({@link DriverCommit}). */
final class SeglogBatchWrite implements BatchWrite {
    private final WriteOptions options;
    private final WritePlan plan;
    private final io.seglog.spark.format.FileLock run;   // held while this run lives (DriverCommit.runLock)
    private final io.seglog.spark.format.CommitLogWriter planned;   // the topic's commit log as planning read it, or null

    SeglogBatchWrite(WriteOptions options, WritePlan plan, io.seglog.spark.format.CommitLogWriter planned) {
        this.options = options;
        this.plan = plan;
        this.planned = planned;
        this.run = DriverCommit.startRun(plan.staging);
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        return new SeglogDataWriterFactory(plan, info.numPartitions());
    }

    /**
     * No commit coordinator, as Spark's own file writes and {@code noop}: each task attempt stages in a folder of its
     * own ({@code t<partition>-<taskId>}), and Spark hands {@link #commit} the message of one successful attempt per
     * partition (the scheduler drops a later attempt's result), the only one published; another attempt's staging
     * goes with the run ({@code StagingRuns.endRun}). The coordinator's permission cost every task a round trip to
     * the driver before it could report (issue 41).
     */
    @Override
    public boolean useCommitCoordinator() {
        return false;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        StagedMessage[] staged = new StagedMessage[messages.length];
        for (int i = 0; i < messages.length; i++) staged[i] = (StagedMessage) messages[i];
        try {
            DriverCommit.commit(options, plan, staged, planned);
        } finally {
            run.release();
        }
    }

    /** Nothing was published (tasks only stage; a failed commit rolled its partitions back): this run's staging goes,
     *  and no task attempt still running can stage under it again (StagingRuns.endRun). */
    @Override
    public void abort(WriterCommitMessage[] messages) {
        try {
            StagingRuns.endRun(Path.of(plan.staging));
        } finally {
            run.release();
        }
    }
}
