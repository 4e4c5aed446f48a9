package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import io.seglog.spark.format.AppendRules;
import io.seglog.spark.format.StagedPublisher;
import io.seglog.spark.format.StagedSegment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A task's small staged segments held in memory and sent whole with its report (InlineSegmentBudget): no staging
 *  folder or file, and the driver's copy publishes from them the folder it publishes from the files; a segment that
 *  reaches renameMinBytes, or its task's budget, goes to its files as before. */
class InlineSegmentBudgetTest {
    private static final long NOW = 1_700_000_000_000L;
    // 256 KiB segments of 16 KiB batches: several segments, several batches each
    private static final StageConfig CFG = new StageConfig(256 << 10, 4096, 4096, Long.MAX_VALUE, 1 << 20, 16 << 10,
            false, Long.MAX_VALUE, Long.MAX_VALUE, 0);
    private static final AppendRules RULES = new AppendRules(256 << 10, Long.MAX_VALUE, 4096, 4096, 0);
    private static final long RENAME_MIN = StagedPublisher.RENAME_MIN_BYTES;

    @TempDir
    Path tmp;

    private List<SegmentStager.Staged> stage(String run, long renameMin, InlineSegmentBudget inline) throws IOException {
        Path runDir = Files.createDirectories(tmp.resolve(run));
        try (BackgroundSync sync = new BackgroundSync()) {
            SegmentStager s = new SegmentStager(new TaskFolder(runDir.resolve("t0-1")), "s0", CFG, NOW, sync, renameMin,
                    new BatchRowsBudget(), inline);
            BytesView value = new BytesView();
            for (int i = 0; i < 3000; i++) {
                byte[] v = ("value-" + i + "-" + "x".repeat(200)).getBytes(StandardCharsets.US_ASCII);
                s.add(NOW + i, ("key-" + i).getBytes(StandardCharsets.US_ASCII), value.at(v), null, null);
            }
            s.finish();
            sync.finish();
            return s.segments();
        }
    }

    private static List<StagedSegment> reported(List<SegmentStager.Staged> staged) {
        List<StagedSegment> out = new ArrayList<>();
        for (SegmentStager.Staged g : staged) {
            out.add(g.reported());
        }
        return out;
    }

    private static Map<String, byte[]> files(Path dir) throws IOException {
        Map<String, byte[]> out = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) walk.filter(Files::isRegularFile)::iterator) {
                out.put(dir.relativize(p).toString(), Files.readAllBytes(p));
            }
        }
        return out;
    }

    private void assertSameFolder(List<SegmentStager.Staged> a, List<SegmentStager.Staged> b, String how) throws IOException {
        Path rootA = tmp.resolve(how + "-rootA");
        Path rootB = tmp.resolve(how + "-rootB");
        StagedPublisher.Result ra = StagedPublisher.publish(rootA, "t", 0, reported(a), RULES, RENAME_MIN);
        StagedPublisher.Result rb = StagedPublisher.publish(rootB, "t", 0, reported(b), RULES, RENAME_MIN);
        assertEquals(3000, ra.end());
        assertEquals(rb, ra);
        Map<String, byte[]> fa = files(rootA);
        Map<String, byte[]> fb = files(rootB);
        assertEquals(fb.keySet(), fa.keySet(), how);
        for (String name : fa.keySet()) assertArrayEquals(fb.get(name), fa.get(name), how + ": " + name);
    }

    @Test
    void smallSegmentsInTheReportPublishTheFolderTheFilesPublish() throws IOException {
        List<SegmentStager.Staged> inline = stage("inline", RENAME_MIN, new InlineSegmentBudget(1));
        List<SegmentStager.Staged> filed = stage("filed", RENAME_MIN, null);
        assertTrue(inline.size() > 1 && inline.get(0).batches > 1, "several segments of several batches");
        assertEquals(inline.size(), filed.size());
        assertFalse(Files.exists(tmp.resolve("inline").resolve("t0-1")), "the task's staging folder was made");
        for (int i = 0; i < inline.size(); i++) {
            SegmentStager.Staged g = inline.get(i);
            assertNotNull(g.data);
            assertNotNull(g.batchRows);
            assertFalse(g.durable);
            assertArrayEquals(Files.readAllBytes(Path.of(filed.get(i).stem + ".log")), g.data, "segment " + i);
        }
        assertSameFolder(inline, filed, "copy");
    }

    @Test
    void aSegmentReachingRenameMinBytesOrTheBudgetGoesToItsFiles() throws IOException {
        // renameMinBytes below a segment: each is renamed in, so a file, forced by the task, its bytes so far first
        for (SegmentStager.Staged g : stage("large", 64 << 10, new InlineSegmentBudget(1))) {
            assertNull(g.data);
            assertEquals(g.size, Files.size(Path.of(g.stem + ".log")));
            assertTrue(Files.exists(Path.of(g.stem + ".index")));
        }
        // a task's share of about 300 KiB: the first segment (256 KiB) in memory, the second past it to its files
        InlineSegmentBudget small = new InlineSegmentBudget((int) (InlineSegmentBudget.WRITE_MAX / (300 << 10)));
        List<SegmentStager.Staged> mixed = stage("spilled", RENAME_MIN, small);
        List<SegmentStager.Staged> filed = stage("filed", RENAME_MIN, null);
        assertNotNull(mixed.get(0).data);
        assertNull(mixed.get(1).data, "the second segment stayed in memory past its task's budget");
        assertArrayEquals(Files.readAllBytes(Path.of(filed.get(1).stem + ".log")), Files.readAllBytes(Path.of(mixed.get(1).stem + ".log")));
        assertFalse(Files.exists(Path.of(mixed.get(0).stem + ".log")));
        assertSameFolder(mixed, filed, "mixed");
    }

    @Test
    void theBudgetBoundsWhatAWriteCarries() {
        assertEquals(InlineSegmentBudget.TASK_MAX, share(new InlineSegmentBudget(1)));
        long share = share(new InlineSegmentBudget(10_000));
        assertTrue(share * 10_000L <= InlineSegmentBudget.WRITE_MAX, "10,000 tasks' shares: " + share + " bytes each");
        InlineSegmentBudget b = new InlineSegmentBudget(1);
        assertTrue(b.take(InlineSegmentBudget.TASK_MAX));
        assertFalse(b.take(1));
        b.giveBack(100);
        assertTrue(b.take(100));
    }

    private static long share(InlineSegmentBudget b) {
        long n = 0;
        while (b.take(1024)) n += 1024;
        return n;
    }
}
