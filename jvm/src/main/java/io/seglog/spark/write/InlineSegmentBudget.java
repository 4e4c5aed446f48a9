package io.seglog.spark.write;

/**
 * How much of a {@code format("seglog")} task's small staged segments travel whole in the task's report (their
 * {@code .log} bytes and batch rows), instead of as staging files. A segment below the write's {@code renameMinBytes}
 * is always copied onto the partition's active segment by the driver ({@link io.seglog.spark.format.StagedPublisher}),
 * which reads only its {@code .log} bytes and batch rows, never its indexes; staged as files, a 1,000-row micro-batch
 * into 4 partitions made a task folder and 12 files, which the driver read once and removed (issue 41: an mkdir,
 * 12 creates and 14 unlinks on the write's path). In the report, there are none, and the driver copies from memory.
 *
 * <p>Bounded: the driver holds every task's report at once (Spark counts them against spark.driver.maxResultSize), so
 * one write's tasks share {@link #WRITE_MAX} ({@link #TASK_MAX} each at most: a larger result goes through the block
 * manager, one more fetch); a segment that grows to
 * {@code renameMinBytes} (it will be renamed in: a file, forced by the task) or past its task's share is written to
 * its files from there on, its bytes given back. One per task, used from the task's thread only.
 */
final class InlineSegmentBudget {
    static final long TASK_MAX = 1L << 20;   // a report within spark.task.maxDirectResultSize (1 MiB) stays direct
    static final long WRITE_MAX = 8L << 20;   // all of a write's reports together

    private long left;

    /** The budget of one task of a write of {@code tasks} tasks (Spark's PhysicalWriteInfo.numPartitions). */
    InlineSegmentBudget(int tasks) {
        left = Math.min(TASK_MAX, WRITE_MAX / Math.max(1, tasks));
    }

    /** Whether {@code bytes} more of a segment stay in memory (taken from the budget). */
    boolean take(long bytes) {
        if (bytes > left) return false;
        left -= bytes;
        return true;
    }

    /** {@code bytes} taken before given back: their segment went to its files. */
    void giveBack(long bytes) {
        left += bytes;
    }
}
