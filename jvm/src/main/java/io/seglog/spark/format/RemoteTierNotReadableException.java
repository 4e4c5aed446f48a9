package io.seglog.spark.format;

/** A read needs offsets the remote tier holds and this process cannot reach it (no Hadoop FileSystem for the
 *  recorded scheme: s3a:// needs hadoop-aws on the classpath): named with the partition and the offsets,
 *  never mistaken for records deleted by retention, whatever failOnDataLoss says. */
public class RemoteTierNotReadableException extends RuntimeException {
    public RemoteTierNotReadableException(String message, Throwable cause) {
        super(message, cause);
    }
}
