package io.seglog.spark.read;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.seglog.spark.format.DataLossException;

/**
 * Data loss decisions, as Spark's Kafka source's {@code reportDataLoss} makes them: offsets a read should
 * have returned are no longer in the log (retention, a lost partition folder). With failOnDataLoss a
 * {@link DataLossException} naming them; without, the read goes on from what is left, and says so: a
 * warning through Spark's logging (slf4j, log4j in a Spark process: the driver's log when planning, an
 * executor's when reading) and a count of the offsets skipped ({@link #skipped()}, reported as the
 * metric {@code dataLossSkippedOffsets}). Nothing is skipped silently.
 *
 * Planning may run again (a segment gone under it, {@link Planner#retrying}), and Spark may plan the
 * same micro-batch more than once: what an attempt found is held, and told by {@link #publish()} after
 * the attempt that succeeded, each loss once (a stream keeps what it told: {@code told}).
 */
final class DataLoss {
    private static final Logger LOG = LoggerFactory.getLogger(DataLoss.class);
    static final String METRIC = "dataLossSkippedOffsets";

    private final boolean fail;
    private final boolean tell;
    private final AtomicLong skipped;
    private final Set<String> told;
    private final Map<String, Long> held = new LinkedHashMap<>();   // what -> offsets skipped

    DataLoss(boolean failOnDataLoss, AtomicLong skipped, Set<String> told) {
        this(failOnDataLoss, true, skipped, told);
    }

    private DataLoss(boolean failOnDataLoss, boolean tell, AtomicLong skipped, Set<String> told) {
        this.fail = failOnDataLoss;
        this.tell = tell;
        this.skipped = skipped;
        this.told = told;
    }

    /** Neither fails nor tells: where a stream only looks (its latest offsets); it tells the loss when it
     *  plans the batch that meets it. */
    static DataLoss untold() {
        return new DataLoss(false, false, new AtomicLong(), new HashSet<>());
    }

    DataLoss(boolean failOnDataLoss) {
        this(failOnDataLoss, new AtomicLong(), new HashSet<>());
    }

    /** {@code what} names the partition and the offsets; {@code howToGoOn} ends the failure's message. */
    void report(String what, long offsets, String howToGoOn) {
        if (fail) {
            throw new DataLossException("seglog source: " + what + ". Some data may have been lost. " + howToGoOn);
        }
        held.merge(what, Math.max(0, offsets), Long::sum);
    }

    /** Tells what the successful attempt held: one warning each, and the count. */
    void publish() {
        if (!tell) {
            discard();
            return;
        }
        for (Map.Entry<String, Long> e : held.entrySet()) {
            if (!told.add(e.getKey())) continue;
            LOG.warn("seglog source: {}. Some data may have been lost; the read goes on from the offsets that remain "
                + "because failOnDataLoss=false (set failOnDataLoss=true to fail the query instead).", e.getKey());
            skipped.addAndGet(e.getValue());
        }
        discard();
    }

    void discard() {
        held.clear();
    }

    long skipped() {
        return skipped.get();
    }
}
