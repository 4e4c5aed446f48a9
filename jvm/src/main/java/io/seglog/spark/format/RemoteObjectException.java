package io.seglog.spark.format;

/** A tiered segment's object that does not match its manifest (shorter or longer, another checksum) or whose
 *  bytes break the format: named with its URI, never read as fewer records (docs/tiered-storage.md §6). */
public class RemoteObjectException extends CorruptLogException {
    public RemoteObjectException(String message) {
        super(message);
    }

    public RemoteObjectException(String message, Throwable cause) {
        super(message, cause);
    }
}
