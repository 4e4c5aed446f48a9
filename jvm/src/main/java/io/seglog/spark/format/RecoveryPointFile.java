package io.seglog.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * A partition's recovery point, {@code <partition>/recovery-point-offset-checkpoint} (docs/format.md
 * "Files"; indexer/recovery_point.py): Kafka's checkpoint text, one entry. The roll back lowers it before it
 * rewrites records at or after the point (a truncation writes its intent after): the file must never claim as
 * durable and sealed what a cut touches. The publisher raises it as the core's close does, after forcing what it
 * newly covers. A missing or malformed file claims nothing.
 */
public final class RecoveryPointFile {
    public static final String NAME = "recovery-point-offset-checkpoint";

    private RecoveryPointFile() {}

    /** The point the file holds for this partition, or 0 (nothing trusted) when it holds none: missing,
     *  unreadable, malformed ({@link LogStartCheckpoint#parse}, the core's reader), or not exactly one entry, this
     *  partition's, at or above 0 (indexer/recovery_point.py read_recovery_point). */
    public static long read(Path dir, String topic, int partition) {
        java.util.Map<String, Long> entries;
        try {
            entries = LogStartCheckpoint.parse(dir.resolve(NAME));
        } catch (IOException | CorruptCheckpointException e) {
            return 0;
        }
        Long point = entries.get(topic + "-" + partition);
        return point == null || point < 0 || entries.size() != 1 ? 0 : point;
    }

    /** Lower the point to {@code offset} when it is above it (temp file, force, rename, folder fsync). */
    public static void lowerTo(Path dir, String topic, int partition, long offset) throws IOException {
        if (read(dir, topic, partition) <= offset) return;
        write(dir, topic, partition, offset);
    }

    /** The file holding {@code offset} (temp file, force, rename, folder fsync). Raising it is the publisher's
     *  ({@link StagedPublisher}: after forcing the segments it newly covers, as the core's close). */
    static void write(Path dir, String topic, int partition, long offset) throws IOException {
        AtomicFile.write(dir.resolve(NAME), text(topic, partition, offset));
    }

    /** {@link #write} but for the folder's fsync, which the caller makes after (the publisher's one fsync of the
     *  folder: its segments' names and this one's, StagedPublisher's finish says why that order is safe). Never a
     *  torn file: the data is forced under a temporary name before the rename. */
    static void writeUnsynced(Path dir, String topic, int partition, long offset) throws IOException {
        AtomicFile.writeUnsynced(dir.resolve(NAME), text(topic, partition, offset));
    }

    private static byte[] text(String topic, int partition, long offset) {
        return ("0\n1\n" + topic + " " + partition + " " + offset + "\n").getBytes(StandardCharsets.US_ASCII);
    }
}
