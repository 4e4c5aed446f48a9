package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.batches;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A stream's admission control without Spark, as Spark's Kafka source applies it: maxOffsetsPerTrigger
 * shared over partitions in proportion to their backlog, minOffsetsPerTrigger waiting for that many
 * offsets until maxTriggerDelay has passed, and the two checked against each other.
 */
class ReadLimitTest {
    @TempDir
    Path root;
    @TempDir
    Path checkpoint;

    /** t-0 committed to 300, t-1 to 100. */
    private void backlog() {
        segment(partitionDir(root, "t", 0), 0, batches(0, 300, 10));
        segment(partitionDir(root, "t", 1), 0, batches(0, 100, 10));
        commit(root, "t", Map.of(0, 300L, 1, 100L));
    }

    private SeglogMicroBatchStream stream(String... keysAndValues) {
        Map<String, String> o = new HashMap<>(Map.of("path", root.toString(), "topic", "t"));
        for (int i = 0; i < keysAndValues.length; i += 2) o.put(keysAndValues[i], keysAndValues[i + 1]);
        return new SeglogMicroBatchStream(ReadOptions.parse(o, true), checkpoint.toString(), Configuration::new, () -> 2);
    }

    private static SeglogSourceOffset at(long p0, long p1) {
        return new SeglogSourceOffset(Map.of("t", Map.of(0, p0, 1, p1)));
    }

    private static String next(SeglogMicroBatchStream s, SeglogSourceOffset from) {
        return ((SeglogSourceOffset) s.latestOffset(from, s.getDefaultReadLimit())).json();
    }

    @Test
    void maxOffsetsPerTriggerIsSharedInProportionToEachPartitionsBacklog() {
        backlog();
        SeglogMicroBatchStream s = stream("maxOffsetsPerTrigger", "100");
        assertEquals(at(75, 25).json(), next(s, at(0, 0)));
        assertEquals(at(150, 50).json(), next(s, at(75, 25)));
        // A backlog within the limit is read whole.
        assertEquals(at(300, 100).json(), next(s, at(250, 80)));
        // A partition with a tiny share still moves (at least one offset), as Spark's Kafka source rounds up below 1.
        // (300 and 1 behind, a limit of 100: 99.7 rounds down to 99, 0.3 up to 1.)
        assertEquals(at(99, 100).json(), next(s, at(0, 99)));
    }

    @Test
    void minOffsetsPerTriggerWaitsForEnoughOffsetsUntilTheDelayPasses() throws InterruptedException {
        backlog();
        SeglogSourceOffset start = at(0, 0);
        SeglogMicroBatchStream waits = stream("minOffsetsPerTrigger", "500", "maxTriggerDelay", "1h");
        assertEquals(start.json(), next(waits, start), "400 offsets are below minOffsetsPerTrigger=500: no batch yet");
        SeglogMicroBatchStream enough = stream("minOffsetsPerTrigger", "400", "maxTriggerDelay", "1h");
        assertEquals(at(300, 100).json(), next(enough, start));
        SeglogMicroBatchStream delayed = stream("minOffsetsPerTrigger", "500", "maxTriggerDelay", "20ms");
        Thread.sleep(40);
        assertEquals(at(300, 100).json(), next(delayed, start), "maxTriggerDelay passed: the batch runs with what there is");
    }

    @Test
    void theLimitsAreCheckedWhenTheStreamIsMade() {
        SeglogConfigException both = assertThrows(SeglogConfigException.class,
            () -> stream("minOffsetsPerTrigger", "10", "maxOffsetsPerTrigger", "5"));
        assertTrue(both.getMessage().contains("minOffsetsPerTrigger (10) must be at most maxOffsetsPerTrigger (5)"),
            both.getMessage());
        SeglogConfigException zero = assertThrows(SeglogConfigException.class, () -> stream("maxOffsetsPerTrigger", "0"));
        assertTrue(zero.getMessage().contains("maxOffsetsPerTrigger"), zero.getMessage());
        SeglogConfigException delay = assertThrows(SeglogConfigException.class, () -> stream("maxTriggerDelay", "soon"));
        assertTrue(delay.getMessage().contains("maxTriggerDelay"), delay.getMessage());
    }
}
