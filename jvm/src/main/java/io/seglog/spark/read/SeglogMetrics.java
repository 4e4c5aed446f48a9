package io.seglog.spark.read;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/** The scan's custom metrics (Spark's SQL UI and {@code SQLMetrics}): offsets skipped as data loss under
 *  failOnDataLoss=false, on the driver when planning and in tasks when retention ran since (see {@link DataLoss}). */
public final class SeglogMetrics {
    private SeglogMetrics() {}

    /** Instantiated by Spark by its class name: public, with a public no-argument constructor. */
    public static final class SkippedOffsets extends CustomSumMetric {
        @Override
        public String name() {
            return DataLoss.METRIC;
        }

        @Override
        public String description() {
            return "offsets skipped as data loss (failOnDataLoss=false)";
        }
    }

    static CustomMetric[] supported() {
        return new CustomMetric[] {new SkippedOffsets()};
    }

    static CustomTaskMetric[] values(long skipped) {
        return new CustomTaskMetric[] {new CustomTaskMetric() {
            @Override
            public String name() {
                return DataLoss.METRIC;
            }

            @Override
            public long value() {
                return skipped;
            }
        }};
    }
}
