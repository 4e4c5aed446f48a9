package io.seglog.spark.format;

/** A topic configuration key or value refused (the Python core's {@code ConfigError}): the message
 *  names where, the key, the value and what is allowed. */
public final class TopicConfigException extends IllegalArgumentException {
    public TopicConfigException(String message) {
        super(message);
    }
}
