package io.seglog.spark.format;

/** A lock held by another writer past the wait allowed (the Python core's {@code PartitionLockedError}),
 *  naming what is locked and the lock file. */
public final class LockedException extends RuntimeException {
    public LockedException(String message) {
        super(message);
    }
}
