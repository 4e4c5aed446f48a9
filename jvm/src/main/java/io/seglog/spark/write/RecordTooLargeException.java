package io.seglog.spark.write;

/** A record whose batch exceeds max.message.bytes: the write refused whole, naming the record's key. The Python sink raises {@code RecordTooLargeError} for it (sink/write_errors.py maps this class). */
public class RecordTooLargeException extends SeglogWriteException {
    public RecordTooLargeException(String message) {
        super(message);
    }

    public RecordTooLargeException(String message, Throwable cause) {
        super(message, cause);
    }
}
