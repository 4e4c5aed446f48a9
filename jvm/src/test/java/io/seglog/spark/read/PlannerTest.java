package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.T0;
import static io.seglog.spark.TestLogs.batches;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.delete;
import static io.seglog.spark.TestLogs.indexedSegments;
import static io.seglog.spark.TestLogs.logStart;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.DataLossException;
import io.seglog.spark.format.PartitionLog;

/**
 * The driver's planning (docs/spec.md §8) without Spark: how the options resolve each partition's
 * range, where the range ends (the committed end, never the files' end), which mistakes are the
 * request's and which are data loss, and how the work is cut into tasks. The same answers as Spark's
 * Kafka source where it has them; the PySpark tests check them again end to end.
 */
class PlannerTest {
    @TempDir
    Path root;

    /** t-0: offsets 0 to 299 in segments at 0, 100 and 200 (batches of 10, every batch start indexed),
     *  committed up to 250: offsets 250 to 299 are a delivery still in flight. */
    private void threeSegments() {
        indexedSegments(partitionDir(root, "t", 0), 300, 100, 10);
        commit(root, "t", Map.of(0, 250L));
    }

    private ReadOptions options(String... keysAndValues) {
        Map<String, String> o = new HashMap<>(Map.of("path", root.toString(), "topic", "t"));
        for (int i = 0; i < keysAndValues.length; i += 2) o.put(keysAndValues[i], keysAndValues[i + 1]);
        return ReadOptions.parse(o);
    }

    private static List<Slice> slices(List<List<Slice>> tasks) {
        List<Slice> out = new ArrayList<>();
        for (List<Slice> task : tasks) out.addAll(task);
        return out;
    }

    /** [start, end) the plan reads of t-0, checked to be one run of slices without gap or overlap. */
    private long[] range(ReadOptions o, ScanBounds bounds, DataLoss loss) {
        List<Slice> all = slices(Planner.plan(o, bounds, 2, loss));
        if (all.isEmpty()) return new long[] {-1, -1};
        for (int i = 1; i < all.size(); i++) {
            assertEquals(all.get(i - 1).end, all.get(i).start, "slices " + all + " leave a gap or overlap");
        }
        return new long[] {all.get(0).start, all.get(all.size() - 1).end};
    }

    private long[] range(String... keysAndValues) {
        return range(options(keysAndValues), ScanBounds.NONE, new DataLoss(true));
    }

    private static void assertRange(long start, long end, long[] got) {
        assertEquals(start + ".." + end, got[0] + ".." + got[1]);
    }

    @Test
    void aReadEndsAtTheCommittedEndNotWhereTheFilesEnd() {
        threeSegments();
        assertRange(0, 250, range());
        assertRange(0, 250, range("endingOffsets", "{\"t\":{\"0\":280}}"));
    }

    @Test
    void offsetsAndTimestampsResolveAsSparksKafkaSource() {
        threeSegments();
        assertRange(120, 250, range("startingOffsets", "{\"t\":{\"0\":120}}", "endingOffsets", "{\"t\":{\"0\":-1}}"));
        assertRange(0, 240, range("startingOffsets", "{\"t\":{\"0\":-2}}", "endingOffsets", "{\"t\":{\"0\":240}}"));
        assertRange(150, 250, range("startingTimestamp", String.valueOf(T0 + 150)));
        assertRange(150, 250, range("startingOffsetsByTimestamp", "{\"t\":{\"0\":" + (T0 + 150) + "}}"));
        assertRange(0, 200, range("endingTimestamp", String.valueOf(T0 + 200)));
        // An ending timestamp no committed record reaches means the latest offset (Spark's Kafka source).
        assertRange(0, 250, range("endingTimestamp", String.valueOf(T0 + 10_000)));
    }

    @Test
    void minusOneAndMinusTwoInAnOffsetsByTimestampJsonAreTheLatestAndTheEarliestOffset() {
        threeSegments();
        // As Spark hands the JSON's values to the broker's ListOffsets, where -1 is the latest and -2 the earliest.
        assertRange(0, 250, range("startingOffsetsByTimestamp", "{\"t\":{\"0\":-2}}"));
        assertEquals(List.of(), Planner.plan(options("startingOffsetsByTimestamp", "{\"t\":{\"0\":-1}}"), ScanBounds.NONE,
            2, new DataLoss(true)), "-1: from the latest offset, so nothing to read");
        assertRange(0, 250, range("endingOffsetsByTimestamp", "{\"t\":{\"0\":-1}}"));
        assertEquals(List.of(), Planner.plan(options("endingOffsetsByTimestamp", "{\"t\":{\"0\":-2}}"), ScanBounds.NONE,
            2, new DataLoss(true)), "-2: up to the earliest offset, so nothing to read");
        assertRange(150, 250, range("startingOffsetsByTimestamp", "{\"t\":{\"0\":" + (T0 + 150) + "}}",
            "endingOffsetsByTimestamp", "{\"t\":{\"0\":-1}}"));
        SeglogConfigException bad = assertThrows(SeglogConfigException.class,
            () -> options("startingOffsetsByTimestamp", "{\"t\":{\"0\":-3}}"));
        assertTrue(bad.getMessage().contains("'startingOffsetsByTimestamp'") && bad.getMessage().contains("-1 for the latest"),
            bad.getMessage());
    }

