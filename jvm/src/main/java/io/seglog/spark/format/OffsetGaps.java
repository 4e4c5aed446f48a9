package io.seglog.spark.format;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

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

    private final Path root;
    private final Map<String, Long> cleaned;
    // topic -> its recorded config compacts; concurrent: a driver's commit shares one among its partitions' threads
    private final Map<String, Boolean> compacted = new ConcurrentHashMap<>();

    private OffsetGaps(Path root, Map<String, Long> cleaned) {
        this.root = root;
        this.cleaned = cleaned;
    }

    /** The rule's files as of now, read once for every partition a look opens (the cleaner checkpoint names
     *  every cleaned partition of the root: reading it per partition cost O(partitions) each; a topic's recorded
     *  config is read once, at its first partition). A writer takes it with the locks of the partitions it asks
     *  about already held: the cleaner records a partition here before it swaps anything in, under that lock. */
    public static OffsetGaps at(Path root) {
        return new OffsetGaps(root, LogStartCheckpoint.readFile(root.resolve(CLEANER_CHECKPOINT)));
    }

    /** The same, with {@code topic}'s recorded config as its caller read it ({@code compacted}: {@link
     *  TopicLayout#compacts} of its cleanup.policy) instead of reading its file again (issue 41: a write's commit read
     *  the topic's file a third time here). Only a caller holding the topic's writer lock since that read may: every
     *  change of a recorded topic (its creation, ALTER TABLE, a delete) takes that lock. */
    public OffsetGaps knowing(String topic, boolean compacted) {
        this.compacted.put(topic, compacted);
        return this;
    }

    public boolean mayHaveGaps(String topic, int partition) {
        return compacted.computeIfAbsent(topic, t -> TopicLayout.recordedCompacted(root, t))
            || cleaned.containsKey(topic + "-" + partition);
    }
}
