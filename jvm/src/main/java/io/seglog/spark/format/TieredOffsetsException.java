package io.seglog.spark.format;

/**
 * A change refused because it would touch offsets a partition has tiered to the remote tier: what is tiered is
 * immutable (docs/tiered-storage.md §4). The Python core's {@code OffsetOutOfRangeError} from
 * {@code Log.truncate_to} (indexer/remote/metadata.py {@code refuse_below_remote_end}); the message names the
 * partition, the offsets and why. Thrown before anything is changed.
 */
public class TieredOffsetsException extends RuntimeException {
    public TieredOffsetsException(String message) {
        super(message);
    }
}
