package io.seglog.spark.write;

/** A CreateTime record out of message.timestamp.before/after.max.ms of the write's now (StageConfig.timeLimitBroken). The Python sink raises {@code TimestampOutOfRangeError} for it (sink/write_errors.py maps this class). */
public class TimestampOutOfRangeException extends SeglogWriteException {
    public TimestampOutOfRangeException(String message) {
        super(message);
    }

    public TimestampOutOfRangeException(String message, Throwable cause) {
        super(message, cause);
    }
}
