package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.T0;
import static io.seglog.spark.TestLogs.batches;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.delete;
import static io.seglog.spark.TestLogs.logStart;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.PartitionLog;

/**
 * Item 8 of issue 23: the stream's driver paths (latestOffset, the initial offsets, the read_committed
 * cap, planInputPartitions) list a partition and open its segments later; a retention pass, a merge or
 * a clean landing in between (PartitionLog's listing hook, deterministic) must make them list again, as
 * batch planning and executor reads do, never fail the query.
 */
class StreamRetryTest {
    @TempDir
    Path root;
    private Path dir;

    @BeforeEach
    void threeSegments() {
        dir = partitionDir(root, "t", 0);
        segment(dir, 0, batches(0, 100, 10));
        segment(dir, 100, batches(100, 200, 10));
        segment(dir, 200, batches(200, 300, 10));
        commit(root, "t", Map.of(0, 300L));
    }

    @AfterEach
    void noHook() {
        PartitionLog.afterListing(null);
    }

    /** Runs {@code action} once, after the {@code nth} listing (1-based). */
    private static void onListing(int nth, Runnable action) {
        AtomicInteger n = new AtomicInteger();
        PartitionLog.afterListing(d -> {
            if (n.incrementAndGet() == nth) action.run();
        });
    }

    private SeglogMicroBatchStream stream(Path cp, String... options) {
        Map<String, String> o = new HashMap<>();
        o.put("path", root.toString());
        o.put("topic", "t");
        for (int i = 0; i < options.length; i += 2) o.put(options[i], options[i + 1]);
        return new SeglogMicroBatchStream(ReadOptions.parse(o, true), cp.toString(), Configuration::new, () -> 2);
    }

    private static SeglogSourceOffset at(long offset) {
        return new SeglogSourceOffset(Map.of("t", Map.of(0, offset)));
    }

    /** A merge of segments 0 and 100 into one segment 0 (docs/spec.md §3.10): old files .deleted, the new in place. */
    private void merge() {
        delete(dir, 0);
        delete(dir, 100);
        segment(dir, 0, batches(0, 200, 10));
    }

    private static List<long[]> ranges(InputPartition[] parts) {
        List<long[]> out = new ArrayList<>();
        for (InputPartition p : parts) {
            for (Slice s : ((SeglogInputPartition) p).slices) out.add(new long[] {s.start, s.end});
        }
        return out;
    }

    @Test
    void latestOffsetListsAgainWhenTheLastSegmentIsRolledAndDeleted(@TempDir Path cp) {
        // The sidecar rolls the idle active segment (a new empty one at 300) and retention deletes the rest.
        onListing(1, () -> {
            segment(dir, 300, List.of());
            logStart(root, Map.of("t-0", 300L));
            delete(dir, 0);
            delete(dir, 100);
            delete(dir, 200);
        });
        SeglogSourceOffset end = (SeglogSourceOffset) stream(cp).latestOffset(at(300), ReadLimit.allAvailable());
        assertEquals(at(300).json(), end.json());
    }

    @Test
    void initialOffsetByTimestampListsAgainWhenRetentionRuns(@TempDir Path cp) {
        onListing(1, () -> {
            logStart(root, Map.of("t-0", 100L));
            delete(dir, 0);
        });
        SeglogSourceOffset initial = (SeglogSourceOffset) stream(cp, "startingTimestamp", String.valueOf(T0 + 50)).initialOffset();
        assertEquals(at(100).json(), initial.json());
    }

    @Test
    void planningListsAgainWhenAMergeSwapsSegments(@TempDir Path cp) {
        onListing(1, this::merge);
        List<long[]> got = ranges(stream(cp).planInputPartitions(at(0), at(300)));
        assertEquals(1, got.size());
        assertEquals(0, got.get(0)[0]);
        assertEquals(300, got.get(0)[1]);
    }

    @Test
    void readCommittedCapListsAgainWhenAMergeSwapsSegments(@TempDir Path cp) {
        onListing(2, this::merge);     // the first listing is latestAvailable's, the second the cap's
        SeglogSourceOffset end = (SeglogSourceOffset) stream(cp, "kafka.isolation.level", "read_committed")
            .latestOffset(at(0), ReadLimit.allAvailable());
        assertEquals(at(300).json(), end.json());
    }
}
