package io.seglog.spark.read;

import io.seglog.spark.format.PartitionLog;

/** A partition's planned range [start, end), its committed end ({@code bound}, see {@link Slice}), its size in
 *  log bytes once {@link #sized()} (0 before), and the open log that sizes it. */
final class PartitionRange {
    final String topic;
    final int partition;
    final long start;
    final long end;
    final long bound;
    final long bytes;
    final PartitionLog log;

    PartitionRange(String topic, int partition, long start, long end, long bound, long bytes, PartitionLog log) {
        this.topic = topic;
        this.partition = partition;
        this.start = start;
        this.end = end;
        this.bound = Math.max(end, bound);
        this.bytes = bytes;
        this.log = log;
    }

    /** The range as resolved, before its size is asked for: a stream's latest offsets need only the ends. */
    PartitionRange(String topic, int partition, long start, long end, long bound, PartitionLog log) {
        this(topic, partition, start, end, bound, 0, log);
    }

    /** This range with its size in log bytes, from the indexes of the segments it covers (what planning
     *  tasks needs; costs opening those segments, so asked only there). */
    PartitionRange sized() {
        return new PartitionRange(topic, partition, start, end, bound, start < end ? log.byteSize(start, end) : 0, log);
    }
}
