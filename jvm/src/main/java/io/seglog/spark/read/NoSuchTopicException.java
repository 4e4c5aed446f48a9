package io.seglog.spark.read;

/** A topic or partition the read names is not in the log root (or an offsets JSON does not cover it). */
public class NoSuchTopicException extends IllegalArgumentException {
    public NoSuchTopicException(String message) {
        super(message);
    }
}
