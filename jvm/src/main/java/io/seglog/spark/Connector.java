package io.seglog.spark;

/**
 * What the Python side asks of the jar before it relies on it: which connector version this is
 * and which Kafka record classes it was built on. {@code seglog.jvm} compares the version with
 * the wheel's, so a stale jar on a classpath is reported instead of used.
 */
public final class Connector {
    /** Kept equal to the wheel's version (tests/test_jvm.py checks). */
    public static final String VERSION = "0.3.0";

    private Connector() {}

    public static String version() {
        return VERSION;
    }

    /** The kafka-clients version shaded into this jar (the shade plugin relocates the reference). */
    public static String kafkaVersion() {
        return org.apache.kafka.common.utils.AppInfoParser.getVersion();
    }
}