    @Test
    void maxRecordsPerPartitionCutsTasksToAtMostThatManyOffsetsEvenly() {
        threeSegments();
        for (long max : new long[] {1000, 250, 100, 64, 7}) {
            List<List<Slice>> tasks = Planner.plan(options("maxRecordsPerPartition", String.valueOf(max)), ScanBounds.NONE,
                2, new DataLoss(true));
            long smallest = Long.MAX_VALUE, largest = 0;
            for (List<Slice> task : tasks) {
                long n = 0;
                for (Slice s : task) n += s.end - s.start;
                smallest = Math.min(smallest, n);
                largest = Math.max(largest, n);
            }
            assertEquals((250 + max - 1) / max, tasks.size(), "the fewest tasks of at most " + max + ": " + tasks);
            assertTrue(largest <= max && largest - smallest <= 1, "tasks of " + smallest + " to " + largest + " offsets: " + tasks);
            assertRange(0, 250, range("maxRecordsPerPartition", String.valueOf(max)));
        }
        // Small partitions sharing a task are cut too: the limit is per task, as a Spark partition is one task.
        for (int p = 0; p < 3; p++) segment(partitionDir(root, "s", p), 0, batches(0, 10, 5));
        commit(root, "s", Map.of(0, 10L, 1, 10L, 2, 10L));
        Map<String, String> o = Map.of("path", root.toString(), "topic", "s", "maxRecordsPerPartition", "12");
        assertEquals("[[s-0[0,10)], [s-1[0,10)], [s-2[0,10)]]",
            Planner.plan(ReadOptions.parse(o), ScanBounds.NONE, 2, new DataLoss(true)).toString());
        Map<String, String> o2 = Map.of("path", root.toString(), "topic", "s", "maxRecordsPerPartition", "20");
        assertEquals("[[s-0[0,10), s-1[0,5)], [s-1[5,10), s-2[0,10)]]",
            Planner.plan(ReadOptions.parse(o2), ScanBounds.NONE, 2, new DataLoss(true)).toString());
        SeglogConfigException zero = assertThrows(SeglogConfigException.class, () -> options("maxRecordsPerPartition", "0"));
        assertTrue(zero.getMessage().contains("'maxRecordsPerPartition'"), zero.getMessage());
    }

    @Test
    void aStartingTimestampNoCommittedRecordReachesFailsUnlessTheStrategySaysLatest() {
        threeSegments();
        // Offset 260 holds T0 + 260, but it is not committed: no committed record is at or after it.
        NoOffsetForTimestampException e = assertThrows(NoOffsetForTimestampException.class,
            () -> range("startingTimestamp", String.valueOf(T0 + 260)));
        assertTrue(e.getMessage().contains("t-0") && e.getMessage().contains("startingOffsetsByTimestampStrategy"),
            e.getMessage());
        assertEquals(List.of(), Planner.plan(options("startingTimestamp", String.valueOf(T0 + 260),
            "startingOffsetsByTimestampStrategy", "latest"), ScanBounds.NONE, 2, new DataLoss(true)));
    }

    @Test
    void anExplicitStartRetentionDeletedIsDataLossAndSkippedOnlyWhenAskedAndToldOnce() {
        threeSegments();
        logStart(root, Map.of("t-0", 100L));
        delete(partitionDir(root, "t", 0), 0);
        DataLossException e = assertThrows(DataLossException.class,
            () -> range("startingOffsets", "{\"t\":{\"0\":50}}"));
        assertTrue(e.getMessage().contains("t-0: offsets 50 to 99 are no longer in the log"), e.getMessage());

        DataLoss lenient = new DataLoss(false);
        assertRange(100, 250, range(options("startingOffsets", "{\"t\":{\"0\":50}}", "failOnDataLoss", "false"),
            ScanBounds.NONE, lenient));
        assertEquals(50, lenient.skipped());
        // "earliest" asks for what is there: no loss.
        DataLoss earliest = new DataLoss(true);
        assertRange(100, 250, range(options(), ScanBounds.NONE, earliest));
        assertEquals(0, earliest.skipped());
    }

