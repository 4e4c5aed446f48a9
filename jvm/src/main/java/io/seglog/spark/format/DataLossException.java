package io.seglog.spark.format;

/** Offsets a read asked for are no longer in the log (retention, a lost folder): Spark's Kafka source
 *  reports this unless failOnDataLoss=false. */
public class DataLossException extends RuntimeException {
    public DataLossException(String message) {
        super(message);
    }
}
