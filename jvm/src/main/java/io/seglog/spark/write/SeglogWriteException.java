package io.seglog.spark.write;

/** A write refused before anything is written: a bad option, a bad input column, a topic conflict. The class says
 *  which refusal it is (its subclasses: the Python sink maps each class to its typed error, sink/write_errors.py). The
 *  message names the option or column, the value, and what is allowed. */
public class SeglogWriteException extends IllegalArgumentException {
    public SeglogWriteException(String message) {
        super(message);
    }

    public SeglogWriteException(String message, Throwable cause) {
        super(message, cause);
    }
}
