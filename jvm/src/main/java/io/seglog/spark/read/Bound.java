package io.seglog.spark.read;

import java.io.Serializable;
import java.util.Map;

import org.apache.kafka.common.TopicPartition;

/**
 * One end of a read (docs/spec.md §8): earliest, latest, per-partition offsets, one timestamp for every
 * partition, or per-partition timestamps. {@code values} maps each partition (Kafka's TopicPartition) to an offset or ms.
 */
public final class Bound implements Serializable {
    public enum Kind { EARLIEST, LATEST, OFFSETS, TIMESTAMP, TIMESTAMPS }

    public final Kind kind;
    public final String option;      // the option it came from, for messages
    public final long timestamp;     // Kind.TIMESTAMP
    public final Map<TopicPartition, Long> values;

    Bound(Kind kind, String option, long timestamp, Map<TopicPartition, Long> values) {
        this.kind = kind;
        this.option = option;
        this.timestamp = timestamp;
        this.values = values;
    }

    boolean isPerPartition() {
        return kind == Kind.OFFSETS || kind == Kind.TIMESTAMPS;
    }

    long value(String topic, int partition) {
        return kind == Kind.TIMESTAMP ? timestamp : values.get(new TopicPartition(topic, partition));
    }
}