    @Test
    void aStartAfterTheEndIsTheRequestsMistakeNotDataLoss() {
        threeSegments();
        OffsetRangeException e = assertThrows(OffsetRangeException.class,
            () -> range("startingOffsets", "{\"t\":{\"0\":245}}", "endingOffsets", "{\"t\":{\"0\":240}}"));
        assertTrue(e.getMessage().contains("t-0") && e.getMessage().contains("245") && e.getMessage().contains("240"),
            e.getMessage());
    }

    @Test
    void pushedFiltersNarrowTheRangeAndPrunePartitions() {
        threeSegments();
        ScanBounds offsets = new ScanBounds();
        offsets.offsetMin = 120L;
        offsets.offsetMax = 129L;
        assertRange(120, 130, range(options(), offsets, new DataLoss(true)));

        ScanBounds time = new ScanBounds();
        time.tsMin = T0 + 150;
        assertRange(150, 250, range(options(), time, new DataLoss(true)));

        ScanBounds otherPartition = new ScanBounds();
        otherPartition.partitionIn = Set.of(1L);
        assertEquals(List.of(), Planner.plan(options(), otherPartition, 2, new DataLoss(true)));
    }

    @Test
    void aLargeRangeIsCutAtIndexEntriesIntoTasksOfAboutTheTargetSize() {
        threeSegments();
        long total;
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 0L)) {
            total = log.byteSize(0, 250);
            long target = total / 4;
            List<List<Slice>> tasks = Planner.plan(options("maxBytesPerTask", String.valueOf(target)), ScanBounds.NONE,
                2, new DataLoss(true));
            assertTrue(tasks.size() >= 4, tasks.toString());
            assertRange(0, 250, range("maxBytesPerTask", String.valueOf(target)));
            for (List<Slice> task : tasks) {
                long bytes = 0;
                for (Slice s : task) {
                    bytes += log.byteSize(s.start, s.end);
                    // A cut is an indexed batch's first offset (each batch holds 10 offsets from a multiple of 10):
                    // no batch straddles two tasks, so each is read by one task only (issue 28).
                    if (s.start != 0) assertEquals(0, s.start % 10, "cut at " + s.start + " in " + tasks);
                    if (s.end != 250) assertEquals(0, s.end % 10, "cut at " + s.end + " in " + tasks);
                }
                assertTrue(bytes <= target + target / Planner.SLACK, "task " + task + " holds " + bytes + " bytes; target "
                    + target);
            }
        }
    }

    @Test
    void minPartitionsAsksForAtLeastThatManyTasks() {
        threeSegments();
        for (int wanted : new int[] {2, 3, 5, 7}) {
            List<List<Slice>> tasks = Planner.plan(options("minPartitions", String.valueOf(wanted)), ScanBounds.NONE, 2,
                new DataLoss(true));
            assertTrue(tasks.size() >= wanted, "minPartitions=" + wanted + " planned " + tasks);
        }
    }

    @Test
    void smallPartitionsShareATask() {
        for (int p = 0; p < 3; p++) segment(partitionDir(root, "s", p), 0, batches(0, 10, 5));
        commit(root, "s", Map.of(0, 10L, 1, 10L, 2, 10L));
        Map<String, String> o = Map.of("path", root.toString(), "topic", "s");
        List<List<Slice>> tasks = Planner.plan(ReadOptions.parse(o), ScanBounds.NONE, 2, new DataLoss(true));
        assertEquals("[[s-0[0,10), s-1[0,10), s-2[0,10)]]", tasks.toString());
    }

    @Test
    void aPerPartitionBoundNamesEveryPartitionAndOnlyThose() {
        for (int p = 0; p < 2; p++) segment(partitionDir(root, "u", p), 0, batches(0, 10, 5));
        commit(root, "u", Map.of(0, 10L, 1, 10L));
        NoSuchTopicException missing = assertThrows(NoSuchTopicException.class, () -> Planner.plan(ReadOptions.parse(
            Map.of("path", root.toString(), "topic", "u", "startingOffsets", "{\"u\":{\"0\":0}}")),
            ScanBounds.NONE, 2, new DataLoss(true)));
        assertTrue(missing.getMessage().contains("missing: u-1"), missing.getMessage());
        NoSuchTopicException unknown = assertThrows(NoSuchTopicException.class, () -> Planner.plan(ReadOptions.parse(
            Map.of("path", root.toString(), "topic", "u", "startingOffsets", "{\"u\":{\"0\":0,\"1\":0,\"5\":0}}")),
            ScanBounds.NONE, 2, new DataLoss(true)));
        assertTrue(unknown.getMessage().contains("does not have: u-5"), unknown.getMessage());
    }
}
