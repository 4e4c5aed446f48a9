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
import java.util.concurrent.atomic.AtomicLong;

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

    /** A stream on a clock the test moves. */
    private SeglogMicroBatchStream clocked(AtomicLong now, String... keysAndValues) {
        Map<String, String> o = new HashMap<>(Map.of("path", root.toString(), "topic", "t"));
        for (int i = 0; i < keysAndValues.length; i += 2) o.put(keysAndValues[i], keysAndValues[i + 1]);
        return new SeglogMicroBatchStream(ReadOptions.parse(o, true), checkpoint.toString(), Configuration::new, () -> 2,
            now::get);
    }

    @Test
    void minOffsetsPerTriggerWaitsForEnoughOffsetsUntilTheDelayPassesButNeverHoldsTheFirstTrigger() {
        backlog();
        AtomicLong now = new AtomicLong(1_000_000_000L);
        SeglogSourceOffset start = at(0, 0);
        SeglogMicroBatchStream waits = clocked(now, "minOffsetsPerTrigger", "500", "maxTriggerDelay", "1h");
        // Spark's Kafka source starts with lastTriggerMillis = 0: a new or restarted query's first trigger goes ahead.
        assertEquals(at(300, 100).json(), next(waits, start), "the first trigger is not delayed");
        now.addAndGet(1000);
        assertEquals(start.json(), next(waits, start), "400 offsets are below minOffsetsPerTrigger=500: no batch yet");
        now.addAndGet(3_600_000L - 1001);
        assertEquals(start.json(), next(waits, start), "a millisecond before maxTriggerDelay has passed: still none");
        now.addAndGet(1);
        assertEquals(at(300, 100).json(), next(waits, start), "maxTriggerDelay passed: the batch runs with what there is");
        now.addAndGet(1);
        assertEquals(start.json(), next(waits, start), "and the wait starts again from that trigger");
        SeglogMicroBatchStream enough = clocked(now, "minOffsetsPerTrigger", "400", "maxTriggerDelay", "1h");
        assertEquals(at(300, 100).json(), next(enough, start));
        now.addAndGet(1);
        assertEquals(at(300, 100).json(), next(enough, start), "400 new offsets reach minOffsetsPerTrigger=400");
    }

    @Test
    void underAvailableNowMinOffsetsPerTriggerHoldsLaterTriggersAsSparkApplies() {
        backlog();
        AtomicLong now = new AtomicLong(1_000_000_000L);
        // Spark passes the source's default limit under AvailableNow too: a run's first trigger goes ahead, a later
        // one with fewer than minOffsetsPerTrigger offsets left waits, and the run ends there.
        SeglogMicroBatchStream s = clocked(now, "minOffsetsPerTrigger", "150", "maxOffsetsPerTrigger", "200",
            "maxTriggerDelay", "1h");
        s.prepareForTriggerAvailableNow();
        assertEquals(at(150, 50).json(), next(s, at(0, 0)));
        now.addAndGet(10);
        assertEquals(at(300, 100).json(), next(s, at(150, 50)), "200 left: at least 150, one more trigger");
        now.addAndGet(10);
        assertEquals(at(250, 90).json(), next(s, at(250, 90)), "60 left, below 150: held, so the run ends");
        SeglogMicroBatchStream restarted = clocked(now, "minOffsetsPerTrigger", "150", "maxOffsetsPerTrigger", "200",
            "maxTriggerDelay", "1h");
        restarted.prepareForTriggerAvailableNow();
        assertEquals(at(300, 100).json(), next(restarted, at(250, 90)), "the next run's first trigger takes them");
    }

    @Test
    void maxTriggerDelayTakesEveryUnitSparkTakes() {
        String[][] cases = {{"500us", "0"}, {"1500us", "1"}, {"250ms", "250"}, {"30s", "30000"}, {"2m", "120000"},
            {"2min", "120000"}, {"3h", "10800000"}, {"1d", "86400000"}, {"1234", "1234"}, {" 15M ", "900000"}};
        for (String[] c : cases) {
            assertEquals(Long.parseLong(c[1]), ReadOptions.parse(Map.of("path", "/x", "topic", "t", "maxTriggerDelay", c[0]),
                true).maxTriggerDelayMs, c[0]);
        }
        assertEquals(15 * 60_000L, ReadOptions.parse(Map.of("path", "/x", "topic", "t"), true).maxTriggerDelayMs,
            "Spark's default, 15m");
        for (String bad : new String[] {"soon", "1.5s", "-1s", "10 seconds", "5w", ""}) {
            SeglogConfigException e = assertThrows(SeglogConfigException.class,
                () -> ReadOptions.parse(Map.of("path", "/x", "topic", "t", "maxTriggerDelay", bad), true), bad);
            assertTrue(e.getMessage().contains("'maxTriggerDelay'"), e.getMessage());
        }
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
