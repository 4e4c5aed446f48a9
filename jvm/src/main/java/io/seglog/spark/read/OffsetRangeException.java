package io.seglog.spark.read;

/** A requested offset range that cannot be read as asked (a starting offset after the ending one): the
 *  request's mistake, not data loss, so failOnDataLoss does not apply (the core's OffsetOutOfRangeError). */
public final class OffsetRangeException extends IllegalArgumentException {
    public OffsetRangeException(String message) {
        super(message);
    }
}
