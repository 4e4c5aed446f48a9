package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.indexedSegments;
import static io.seglog.spark.TestLogs.partitionDir;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.Segment;

/**
 * Issue 24: a trigger's driver work (latestOffset, then planning the batch) opens the segments the batch
 * reads and the last one, not every retained segment: the same count with 30 segments of history as with
 * 300. Its cost before grew with the history: the latest offsets sized the whole retained log.
 */
class StreamCostTest {
    @TempDir
    Path root;
    @TempDir
    Path checkpoint;

    private long history(int segments) {
        long end = segments * 20L;
        indexedSegments(partitionDir(root, "t", 0), end, 20, 5);
        commit(root, "t", Map.of(0, end));
        return end;
    }

    /** Segments a trigger opens that reads the last 10 offsets of a partition with this many segments. */
    private long opensOfOneTrigger(int segments) {
        long end = history(segments);
        SeglogMicroBatchStream stream = new SeglogMicroBatchStream(ReadOptions.parse(Map.of("path", root.toString(),
            "topic", "t"), true), checkpoint.resolve(String.valueOf(segments)).toString(), Configuration::new, () -> 2);
        SeglogSourceOffset start = new SeglogSourceOffset(Map.of("t", Map.of(0, end - 10)));
        long before = Segment.opens();
        SeglogSourceOffset latest = (SeglogSourceOffset) stream.latestOffset(start, ReadLimit.allAvailable());
        InputPartition[] tasks = stream.planInputPartitions(start, latest);
        long opened = Segment.opens() - before;
        assertEquals(new SeglogSourceOffset(Map.of("t", Map.of(0, end))).json(), latest.json());
        assertEquals(1, tasks.length);
        return opened;
    }

    @Test
    void aTriggerOpensTheSegmentsItReadsNotTheHistory() {
        long small = opensOfOneTrigger(30);
        root = root.resolve("long");
        long large = opensOfOneTrigger(300);
        assertEquals(small, large, "a trigger opened " + small + " segments with 30 retained and " + large + " with 300");
        assertTrue(large <= 4, large + " segments opened for the last 10 offsets");
    }
}
