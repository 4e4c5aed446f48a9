package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.TestLogs;

/**
 * The JVM write's roll back keeps the core's rule (docs/tiered-storage.md §4): a committed end below the
 * partition's remote end is refused by name, before anything changes; at or above it the cut goes on.
 */
class CommittedEndRollBackTieredTest {
    private static final int INDEX_BYTES = 10 * 1024 * 1024;

    @TempDir
    Path tmp;

    /** Segments 0, 100, 200 (batches of 10), 0 and 100 recorded 'copied': the remote end is 200. */
    private Path tiered() throws IOException {
        Path root = tmp.resolve("root");
        TestLogs.indexedSegments(TestLogs.partitionDir(root, "t", 0), 300, 100, 10);
        StringBuilder meta = new StringBuilder();
        for (long base : new long[] {0, 100}) {
            String facts = "{\"sha256\":\"00\",\"size\":1}";
            meta.append(TieredPartitionLogTest.line("{\"at\":1,\"base\":" + base + ",\"files\":{\"index\":" + facts
                + ",\"log\":" + facts + ",\"timeindex\":" + facts + "},\"last\":" + (base + 99) + ",\"max_ts\":1,\"next\":"
                + (base + 100) + ",\"op\":\"copied\"}"));
        }
        TieredPartitionLogTest.writeMeta(root, meta.toString());
        return root;
    }

    private static Map<String, byte[]> files(Path dir) throws IOException {
        Map<String, byte[]> out = new TreeMap<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.toList()) out.put(p.getFileName().toString(), Files.readAllBytes(p));
        }
        return out;
    }

    @Test
    void aCommittedEndBelowTheRemoteEndIsRefusedAndNothingChanges() throws IOException {
        Path root = tiered();
        Path dir = TestLogs.partitionDir(root, "t", 0);
        assertEquals(200, RemoteSegmentLog.mutableFrom(root, "t", 0));
        Map<String, byte[]> before = files(dir);
        for (long committed : new long[] {150, 100, 0}) {
            TieredOffsetsException e = assertThrows(TieredOffsetsException.class,
                () -> CommittedEndRollBack.rollBack(root, "t", 0, committed, INDEX_BYTES));
            assertTrue(e.getMessage().contains("partition t-0 back to its committed end " + committed + ": offsets up to 199 "
                + "are tiered"), e.getMessage());
            Map<String, byte[]> after = files(dir);
            assertEquals(before.keySet(), after.keySet());
            for (String name : before.keySet()) assertTrue(java.util.Arrays.equals(before.get(name), after.get(name)), name);
        }
        assertFalse(Files.exists(dir.resolve(CommittedEndRollBack.INTENT)));
        // At or above the remote end the roll back cuts as before.
        assertEquals(new CommittedEndRollBack.Result(true, 250), CommittedEndRollBack.rollBack(root, "t", 0, 250, INDEX_BYTES));
        assertEquals(new CommittedEndRollBack.Result(true, 200), CommittedEndRollBack.rollBack(root, "t", 0, 200, INDEX_BYTES));
    }

    @Test
    void nothingTieredMeansNoFloor() throws IOException {
        Path root = tmp.resolve("plain");
        TestLogs.indexedSegments(TestLogs.partitionDir(root, "t", 0), 300, 100, 10);
        assertEquals(0, RemoteSegmentLog.mutableFrom(root, "t", 0));
        assertEquals(new CommittedEndRollBack.Result(true, 150), CommittedEndRollBack.rollBack(root, "t", 0, 150, INDEX_BYTES));
    }
}
