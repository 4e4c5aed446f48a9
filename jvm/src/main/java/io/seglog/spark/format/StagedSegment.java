package io.seglog.spark.format;

import java.io.Serializable;

/**
 * A segment the executor-side stager wrote for one log partition (io.seglog.spark.write.SegmentStager;
 * tests/oracles/staged.py's StagedSegment): {@code <stem>.log} with batch base offsets relative to the segment
 * (0, ...), its sealed {@code .index} and {@code .timeindex}, and {@code <stem>.batches}, one 36-byte row
 * per batch (position, relative last offset, first and largest timestamp, record count).
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

    public StagedSegment(String stem, long size, long records, int batches, boolean durable) {
        this.stem = stem;
        this.size = size;
        this.records = records;
        this.batches = batches;
        this.durable = durable;
    }

    public String stem() { return stem; }
    public long size() { return size; }
    public long records() { return records; }
    public int batches() { return batches; }
    public boolean durable() { return durable; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof StagedSegment)) return false;
        StagedSegment that = (StagedSegment) o;
        return java.util.Objects.equals(stem, that.stem)
                && size == that.size
                && records == that.records
                && batches == that.batches
                && durable == that.durable;
    }

    @Override public int hashCode() { return java.util.Objects.hash(stem, size, records, batches, durable); }

    @Override public String toString() { return "StagedSegment[stem=" + stem + ", size=" + size + ", records=" + records + ", batches=" + batches + ", durable=" + durable + "]"; }
}
