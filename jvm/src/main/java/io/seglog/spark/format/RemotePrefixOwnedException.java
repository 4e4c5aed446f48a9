package io.seglog.spark.format;

/** The remote tier's prefix is owned by another root (its owner object names another root id): its objects are
 *  never read as this root's rows (docs/tiered-storage.md §2; Python's RemotePrefixOwnedError). */
public class RemotePrefixOwnedException extends RuntimeException {
    public RemotePrefixOwnedException(String message) {
        super(message);
    }
}
