package io.seglog.spark.format;

import static io.seglog.spark.TestLogs.commit;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A commit log followed from the seq seen last ({@link CommitLogReader.Tail}) reads what a full listing reads:
 * after new commits, after a run of commits longer than its probes, after the seq it saw was pruned, and
 * before the first commit.
 */
class CommitLogTailTest {
    @TempDir
    Path root;

    private void prune(long below) throws IOException {
        for (long seq = 0; seq < below; seq++) {
            Files.deleteIfExists(CommitLogReader.dir(root, "t").resolve(String.format("%020d.json", seq)));
        }
    }

    @Test
    void theTailReadsWhatAListingReads() throws IOException {
        CommitLogReader.Tail tail = new CommitLogReader.Tail(root, "t");
        assertEquals(Map.of(), tail.committedEnds());
        long end = 0;
        for (int round = 0; round < 7; round++) {
            int commits = new int[] {1, 0, 3, 40, 2, 1, 5}[round];
            for (int c = 0; c < commits; c++) commit(root, "t", Map.of(0, end += 10, 1, end / 2));
            if (round == 4) prune(44);       // the seq seen last (43) and everything before it pruned
            if (round == 6) prune(50);       // the seq seen last (46) and the next ones (47 to 49) pruned
            assertEquals(CommitLogReader.committedEnds(root, "t"), tail.committedEnds(), "round " + round);
            assertEquals(end, tail.committedEnds().get(0), "round " + round);
        }
    }
}
