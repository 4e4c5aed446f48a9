package io.seglog.spark.write;

/** A roll back that would cut offsets a partition has tiered (docs/tiered-storage.md §4). The Python sink raises {@code OffsetOutOfRangeError} for it (sink/write_errors.py maps this class). */
public class OffsetOutOfRangeException extends SeglogWriteException {
    public OffsetOutOfRangeException(String message) {
        super(message);
    }

    public OffsetOutOfRangeException(String message, Throwable cause) {
        super(message, cause);
    }
}
