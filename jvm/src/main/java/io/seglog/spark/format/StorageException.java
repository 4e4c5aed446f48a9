package io.seglog.spark.format;

/** The filesystem cannot do what seglog's formats need (hard links, flock locks) or failed an I/O:
 *  the Python core's {@code StorageError}, naming the file and what is needed. */
public class StorageException extends RuntimeException {
    public StorageException(String message) {
        super(message);
    }

    public StorageException(String message, Throwable cause) {
        super(message, cause);
    }
}
