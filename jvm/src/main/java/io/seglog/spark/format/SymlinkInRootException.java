package io.seglog.spark.format;

/** A symbolic link inside a log root (a partition folder, a segment or index file): never followed, since it
 *  could lead outside the root; nothing is read, written or deleted through it. The Python core's
 *  {@code SymlinkInRootError}; the message names the link. */
public final class SymlinkInRootException extends StorageException {
    public SymlinkInRootException(String message) {
        super(message);
    }
}
