package io.seglog.spark.format;

import java.nio.file.Path;

/**
 * Whether a partition's offsets may have gaps between batches (compaction's doing: surviving records
 * keep their offsets, docs/spec.md §3.9). One rule, the Python core's (indexer/compaction/cleaner_checkpoint.py
 * {@code may_have_gaps}), from the same two files: the topic's recorded config
 * ({@code _seglog/topics/<topic>.json}) is compacted, or the cleaner checkpoint
 * {@code <root>/cleaner-offset-checkpoint} names the partition.
 *
 * Invariant kept by the cleaner: it writes the partition's checkpoint entry before it swaps anything
 * in, so a partition for which neither holds was never cleaned and keeps the dense offset checks. A
 * malformed checkpoint names nothing (as in the core, which reports it when the cleaner runs).
 */
public final class OffsetGaps {
    public static final String CLEANER_CHECKPOINT = "cleaner-offset-checkpoint";

    private OffsetGaps() {}

    public static boolean mayHaveGaps(Path root, String topic, int partition) {
        return TopicLayout.recordedCompacted(root, topic)
            || LogStartCheckpoint.readFile(root.resolve(CLEANER_CHECKPOINT)).containsKey(topic + "-" + partition);
    }
}
