package io.seglog.spark.write;

/** A write refused before anything is written: a bad option, a bad input column, a topic conflict. The
 *  message names the option or column, the value, and what is allowed. */
public final class SeglogWriteException extends IllegalArgumentException {
    public SeglogWriteException(String message) {
        super(message);
    }

    public SeglogWriteException(String message, Throwable cause) {
        super(message, cause);
    }
}
