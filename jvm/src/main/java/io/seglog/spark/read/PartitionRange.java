package io.seglog.spark.read;

import io.seglog.spark.format.PartitionLog;

/** A partition's planned range [start, end), its committed end ({@code bound}, see {@link Slice}), its size in
 *  log bytes, and the open log that sizes it. */
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
}
