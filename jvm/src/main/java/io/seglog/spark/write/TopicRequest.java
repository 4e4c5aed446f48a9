package io.seglog.spark.write;

import java.io.Serializable;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import io.seglog.spark.format.InvalidTopicException;
import io.seglog.spark.format.TopicCatalog;
import io.seglog.spark.format.TopicLayout;
import io.seglog.spark.format.TopicMetadata;

/**
 * The write's one rule for the topics it names (the Python sink's, docs/spec.md §7), used by the tasks as they
 * meet each topic and by the driver's commit:
 * <ul>
 * <li>a topic the write names (option {@code topic}, or a row's {@code topic} column): existing, it keeps its
 *   own partition count and configuration, and a request that differs ({@code partitions}, topic configuration)
 *   is refused naming both; new, it is made with the request, and without {@code partitions} it is refused;</li>
 * <li>a quarantine topic (where a topic's out-of-range records go): used as it is when it exists, else made with
 *   the source topic's partition count and the default configuration (the request is the source topic's, not
 *   its own: checking it against the quarantine topic would refuse every later write).</li>
 * </ul>
 * A new topic is only planned here (the tasks partition by its count); the driver's commit records it
 * (TopicCatalog.create, which refuses a topic made meanwhile with another count) under the topic's writer lock.
 */
final class TopicRequest implements Serializable {
    private static final long serialVersionUID = 1L;
    final String root;
    final Integer partitions;             // null: not asked
    final Map<String, Object> config;     // the topic configuration asked for (Kafka's names)
    final boolean configGiven;

    TopicRequest(WriteOptions o) {
        this.root = o.root;
        this.partitions = o.partitions;
        this.config = o.config;
        this.configGiven = o.configGiven;
    }

    /** A topic the write names: existing and checked, or planned with the request (not created yet). */
    TopicMetadata named(String topic, String where) {
        checkName(topic, where);
        Optional<TopicMetadata> existing = TopicCatalog.load(Path.of(root), topic);
        if (existing.isPresent()) {
            if (partitions != null || configGiven) {
                try {
                    TopicCatalog.checkSame(existing.get(), partitions != null ? partitions : existing.get().partitions(), config);
                } catch (InvalidTopicException e) {
                    throw new TopicRefusedException("seglog InvalidTopicError: " + e.getMessage());
                }
            }
            return existing.get();
        }
        if (partitions == null) {
            throw new SeglogWriteException("seglog write: topic '" + topic + "' does not exist under " + root + " (" + where
                    + "); pass option 'partitions' (SegmentLogSink's partitions=) and topic configuration to create it");
        }
        return new TopicMetadata(topic, partitions, config, 0);
    }

    /** A quarantine topic for {@code source}'s out-of-range records: as it is, else planned like the source. */
    TopicMetadata quarantine(String topic, TopicTarget source) {
        checkName(topic, "quarantine.topic of topic '" + source.name + "'");
        return TopicCatalog.load(Path.of(root), topic).orElseGet(() -> new TopicMetadata(topic, source.partitions, Map.of(), 0));
    }

    private static void checkName(String topic, String where) {
        if (!TopicLayout.validTopic(topic)) {
            throw new TopicRefusedException("seglog InvalidTopicError: topic '" + topic + "' (" + where + ") is not a valid "
                    + "topic name: 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'");
        }
    }
}
