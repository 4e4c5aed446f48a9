package io.seglog.spark.read;

/** A bad option of the seglog source: the message names the option, the value and what is allowed. */
public class SeglogConfigException extends IllegalArgumentException {
    public SeglogConfigException(String message) {
        super(message);
    }
}
