package io.seglog.spark.write;

/** A record Kafka's format cannot hold: a timestamp before the epoch, a header with a null key, a batch past 2 GiB. The Python sink raises {@code InvalidRecordError} for it (sink/write_errors.py maps this class). */
public class InvalidRecordException extends SeglogWriteException {
    public InvalidRecordException(String message) {
        super(message);
    }

    public InvalidRecordException(String message, Throwable cause) {
        super(message, cause);
    }
}
