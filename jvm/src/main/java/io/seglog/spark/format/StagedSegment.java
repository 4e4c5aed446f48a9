package io.seglog.spark.format;

import java.io.Serializable;

/**
 * A segment the executor-side stager wrote for one log partition (io.seglog.spark.write.SegmentStager;
 * tests/oracles/staged.py's StagedSegment): {@code <stem>.log} with batch base offsets relative to the segment
 * (0, ...), its sealed {@code .index} and {@code .timeindex}, and {@code <stem>.batches}, one 36-byte row
 * per batch (position, relative last offset, first and largest timestamp, record count). A {@code format("seglog")}
 * task may send those rows with its report instead ({@link #batchRows}; io.seglog.spark.write.BatchRowsBudget):
 * then there is no {@code .batches} file (issue 41: one file made, read and removed less per staged segment). A small
 * one (below the write's renameMinBytes: always copied) may travel whole ({@link #data}: its {@code .log} bytes, with
 * its batch rows; io.seglog.spark.write.InlineSegmentBudget): then it has no files at all, its indexes none either
 * (a copy never reads them).
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
    private final byte[] data;        // null: in <stem>.log

    public StagedSegment(String stem, long size, long records, int batches, boolean durable) {
        this(stem, size, records, batches, durable, null);
    }

    /** {@code batchRows}: the {@code .batches} rows the task sent with its report (null: in the file). */
    public StagedSegment(String stem, long size, long records, int batches, boolean durable, byte[] batchRows) {
        this(stem, size, records, batches, durable, batchRows, null);
    }

    /** {@code data}: the {@code .log} bytes the task sent with its report (null: in the file; with them, {@code
     *  batchRows} too, and the segment has no files). */
    public StagedSegment(String stem, long size, long records, int batches, boolean durable, byte[] batchRows, byte[] data) {
        if (data != null && (batchRows == null || data.length != size)) {
            throw new IllegalArgumentException(stem + ": a segment sent whole needs its batch rows and its " + size + " bytes");
        }
        this.stem = stem;
        this.size = size;
        this.records = records;
        this.batches = batches;
        this.durable = durable;
        this.batchRows = batchRows;
        this.data = data;
    }

    public String stem() { return stem; }
    public long size() { return size; }
    public long records() { return records; }
    public int batches() { return batches; }
    public boolean durable() { return durable; }
    /** The batch rows sent with the task's report, or null: they are in {@code <stem>.batches}. */
    public byte[] batchRows() { return batchRows; }
    /** The {@code .log} bytes sent with the task's report, or null: they are in {@code <stem>.log}. */
    public byte[] data() { return data; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof StagedSegment)) return false;
        StagedSegment that = (StagedSegment) o;
        return java.util.Objects.equals(stem, that.stem)
                && size == that.size
                && records == that.records
                && batches == that.batches
                && durable == that.durable
                && java.util.Arrays.equals(batchRows, that.batchRows)
                && java.util.Arrays.equals(data, that.data);
    }

    @Override public int hashCode() { return java.util.Objects.hash(stem, size, records, batches, durable); }

    @Override public String toString() { return "StagedSegment[stem=" + stem + ", size=" + size + ", records=" + records + ", batches=" + batches + ", durable=" + durable + (data != null ? ", in memory" : "") + "]"; }
}
