package io.seglog.spark.write;

import org.apache.kafka.common.utils.Utils;
import org.apache.spark.sql.api.java.UDF2;

/**
 * Kafka's default partition of a keyed record, from the shipped jar (no javac at run time):
 * {@code toPositive(murmur2(key)) % partitions}, kafka-clients' own functions. Null for a null key
 * (the sink places those itself, README "Sink").
 */
public final class Murmur2Partition implements UDF2<byte[], Integer, Integer> {
    private static final long serialVersionUID = 1L;

    /** Kafka's partition of {@code key} among {@code partitions}. */
    public static int partition(byte[] key, int partitions) {
        return Utils.toPositive(Utils.murmur2(key)) % partitions;
    }

    @Override
    public Integer call(byte[] key, Integer partitions) {
        if (key == null || partitions == null || partitions <= 0) {
            return null;
        }
        return partition(key, partitions);
    }
}
