package io.seglog.spark.format;

/** A topic name, partition count or recorded metadata refused (the Python core's {@code InvalidTopicError}). */
public final class InvalidTopicException extends IllegalArgumentException {
    public InvalidTopicException(String message) {
        super(message);
    }
}
