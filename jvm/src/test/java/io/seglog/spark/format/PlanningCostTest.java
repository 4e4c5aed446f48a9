package io.seglog.spark.format;

import static io.seglog.spark.TestLogs.indexedSegments;
import static io.seglog.spark.TestLogs.partitionDir;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A read's planning touches the segments its range covers, not the history before them (issue 24): the
 * byte estimate and the task cuts of the last offsets of a 300-segment partition open two segments, and
 * the estimate is the files' bytes where the offset index has an entry (every batch start here) and
 * additive everywhere.
 */
class PlanningCostTest {
    @TempDir
    Path root;

    private static final int SEGMENTS = 300;
    private static final int PER_SEGMENT = 20;

    private void history() {
        indexedSegments(partitionDir(root, "t", 0), SEGMENTS * PER_SEGMENT, PER_SEGMENT, 5);
    }

    @Test
    void theLastOffsetsOfALongHistoryArePlannedFromTheirOwnSegments() {
        history();
        long end = SEGMENTS * PER_SEGMENT;
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 0)) {
            long before = Segment.opens();
            long bytes = log.byteSize(end - 30, end);
            long cut = log.splitOffset(end - 30, end, bytes / 2);
            long opened = Segment.opens() - before;
            assertTrue(end - 30 < cut && cut < end, "cut " + cut);
            assertTrue(opened <= 2, opened + " segments opened for the last 30 offsets");
        }
    }

    @Test
    void theEstimateIsTheFilesBytesAtIndexedOffsetsAndAdditive() throws IOException {
        history();
        long end = SEGMENTS * PER_SEGMENT;
        long files = 0;
        try (var list = Files.list(partitionDir(root, "t", 0))) {
            for (Path p : (Iterable<Path>) list::iterator) if (p.toString().endsWith(".log")) files += Files.size(p);
        }
        Random random = new Random(7);
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 0)) {
            assertEquals(files, log.byteSize(0, end));
            for (int n = 0; n < 200; n++) {
                long a = random.nextInt((int) end), b = a + random.nextInt((int) (end - a) + 1);
                long c = b + random.nextInt((int) (end - b) + 1);
                assertEquals(log.byteSize(a, c), log.byteSize(a, b) + log.byteSize(b, c), a + " " + b + " " + c);
            }
            // Segments 100 to 106 hold records of one size (4-digit offsets): each the bytes from its base to the next.
            long one = log.byteSize(PER_SEGMENT * 100, PER_SEGMENT * 101);
            assertEquals(one * 7, log.byteSize(PER_SEGMENT * 100, PER_SEGMENT * 107));
        }
    }
}
