package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.TestLogs;

/**
 * The driver's commit lists each folder once (issue 41), and what it decides from one listing is what a second
 * listing decided before: the roll back refuses a folder by an unrecovered trace's name whatever else the listing
 * holds, the gap rule read once for a commit answers as one read per partition, and the commit log is pruned by the
 * listing that named the state the commit followed, to the files a new listing would prune.
 */
class CommitPathListingsTest {
    private static final int INDEX_BYTES = 10 * 1024 * 1024;

    @TempDir
    Path tmp;

    private static Map<String, byte[]> files(Path dir) throws IOException {
        Map<String, byte[]> out = new TreeMap<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.toList()) out.put(p.getFileName().toString(), Files.readAllBytes(p));
        }
        return out;
    }

    private static void assertSameFiles(Map<String, byte[]> before, Map<String, byte[]> after) {
        assertEquals(before.keySet(), after.keySet());
        for (String name : before.keySet()) assertTrue(java.util.Arrays.equals(before.get(name), after.get(name)), name);
    }

    @Test
    void aRollBackWithNothingToCutListsItsFolderOnce() {
        Path root = tmp.resolve("root");
        TestLogs.indexedSegments(TestLogs.partitionDir(root, "t", 0), 300, 100, 10);
        long before = PartitionLog.listings();
        CommittedEndRollBack.Result r = CommittedEndRollBack.rollBack(root, "t", 0, 300, INDEX_BYTES);
        assertEquals(1, PartitionLog.listings() - before);
        assertEquals(new CommittedEndRollBack.Result(false, 300), r);
        assertEquals(300, r.opened().logEnd);
        assertEquals(List.of(0L, 100L, 200L), java.util.Arrays.stream(r.opened().bases).boxed().toList());
    }

    @Test
    void anUnrecoveredTraceIsRefusedWhateverElseTheListingHolds() throws IOException {
        for (String trace : new String[] {"00000000000000000100.log.swap", "00000000000000000100.index.swap"}) {
            for (boolean badName : new boolean[] {false, true}) {
                Path root = tmp.resolve("r-" + trace + "-" + badName);
                Path dir = TestLogs.partitionDir(root, "t", 0);
                TestLogs.indexedSegments(dir, 300, 100, 10);
                Files.createFile(dir.resolve(trace));
                // a name past int64 is refused by its own error when nothing else refuses the folder
                if (badName) Files.createFile(dir.resolve("99999999999999999999.log"));
                Map<String, byte[]> before = files(dir);
                RecoveryNeededException e = assertThrows(RecoveryNeededException.class,
                        () -> CommittedEndRollBack.rollBack(root, "t", 0, 150, INDEX_BYTES));
                assertTrue(e.getMessage().contains(trace), e.getMessage());
                assertSameFiles(before, files(dir));
            }
        }
        Path root = tmp.resolve("bad-only");
        Path dir = TestLogs.partitionDir(root, "t", 0);
        TestLogs.indexedSegments(dir, 300, 100, 10);
        Files.createFile(dir.resolve("99999999999999999999.log"));
        SegmentNameException e = assertThrows(SegmentNameException.class,
                () -> CommittedEndRollBack.rollBack(root, "t", 0, 150, INDEX_BYTES));
        assertTrue(e.getMessage().contains("99999999999999999999.log"), e.getMessage());
    }

    @Test
    void anIntentTheCoreMustFinishIsRefusedWhateverElseTheListingHolds() throws IOException {
        Path root = tmp.resolve("intent");
        Path dir = TestLogs.partitionDir(root, "t", 0);
        TestLogs.indexedSegments(dir, 300, 100, 10);
        // a rewritten straddling batch: the core's recovery, never this class's
        Files.writeString(dir.resolve(CommittedEndRollBack.INTENT),
                "{\"offset\": 150, \"segment\": 100, \"position\": 0, \"batch\": \"abcd\"}");
        Files.createFile(dir.resolve("99999999999999999999.log"));
        Map<String, byte[]> before = files(dir);
        RecoveryNeededException e = assertThrows(RecoveryNeededException.class,
                () -> CommittedEndRollBack.rollBack(root, "t", 0, 150, INDEX_BYTES));
        assertTrue(e.getMessage().contains(CommittedEndRollBack.INTENT), e.getMessage());
        assertSameFiles(before, files(dir));
    }

    @Test
    void theGapRuleReadOnceAnswersAsOneReadPerPartition() throws IOException {
        Path root = tmp.resolve("gaps");
        Files.createDirectories(root);
        Files.writeString(root.resolve(OffsetGaps.CLEANER_CHECKPOINT), "0\n1\nc 1 7\n");
        Path topics = root.resolve("_seglog").resolve("topics");
        Files.createDirectories(topics);
        Files.writeString(topics.resolve("k.json"), "{\"config\": {\"cleanup.policy\": \"compact\"}}");
        Files.writeString(topics.resolve("c.json"), "{\"config\": {}}");
        OffsetGaps once = OffsetGaps.at(root);
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failed = java.util.Collections.synchronizedList(new ArrayList<>());
        for (String topic : new String[] {"k", "c", "none"}) {
            for (int p = 0; p < 4; p++) {
                int partition = p;
                Thread t = new Thread(() -> {
                    try {
                        assertEquals(OffsetGaps.at(root).mayHaveGaps(topic, partition), once.mayHaveGaps(topic, partition),
                                topic + "-" + partition);
                    } catch (Throwable e) {
                        failed.add(e);
                    }
                });
                threads.add(t);
                t.start();
            }
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
        assertEquals(List.of(), failed);
        assertTrue(once.mayHaveGaps("k", 3));
        assertTrue(once.mayHaveGaps("c", 1));
        assertTrue(!once.mayHaveGaps("c", 0) && !once.mayHaveGaps("none", 1));
        // a roll back handed the rule read once cuts as one that reads it
        for (boolean shared : new boolean[] {false, true}) {
            Path r = tmp.resolve("cut-" + shared);
            TestLogs.indexedSegments(TestLogs.partitionDir(r, "t", 0), 300, 100, 10);
            CommittedEndRollBack.Result got = shared
                    ? CommittedEndRollBack.rollBack(r, "t", 0, 150, INDEX_BYTES, OffsetGaps.at(r))
                    : CommittedEndRollBack.rollBack(r, "t", 0, 150, INDEX_BYTES);
            assertEquals(new CommittedEndRollBack.Result(true, 150), got);
        }
        assertSameFiles(files(TestLogs.partitionDir(tmp.resolve("cut-false"), "t", 0)),
                files(TestLogs.partitionDir(tmp.resolve("cut-true"), "t", 0)));
    }

    @Test
    void aCommitPrunesByItsListingToWhatANewListingWouldPrune() throws IOException {
        Path root = tmp.resolve("commits");
        // a log that was not pruned for a while (a committer killed between its link and its prune): 0..9
        for (int i = 0; i < 10; i++) TestLogs.commit(root, "t", Map.of(0, (long) i));
        Path dir = CommitLogReader.dir(root, "t");
        CommitLogWriter writer = new CommitLogWriter(root, "t", 3);
        for (long end = 10; end < 15; end++) {
            CommitState s = writer.commit("w", end, Map.of(0, end), false);
            TreeSet<Long> left = CommitLogReader.seqs(dir);
            assertEquals(s.seq(), left.last());
            // the newest and the two below it: retain 3
            assertEquals(new TreeSet<>(List.of(s.seq() - 2, s.seq() - 1, s.seq())), left);
            assertEquals(Map.of(0, end), CommitLogReader.committedEnds(root, "t"));
        }
    }
}
