package io.seglog.spark.format;

/** A commit would move a committed end offset backwards without asking to (indexer/commit_log.py's
 *  {@code CommitConflictError}): someone else moved the log under the committer. */
public final class CommitConflictException extends RuntimeException {
    public CommitConflictException(String message) {
        super(message);
    }
}
