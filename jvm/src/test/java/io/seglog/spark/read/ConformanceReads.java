package io.seglog.spark.read;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.Record;

import io.seglog.spark.format.PartitionLog;

/**
 * The read path's package-private pieces, for the conformance runner (io.seglog.spark.conformance.ConformanceTest,
 * docs/internals.md, "Conformance corpus"): a batch read's plan of one partition ({@link Planner#resolve}, from the
 * earliest offset to the latest, as {@code spark.read.format("seglog")} plans it) and its records through a
 * {@link RecordCursor}, with a given isolation level.
 */
public final class ConformanceReads {
    private ConformanceReads() {}

    /** [start, end) of a read from earliest to latest, and its bound (the committed end the read judges up to). */
    public record Range(long start, long end, long bound) {}

    /** One record as the cursor returns it; a null key or value, and a null header value, stay null. */
    public record Row(long offset, long timestamp, byte[] key, byte[] value, List<Map.Entry<String, byte[]>> headers) {}

    private static ReadOptions options(Path root, String topic, String isolation) {
        return ReadOptions.parse(Map.of("path", root.toString(), "topic", topic, "kafka.isolation.level", isolation));
    }

    public static Range plan(Path root, String topic, int partition, PartitionLog log, long committed) {
        PartitionRange r = Planner.resolve(options(root, topic, ReadOptions.READ_UNCOMMITTED), ScanBounds.NONE, topic,
            partition, log, committed, DataLoss.untold());
        return new Range(r.start, r.end, r.bound);
    }

    /** Every record of the range; {@code sink} gets each as it comes (so a caller knows how many came before a fault). */
    public static void read(Path root, String topic, int partition, Range range, String isolation,
                            java.util.function.Consumer<Row> sink) {
        try (RecordCursor cursor = new RecordCursor(options(root, topic, isolation),
                 new Slice(topic, partition, range.start(), range.end(), range.bound()))) {
            while (cursor.next()) {
                Record r = cursor.record;
                List<Map.Entry<String, byte[]>> headers = new ArrayList<>();
                for (Header h : r.headers()) headers.add(new java.util.AbstractMap.SimpleImmutableEntry<>(h.key(), h.value()));
                sink.accept(new Row(r.offset(), r.timestamp(), bytes(r.key()), bytes(r.value()), headers));
            }
        }
    }

    private static byte[] bytes(ByteBuffer b) {
        if (b == null) return null;
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }
}
