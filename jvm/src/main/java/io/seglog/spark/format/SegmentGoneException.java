package io.seglog.spark.format;

/** A listed segment was deleted (renamed .deleted by retention) before it was opened: readers take no
 *  lock, so they list again and let the new log start decide (docs/spec.md §3.7). */
public class SegmentGoneException extends RuntimeException {
    public SegmentGoneException(String message) {
        super(message);
    }

    public SegmentGoneException(String message, Throwable cause) {
        super(message, cause);
    }
}
