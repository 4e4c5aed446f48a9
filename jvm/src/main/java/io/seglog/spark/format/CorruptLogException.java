package io.seglog.spark.format;

/** A log file that breaks an invariant of docs/format.md: reported with the file and the offsets,
 *  never read as other records. */
public class CorruptLogException extends RuntimeException {
    public CorruptLogException(String message) {
        super(message);
    }

    public CorruptLogException(String message, Throwable cause) {
        super(message, cause);
    }
}
