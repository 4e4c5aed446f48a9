package io.seglog.spark.write;

/**
 * How much of a {@code format("seglog")} task's staged segments' batch rows (36 bytes a batch, what the driver
 * reads to publish a segment) travel in the task's report instead of a {@code <stem>.batches} file. Each staged
 * segment made a fourth file beside its {@code .log} and indexes, only to be read once by the driver and removed:
 * at 1e6 rows into 32 partitions, 128 of a write's 512 files (issue 41: making a file costs more on ext4 than
 * writing its megabytes, and the driver opened each again).
 *
 * <p>Bounded: a segment's rows go in the report only while they are at most {@link #SEGMENT_MAX} bytes and the
 * task's total stays within its share ({@link #taskMax}); past that, the file as before. The driver holds every
 * task's report at once (and Spark counts them against spark.driver.maxResultSize), so the shares of one write's
 * tasks add up to at most {@link #WRITE_MAX}, however many tasks it has: TASK_MAX each for a few, less for many.
 * One per task, used from the task's thread only.
 */
final class BatchRowsBudget {
    static final int SEGMENT_MAX = 64 << 10;   // 1,820 batches: a 1 GiB segment of 1 MiB batches fits
    static final long TASK_MAX = 1L << 20;
    static final long WRITE_MAX = 64L << 20;   // all of a write's reports together

    private long left;

    BatchRowsBudget() {
        this(1);
    }

    /** The budget of one task of a write of {@code tasks} tasks (Spark's PhysicalWriteInfo.numPartitions). */
    BatchRowsBudget(int tasks) {
        left = taskMax(tasks);
    }

    static long taskMax(int tasks) {
        return Math.min(TASK_MAX, WRITE_MAX / Math.max(1, tasks));
    }

    /** Whether {@code bytes} of rows go in the report (taken from the budget) rather than a file. */
    boolean take(int bytes) {
        if (bytes > SEGMENT_MAX || bytes > left) return false;
        left -= bytes;
        return true;
    }
}
