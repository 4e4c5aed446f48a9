package io.seglog.spark.write;

/**
 * How much of a {@code format("seglog")} task's staged segments' batch rows (36 bytes a batch, what the driver
 * reads to publish a segment) travel in the task's report instead of a {@code <stem>.batches} file. Each staged
 * segment made a fourth file beside its {@code .log} and indexes, only to be read once by the driver and removed:
 * at 1e6 rows into 32 partitions, 128 of a write's 512 files (issue 41: making a file costs more on ext4 than
 * writing its megabytes, and the driver opened each again).
 *
 * <p>Bounded: a segment's rows go in the report only while they are at most {@link #SEGMENT_MAX} bytes and the
 * task's total stays within {@link #TASK_MAX}; past that, the file as before. So a report, and the driver that
 * holds every task's, grows by at most TASK_MAX a task, whatever the batch size. One per task, used from the
 * task's thread only.
 */
final class BatchRowsBudget {
    static final int SEGMENT_MAX = 64 << 10;   // 1,820 batches: a 1 GiB segment of 1 MiB batches fits
    static final long TASK_MAX = 1L << 20;

    private long left = TASK_MAX;

    /** Whether {@code bytes} of rows go in the report (taken from the budget) rather than a file. */
    boolean take(int bytes) {
        if (bytes > SEGMENT_MAX || bytes > left) return false;
        left -= bytes;
        return true;
    }
}
