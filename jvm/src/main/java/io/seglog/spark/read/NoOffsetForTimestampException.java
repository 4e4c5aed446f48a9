package io.seglog.spark.read;


/** startingOffsetsByTimestampStrategy=error and a partition holds no committed record at or after the timestamp. */
public class NoOffsetForTimestampException extends IllegalStateException {
    public NoOffsetForTimestampException(String message) {
        super(message);
    }
}
