package io.seglog.spark.read;

/**
 * A read needs offsets that only the remote tier holds (docs/tiered-storage.md §6): format("seglog")
 * does not read the remote tier yet, and tiered-away segments are never mistaken for retention-deleted
 * ones, so the read fails whatever failOnDataLoss says, never returning fewer rows.
 */
public class RemoteTierNotReadableException extends IllegalStateException {
    public RemoteTierNotReadableException(String topic, int partition, long from, long localStart, String why) {
        super("seglog source: " + topic + "-" + partition + ": " + why + " offsets " + from + " to " + (localStart - 1)
            + " are on the remote tier only (tiered storage, docs/tiered-storage.md), which format(\"seglog\") does not "
            + "read yet; the local tier starts at offset " + localStart + ". Start at or after offset " + localStart
            + ", or read the remote tier with the Python core (seglog.indexer.remote.TieredLog). failOnDataLoss does not "
            + "apply: these offsets are not lost.");
    }
}
