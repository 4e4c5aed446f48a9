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

/** A task's staged segments' batch rows sent with its report (BatchRowsBudget): no {@code .batches} file, and the
 *  driver publishes from them the folder it publishes from the files; past the budget, the file as before. */
class BatchRowsBudgetTest {
    private static final long NOW = 1_700_000_000_000L;
    // 256 KiB segments of 16 KiB batches: several segments, several batches each
    private static final StageConfig CFG = new StageConfig(256 << 10, 4096, 4096, Long.MAX_VALUE, 1 << 20, 16 << 10,
            false, Long.MAX_VALUE, Long.MAX_VALUE, 0);
    private static final AppendRules RULES = new AppendRules(256 << 10, Long.MAX_VALUE, 4096, 4096, 0);

    @TempDir
    Path tmp;

    private List<SegmentStager.Staged> stage(String run, BatchRowsBudget budget) throws IOException {
        Path runDir = Files.createDirectories(tmp.resolve(run));
        try (BackgroundSync sync = new BackgroundSync()) {
            SegmentStager s = new SegmentStager(runDir.resolve("t0-1"), "s0", CFG, NOW, sync, Long.MAX_VALUE, budget);
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
        for (SegmentStager.Staged g : staged) out.add(g.reported());
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

    @Test
    void rowsInTheReportPublishTheFolderTheFilesPublish() throws IOException {
        List<SegmentStager.Staged> inline = stage("inline", new BatchRowsBudget());
        List<SegmentStager.Staged> filed = stage("filed", null);
        assertTrue(inline.size() > 1 && inline.get(0).batches > 1, "several segments of several batches");
        assertEquals(inline.size(), filed.size());
        for (int i = 0; i < inline.size(); i++) {
            assertNotNull(inline.get(i).batchRows);
            assertFalse(Files.exists(Path.of(inline.get(i).stem + ".batches")), "no .batches file made");
            assertNull(filed.get(i).batchRows);
            assertArrayEquals(Files.readAllBytes(Path.of(filed.get(i).stem + ".batches")), inline.get(i).batchRows);
        }
        // renamed in (every segment) and copied (every segment): the same partition folder either way
        for (long renameMin : new long[] {0L, Long.MAX_VALUE}) {
            String how = renameMin == 0 ? "rename" : "copy";
            List<SegmentStager.Staged> a = stage(how + "-inline", new BatchRowsBudget());
            List<SegmentStager.Staged> b = stage(how + "-filed", null);
            Path rootA = tmp.resolve(how + "-rootA");
            Path rootB = tmp.resolve(how + "-rootB");
            StagedPublisher.Result ra = StagedPublisher.publish(rootA, "t", 0, reported(a), RULES, renameMin);
            StagedPublisher.Result rb = StagedPublisher.publish(rootB, "t", 0, reported(b), RULES, renameMin);
            assertEquals(3000, ra.end());
            assertEquals(rb.end(), ra.end());
            Map<String, byte[]> fa = files(rootA);
            Map<String, byte[]> fb = files(rootB);
            assertEquals(fb.keySet(), fa.keySet(), how);
            for (String name : fa.keySet()) assertArrayEquals(fb.get(name), fa.get(name), how + ": " + name);
        }
    }

    @Test
    void theBudgetBoundsWhatAReportCarries() throws IOException {
        BatchRowsBudget budget = new BatchRowsBudget();
        assertFalse(budget.take(BatchRowsBudget.SEGMENT_MAX + 1), "a segment's rows over SEGMENT_MAX go in its file");
        long taken = 0;
        while (budget.take(BatchRowsBudget.SEGMENT_MAX)) taken += BatchRowsBudget.SEGMENT_MAX;
        assertEquals(BatchRowsBudget.TASK_MAX, taken);
        assertFalse(budget.take(36), "the task's budget is spent");
        // a write of many tasks: their shares add up to WRITE_MAX at most (the driver holds every report)
        assertEquals(BatchRowsBudget.TASK_MAX, BatchRowsBudget.taskMax(4));
        assertEquals(BatchRowsBudget.WRITE_MAX / 1000, BatchRowsBudget.taskMax(1000));
        BatchRowsBudget many = new BatchRowsBudget(100_000);
        long share = 0;
        while (many.take(36)) share += 36;
        assertTrue(share * 100_000L <= BatchRowsBudget.WRITE_MAX, "100,000 tasks' shares: " + share + " bytes each");
        // a stager whose task's budget is spent writes the file, as without one
        for (SegmentStager.Staged g : stage("spent", budget)) {
            assertNull(g.batchRows);
            assertEquals(g.batches * 36L, Files.size(Path.of(g.stem + ".batches")));
        }
    }
}
