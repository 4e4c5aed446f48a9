package io.seglog.spark.format;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Which partition leader epochs a partition folder's batches may carry (docs/kafka.md "Leader epochs"; the
 * Python core's indexer/leader_epochs.py). seglog writes epoch 0 in every batch, so in a folder seglog wrote
 * any other epoch is a flipped byte (the CRC does not cover the field). A Kafka broker writes its current
 * leader epoch and keeps the epochs it assigned in {@code leader-epoch-checkpoint}: a folder with that file
 * (a broker's, or imported from one) may hold any epoch, as long as epochs never decrease from batch to batch.
 */
public final class LeaderEpochs {
    public static final String CHECKPOINT = "leader-epoch-checkpoint";
    public static final int SEGLOG_LEADER_EPOCH = 0;

    private LeaderEpochs() {
    }

    /** The largest epoch a batch in {@code partitionDir} may carry: 0 for seglog's own folders, any
     *  (int32 max) when Kafka's leader-epoch-checkpoint is there. */
    public static int maxLeaderEpoch(Path partitionDir) {
        return Files.exists(partitionDir.resolve(CHECKPOINT)) ? Integer.MAX_VALUE : SEGLOG_LEADER_EPOCH;
    }
}
