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
public record StagedSegment(String stem, long size, long records, int batches, boolean durable) implements Serializable {
}
