package io.seglog.spark.format;

/** A tiered segment's object is missing. A reader opens the log again (remote retention may have recorded
 *  the segment {@code deleting} meanwhile: then the log start decides, as after local retention); an object
 *  still missing under a {@code copied} record is reported with its URI after the reopens, never skipped. */
public class RemoteObjectGoneException extends SegmentGoneException {
    public RemoteObjectGoneException(String message, Throwable cause) {
        super(message, cause);
    }
}
