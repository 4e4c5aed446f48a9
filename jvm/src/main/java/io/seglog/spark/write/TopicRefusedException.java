package io.seglog.spark.write;

/** A topic the write names refused: an invalid name, or a request that differs from the existing topic (partitions, configuration), or a name colliding with one of the root's. The Python sink raises {@code InvalidTopicError} for it (sink/write_errors.py maps this class). */
public class TopicRefusedException extends SeglogWriteException {
    public TopicRefusedException(String message) {
        super(message);
    }

    public TopicRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
