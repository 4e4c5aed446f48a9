package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.append;
import static io.seglog.spark.TestLogs.batch;
import static io.seglog.spark.TestLogs.batches;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.delete;
import static io.seglog.spark.TestLogs.file;
import static io.seglog.spark.TestLogs.indexedSegments;
import static io.seglog.spark.TestLogs.logStart;
import static io.seglog.spark.TestLogs.marker;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static io.seglog.spark.TestLogs.txnBatch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.DataLossException;
import io.seglog.spark.format.PartitionLog;
import io.seglog.spark.format.Segment;

/**
 * Issue 24: a stream keeps per partition what a later trigger can reuse (segment listings, read_committed's
 * decided fates), so a trigger lists, opens and scans O(1) per partition whatever the history: the same
 * counts at 30 and 300 retained segments. And the kept state hides no change the sidecar or a writer makes
 * between triggers: a segment rolled in the same clock tick as a listing, a merge's swap, retention.
 */
class StreamStateTest {
    @TempDir
    Path root;
    @TempDir
    Path checkpoint;

    private SeglogMicroBatchStream stream(String... options) {
        Map<String, String> o = new HashMap<>();
        o.put("path", root.toString());
        o.put("topic", "t");
        for (int i = 0; i < options.length; i += 2) o.put(options[i], options[i + 1]);
        return new SeglogMicroBatchStream(ReadOptions.parse(o, true), checkpoint.resolve(root.getFileName()).toString(),
            Configuration::new, () -> 2);
    }

    private static SeglogSourceOffset at(long offset) {
        return new SeglogSourceOffset(Map.of("t", Map.of(0, offset)));
    }

    /** The folder's mtime an hour back: a listing of it is kept (nothing can land in its clock tick any more). */
    private static FileTime age(Path dir) {
        FileTime old = FileTime.fromMillis(System.currentTimeMillis() - 3_600_000L);
        setMtime(dir, old);
        return old;
    }

