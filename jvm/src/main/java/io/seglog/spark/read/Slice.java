package io.seglog.spark.read;

import java.io.Serializable;

/**
 * Offsets [start, end) of one partition, read by one task, and {@code bound}: the partition's committed
 * end when the read was planned (at least {@code end}). Bytes below the bound are committed, so a fault
 * there is corruption; bytes past it may be a write in flight and are never judged (docs/spec.md §4).
 * read_committed learns transaction markers up to the bound, not just to {@code end}.
 */
public final class Slice implements Serializable {
    public final String topic;
    public final int partition;
    public final long start;
    public final long end;
    public final long bound;

    public Slice(String topic, int partition, long start, long end, long bound) {
        this.topic = topic;
        this.partition = partition;
        this.start = start;
        this.end = end;
        this.bound = Math.max(end, bound);
    }

    public Slice(String topic, int partition, long start, long end) {
        this(topic, partition, start, end, end);
    }

    @Override
    public String toString() {
        return topic + "-" + partition + "[" + start + "," + end + ")";
    }
}
