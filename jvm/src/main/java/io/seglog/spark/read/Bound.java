package io.seglog.spark.read;

import java.io.Serializable;
import java.util.Map;

/**
 * One end of a read (docs/spec.md §8): earliest, latest, per-partition offsets, one timestamp for every
 * partition, or per-partition timestamps. {@code values} maps "topic-partition" to an offset or ms.
 */
public final class Bound implements Serializable {
    public enum Kind { EARLIEST, LATEST, OFFSETS, TIMESTAMP, TIMESTAMPS }

    public final Kind kind;
    public final String option;      // the option it came from, for messages
    public final long timestamp;     // Kind.TIMESTAMP
    public final Map<String, Long> values;

    Bound(Kind kind, String option, long timestamp, Map<String, Long> values) {
        this.kind = kind;
        this.option = option;
        this.timestamp = timestamp;
        this.values = values;
    }

    static String key(String topic, int partition) {
        return topic + "-" + partition;
    }

    boolean isPerPartition() {
        return kind == Kind.OFFSETS || kind == Kind.TIMESTAMPS;
    }

    long value(String topic, int partition) {
        return kind == Kind.TIMESTAMP ? timestamp : values.get(key(topic, partition));
    }
}
