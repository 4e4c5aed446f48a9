package io.seglog.spark.read;

/**
 * An option of Spark's Kafka source that only means something with a broker ({@code kafka.bootstrap.servers},
 * any other {@code kafka.*} consumer setting, {@code groupIdPrefix}, ...): seglog reads the log root's files, so
 * it is refused rather than silently ignored. {@code kafka.isolation.level} is the one consumer setting honoured.
 */
public class BrokerOptionException extends SeglogConfigException {
    public BrokerOptionException(String message) {
        super(message);
    }
}
