package io.seglog.spark.read;

import java.io.Serializable;

/** Offsets [start, end) of one partition, read by one task. */
public final class Slice implements Serializable {
    public final String topic;
    public final int partition;
    public final long start;
    public final long end;

    public Slice(String topic, int partition, long start, long end) {
        this.topic = topic;
        this.partition = partition;
        this.start = start;
        this.end = end;
    }

    @Override
    public String toString() {
        return topic + "-" + partition + "[" + start + "," + end + ")";
    }
}
