package io.seglog.spark.format;

/** A partition folder holds the traces of an interrupted operation that only the Python core's writable
 *  open finishes (a truncation intent, a clean's swap): the JVM writes nothing there and names them. */
public final class RecoveryNeededException extends RuntimeException {
    public RecoveryNeededException(String message) {
        super(message);
    }
}
