package io.seglog.spark.format;

/** A file named like a segment file (digits, then .log/.index/.timeindex) that is not exactly 20 digits of a
 *  base offset of at most 2^63-1: refused by name, as Kafka refuses to load such a log. The Python core's
 *  {@code SegmentNameError} ({@link SegmentName} is the rule). */
public final class SegmentNameException extends CorruptLogException {
    public SegmentNameException(String message) {
        super(message);
    }
}
