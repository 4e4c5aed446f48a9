package io.seglog.spark.read;

import io.seglog.spark.format.PartitionLog;

/** A partition's planned range [start, end), its size in log bytes, and the open log that sizes it. */
final class PartitionRange {
    final String topic;
    final int partition;
    final long start;
    final long end;
    final long bytes;
    final PartitionLog log;

    PartitionRange(String topic, int partition, long start, long end, long bytes, PartitionLog log) {
        this.topic = topic;
        this.partition = partition;
        this.start = start;
        this.end = end;
        this.bytes = bytes;
        this.log = log;
    }
}
