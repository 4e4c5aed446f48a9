package io.seglog.spark.write;

/** A record without a key for a compacted topic. The Python sink raises {@code MissingKeyError} for it (sink/write_errors.py maps this class). */
public class MissingKeyException extends SeglogWriteException {
    public MissingKeyException(String message) {
        super(message);
    }

    public MissingKeyException(String message, Throwable cause) {
        super(message, cause);
    }
}
