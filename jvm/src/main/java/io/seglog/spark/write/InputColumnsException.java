package io.seglog.spark.write;

/** A bad input column: no value, a known column of the wrong type, a duplicate (InputColumns). The Python sink raises {@code SinkSchemaError} for it (sink/write_errors.py maps this class). */
public class InputColumnsException extends SeglogWriteException {
    public InputColumnsException(String message) {
        super(message);
    }

    public InputColumnsException(String message, Throwable cause) {
        super(message, cause);
    }
}