    private static void setMtime(Path dir, FileTime t) {
        try {
            Files.setLastModifiedTime(dir, t);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static FileTime mtime(Path dir) {
        try {
            return Files.getLastModifiedTime(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path lastLog(Path dir, long end, int perSegment) {
        return file(dir, (end - 1) / perSegment * perSegment, ".log");
    }

    /** Listings, segment opens and read_committed batch headers of one piece of driver work. */
    private record Cost(long listings, long opens, long batches) {
        static Cost of(Runnable work) {
            long l = PartitionLog.listings(), o = Segment.opens(), b = TransactionFates.batchesRead();
            work.run();
            return new Cost(PartitionLog.listings() - l, Segment.opens() - o, TransactionFates.batchesRead() - b);
        }
    }

    /** The second trigger of a stream over {@code segments} of history, reading 10 offsets appended since the
     *  first (in the last segment: the folder is unchanged). */
    private Cost secondTrigger(int segments) {
        Path dir = partitionDir(root, "t", 0);
        long end = segments * 20L;
        indexedSegments(dir, end, 20, 5);
        commit(root, "t", Map.of(0, end));
        age(dir);
        SeglogMicroBatchStream s = stream();
        SeglogSourceOffset first = (SeglogSourceOffset) s.latestOffset(at(end - 10), ReadLimit.allAvailable());
        s.planInputPartitions(at(end - 10), first);

        append(lastLog(dir, end, 20), List.of(batch(end, 10)));
        commit(root, "t", Map.of(0, end + 10));
        SeglogSourceOffset[] latest = new SeglogSourceOffset[1];
        Cost cost = Cost.of(() -> {
            latest[0] = (SeglogSourceOffset) s.latestOffset(first, ReadLimit.allAvailable());
            InputPartition[] tasks = s.planInputPartitions(first, latest[0]);
            assertEquals(1, tasks.length);
        });
        assertEquals(at(end + 10).json(), latest[0].json());
        return cost;
    }

    @Test
    void aTriggerListsNoFolderThatDidNotChangeAndOpensWhatItReadsAtTenTimesTheHistory() {
        Path start = root;
        Cost small = secondTrigger(30);
        root = start.resolve("long");
        Cost large = secondTrigger(300);
        assertEquals(0, small.listings, "a trigger listed an unchanged folder");
        assertEquals(0, large.listings, "a trigger listed an unchanged folder");
        assertEquals(small.opens, large.opens, "segments opened with 30 and 300 retained: " + small + " " + large);
        assertTrue(large.opens <= 2, large + ": more segments opened than the one read");
    }

    /** Segments of 20 offsets covering [0, end), each two committed transactions of producer 7. */
    private static void transactionalHistory(Path dir, long end) {
        for (long base = 0; base < end; base += 20) {
            segment(dir, base, List.of(txnBatch(base, 9, 7), marker(base + 9, 7, true),
                txnBatch(base + 10, 9, 7), marker(base + 19, 7, false)));
        }
    }

    /** read_committed with maxOffsetsPerTrigger behind a backlog of the whole history: the batch headers the
     *  second and third triggers read (the third after a transaction was appended and committed). */
    private long[] readCommittedTriggers(int segments) {
        Path dir = partitionDir(root, "t", 0);
        long end = segments * 20L;
        transactionalHistory(dir, end);
        commit(root, "t", Map.of(0, end));
        age(dir);
        SeglogSourceOffset first;
        SeglogMicroBatchStream s = stream("kafka.isolation.level", "read_committed");
        first = (SeglogSourceOffset) s.latestOffset(at(0), ReadLimit.maxRows(20));
        assertEquals(at(20).json(), first.json());

        SeglogSourceOffset[] got = new SeglogSourceOffset[1];
        Cost second = Cost.of(() -> got[0] = (SeglogSourceOffset) s.latestOffset(first, ReadLimit.maxRows(20)));
        assertEquals(at(40).json(), got[0].json());

        append(lastLog(dir, end, 20), List.of(txnBatch(end, 4, 7), marker(end + 4, 7, true)));
        commit(root, "t", Map.of(0, end + 5));
        Cost third = Cost.of(() -> got[0] = (SeglogSourceOffset) s.latestOffset(at(40), ReadLimit.allAvailable()));
        assertEquals(at(end + 5).json(), got[0].json());
        assertEquals(0, second.listings + third.listings);
        return new long[] {second.batches, third.batches};
    }

    @Test
    void readCommittedReadsWhatWasAppendedNotTheBacklogAgain() {
        Path start = root;
        long[] small = readCommittedTriggers(30);
        root = start.resolve("long");
        long[] large = readCommittedTriggers(300);
        assertEquals(0, small[0], "the second trigger read the decided backlog again");
        assertEquals(0, large[0], "the second trigger read the decided backlog again");
        assertEquals(small[1], large[1], "batch headers read for one new transaction at 30 and 300 segments");
        // The test segments have no offset index entries: the scan and the marker walk each start at the last
        // segment's first batch (its 4 and the 2 new ones), whatever came before it.
        assertTrue(large[1] <= 12, large[1] + " batch headers read for one new transaction");
    }

    @Test
    void anOpenTransactionStillCapsLaterTriggersUntilItsMarker() {
        Path dir = partitionDir(root, "t", 0);
        Path log = segment(dir, 0, List.of(batch(0, 10), txnBatch(10, 5, 7), batch(15, 5)));
        commit(root, "t", Map.of(0, 20L));
        age(dir);
        SeglogMicroBatchStream s = stream("kafka.isolation.level", "read_committed");
        assertEquals(at(10).json(), ((SeglogSourceOffset) s.latestOffset(at(0), ReadLimit.allAvailable())).json());
        append(log, List.of(batch(20, 5)));
        commit(root, "t", Map.of(0, 25L));
        assertEquals(at(10).json(), ((SeglogSourceOffset) s.latestOffset(at(10), ReadLimit.allAvailable())).json());
        append(log, List.of(marker(25, 7, false)));
        commit(root, "t", Map.of(0, 26L));
        assertEquals(at(26).json(), ((SeglogSourceOffset) s.latestOffset(at(10), ReadLimit.allAvailable())).json());
    }

    @Test
    void aSegmentRolledInTheSameClockTickAsAListingIsSeen() {
        Path dir = partitionDir(root, "t", 0);
        segment(dir, 0, batches(0, 100, 10));
        commit(root, "t", Map.of(0, 100L));
        FileTime listed = mtime(dir);      // just now: a change may still come with this same mtime
        SeglogMicroBatchStream s = stream("kafka.isolation.level", "read_committed");
        assertEquals(at(100).json(), ((SeglogSourceOffset) s.latestOffset(at(0), ReadLimit.allAvailable())).json());

        // A roll whose new segment holds an open transaction, landing in the listing's clock tick.
        List<ByteBuffer> rolled = new ArrayList<>(List.of(txnBatch(100, 10, 7)));
        rolled.addAll(batches(110, 120, 10));
        segment(dir, 100, rolled);
        commit(root, "t", Map.of(0, 120L));
        setMtime(dir, listed);
        assertEquals(at(100).json(), ((SeglogSourceOffset) s.latestOffset(at(100), ReadLimit.allAvailable())).json(),
            "the open transaction at 100, in a segment the kept listing lacked, was read past");
    }

    @Test
    void aSegmentAddedUnderAKeptListingThatTheMtimeMissedIsSeenByReadCommitted() {
        Path dir = partitionDir(root, "t", 0);
        segment(dir, 0, batches(0, 100, 10));
        commit(root, "t", Map.of(0, 100L));
        FileTime old = age(dir);
        SeglogMicroBatchStream s = stream("kafka.isolation.level", "read_committed");
        assertEquals(at(100).json(), ((SeglogSourceOffset) s.latestOffset(at(0), ReadLimit.allAvailable())).json());

        // A roll whose new segment holds an open transaction; the folder's mtime shows nothing (a clock set
        // back, a shared volume's stale attributes): the kept listing lacks the segment.
        List<ByteBuffer> rolled = new ArrayList<>(List.of(txnBatch(100, 10, 7)));
        rolled.addAll(batches(110, 120, 10));
        segment(dir, 100, rolled);
        commit(root, "t", Map.of(0, 120L));
        setMtime(dir, old);
        assertEquals(at(100).json(), ((SeglogSourceOffset) s.latestOffset(at(100), ReadLimit.allAvailable())).json(),
            "the open transaction at 100, in a segment the kept listing lacked, was read past");
    }

    private static List<long[]> ranges(InputPartition[] parts) {
        List<long[]> out = new ArrayList<>();
        for (InputPartition p : parts) {
            for (Slice sl : ((SeglogInputPartition) p).slices) out.add(new long[] {sl.start, sl.end});
        }
        return out;
    }

    @Test
    void aMergeSwapUnderAKeptListingMakesTheTriggerListAgain() {
        Path dir = partitionDir(root, "t", 0);
        segment(dir, 0, batches(0, 100, 10));
        segment(dir, 100, batches(100, 200, 10));
        segment(dir, 200, batches(200, 300, 10));
        commit(root, "t", Map.of(0, 300L));
        FileTime old = age(dir);
        SeglogMicroBatchStream s = stream();
        SeglogSourceOffset latest = (SeglogSourceOffset) s.latestOffset(at(0), ReadLimit.allAvailable());
        s.planInputPartitions(at(0), latest);

        // The merge of 100 and 200 into 100; the folder's mtime put back, as a change the mtime missed.
        delete(dir, 100);
        delete(dir, 200);
        segment(dir, 100, batches(100, 300, 10));
        setMtime(dir, old);
        long before = PartitionLog.listings();
        List<long[]> got = ranges(s.planInputPartitions(at(50), at(300)));
        assertEquals(1, got.size());
        assertEquals(50, got.get(0)[0]);
        assertEquals(300, got.get(0)[1]);
        assertTrue(PartitionLog.listings() > before, "planning read a merged-away segment's kept listing");
    }

    @Test
    void retentionBetweenTriggersIsDataLoss() {
        Path dir = partitionDir(root, "t", 0);
        segment(dir, 0, batches(0, 100, 10));
        segment(dir, 100, batches(100, 200, 10));
        commit(root, "t", Map.of(0, 200L));
        age(dir);
        SeglogMicroBatchStream s = stream();
        SeglogSourceOffset latest = (SeglogSourceOffset) s.latestOffset(at(50), ReadLimit.allAvailable());
        assertEquals(at(200).json(), latest.json());

        logStart(root, Map.of("t-0", 100L));
        delete(dir, 0);
        DataLossException e = assertThrows(DataLossException.class, () -> s.planInputPartitions(at(50), latest));
        assertTrue(e.getMessage().contains("offsets 50 to 99"), e.getMessage());
    }
}
