package io.seglog.spark.format;

import java.io.Serializable;

/**
 * A segment the executor-side stager wrote for one log partition (io.seglog.spark.write.SegmentStager;
 * tests/oracles/staged.py's StagedSegment): {@code <stem>.log} with batch base offsets relative to the segment
 * (0, ...), its sealed {@code .index} and {@code .timeindex}, and {@code <stem>.batches}, one 36-byte row
 * per batch (position, relative last offset, first and largest timestamp, record count). A {@code format("seglog")}
 * task may send those rows with its report instead ({@link #batchRows}; io.seglog.spark.write.BatchRowsBudget):
 * then there is no {@code .batches} file (issue 41: one file made, read and removed less per staged segment).
 *
 * @param durable the stager forced its {@code .log} and both indexes before reporting it
 */
public final class StagedSegment implements Serializable {
    private static final long serialVersionUID = 1L;
    private final String stem;
    private final long size;
    private final long records;
    private final int batches;
    private final boolean durable;
    private final byte[] batchRows;   // null: in <stem>.batches

    public StagedSegment(String stem, long size, long records, int batches, boolean durable) {
        this(stem, size, records, batches, durable, null);
    }

    /** {@code batchRows}: the {@code .batches} rows the task sent with its report (null: in the file). */
    public StagedSegment(String stem, long size, long records, int batches, boolean durable, byte[] batchRows) {
        this.stem = stem;
        this.size = size;
        this.records = records;
        this.batches = batches;
        this.durable = durable;
        this.batchRows = batchRows;
    }

    public String stem() { return stem; }
    public long size() { return size; }
    public long records() { return records; }
    public int batches() { return batches; }
    public boolean durable() { return durable; }
    /** The batch rows sent with the task's report, or null: they are in {@code <stem>.batches}. */
    public byte[] batchRows() { return batchRows; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof StagedSegment)) return false;
        StagedSegment that = (StagedSegment) o;
        return java.util.Objects.equals(stem, that.stem)
                && size == that.size
                && records == that.records
                && batches == that.batches
                && durable == that.durable
                && java.util.Arrays.equals(batchRows, that.batchRows);
    }

    @Override public int hashCode() { return java.util.Objects.hash(stem, size, records, batches, durable); }

    @Override public String toString() { return "StagedSegment[stem=" + stem + ", size=" + size + ", records=" + records + ", batches=" + batches + ", durable=" + durable + "]"; }
}
