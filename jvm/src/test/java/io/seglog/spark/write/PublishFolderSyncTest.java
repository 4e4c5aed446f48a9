package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import io.seglog.spark.format.AppendRules;
import io.seglog.spark.format.CommittedEndRollBack;
import io.seglog.spark.format.StagedPublisher;
import io.seglog.spark.format.StagedSegment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A publish fsyncs the partition folder exactly when its entries changed (StagedPublisher's entriesChanged): a new
 *  segment, a roll, a rename, or an empty last segment a killed publish may have left unsynced; never for a steady
 *  micro-batch that only appends to the active segment (issue 41). tests/system/test_micro_batch_calls.py and
 *  test_roll_durable.py read the same from the fsync calls themselves. */
class PublishFolderSyncTest {
    private static final long NOW = 1_700_000_000_000L;
    private static final int INDEX_BYTES = 4096;
    private static final long RENAME_MIN = StagedPublisher.RENAME_MIN_BYTES;

    @TempDir
    Path tmp;

    /** 200 records of about 250 bytes each, staged in memory as a format("seglog") task stages them. */
    private static List<StagedSegment> staged(Path run, int segmentBytes) throws IOException {
        return staged(run, segmentBytes, RENAME_MIN);
    }

    /** {@code renameMin}: the write's renameMinBytes (a segment this large is staged in files, to be renamed in). */
    private static List<StagedSegment> staged(Path run, int segmentBytes, long renameMin) throws IOException {
        StageConfig cfg = new StageConfig(segmentBytes, INDEX_BYTES, 4096, Long.MAX_VALUE, 1 << 20, 16 << 10,
                false, Long.MAX_VALUE, Long.MAX_VALUE, 0);
        List<StagedSegment> out = new ArrayList<>();
        try (BackgroundSync sync = new BackgroundSync()) {
            SegmentStager s = new SegmentStager(new TaskFolder(Files.createDirectories(run).resolve("t0-1")), "s0", cfg, NOW, sync, renameMin,
                    new BatchRowsBudget(), new InlineSegmentBudget(1));
            BytesView value = new BytesView();
            for (int i = 0; i < 200; i++) {
                byte[] v = ("value-" + i + "-" + "x".repeat(240)).getBytes(StandardCharsets.US_ASCII);
                s.add(NOW + i, ("key-" + i).getBytes(StandardCharsets.US_ASCII), value.at(v), null, null);
            }
            s.finish();
            sync.finish();
            for (SegmentStager.Staged g : s.segments()) {
                out.add(g.reported());
            }
        }
        return out;
    }

    private static AppendRules rules(int segmentBytes) {
        return new AppendRules(segmentBytes, Long.MAX_VALUE, INDEX_BYTES, 4096, 0);
    }

    /** Rolled back to {@code committed} (nothing to cut), then published from the folder as the roll back read it. */
    private StagedPublisher.Result next(Path root, long committed, int segmentBytes, long renameMin) throws IOException {
        CommittedEndRollBack.Result rolled = CommittedEndRollBack.rollBack(root, "t", 0, committed, INDEX_BYTES);
        assertFalse(rolled.cut());
        assertNotNull(rolled.opened());
        return StagedPublisher.publish(root, "t", 0, staged(tmp.resolve("run-" + committed), segmentBytes, renameMin),
                rules(segmentBytes), renameMin, rolled.opened());
    }

    @Test
    void aSteadyMicroBatchLeavesTheFolderUnsynced() throws IOException {
        Path root = tmp.resolve("steady");
        int big = 1 << 30;
        StagedPublisher.Result first = StagedPublisher.publish(root, "t", 0, staged(tmp.resolve("run"), big), rules(big), RENAME_MIN);
        assertTrue(first.folderSynced(), "the first publish made the active segment");
        StagedPublisher.Result second = next(root, first.end(), big, RENAME_MIN);
        assertEquals(400, second.end());
        assertFalse(second.folderSynced(), "a copy onto the active segment changed no entry");
        // a rename changes the entries (the staged segment renamed in, the active one sealed)
        assertTrue(next(root, second.end(), big, 0).folderSynced());
    }

    @Test
    void aCopyThatRollsSyncsTheFolder() throws IOException {
        Path root = tmp.resolve("rolls");
        int small = 32 << 10;   // 200 records make about 50 KiB: each publish rolls
        StagedPublisher.Result first = StagedPublisher.publish(root, "t", 0, staged(tmp.resolve("run"), small), rules(small), RENAME_MIN);
        StagedPublisher.Result second = next(root, first.end(), small, RENAME_MIN);
        assertTrue(second.folderSynced(), "the roll's new segment's entry was never made durable");
    }

    @Test
    void anEmptyLastSegmentLeftByAKilledPublishSyncsTheFolder() throws IOException {
        Path root = tmp.resolve("killed");
        int big = 1 << 30;
        StagedPublisher.Result first = StagedPublisher.publish(root, "t", 0, staged(tmp.resolve("run"), big), rules(big), RENAME_MIN);
        // a publish killed just after its roll made the next segment, before its folder's fsync: nothing past the
        // committed end, so the roll back leaves it, and the next publish appends to it
        Path dir = root.resolve("t-0");
        for (String suffix : new String[] {".index", ".timeindex", ".log"}) {
            Files.createFile(dir.resolve(String.format("%020d%s", first.end(), suffix)));
        }
        StagedPublisher.Result second = next(root, first.end(), big, RENAME_MIN);
        assertEquals(400, second.end());
        assertTrue(second.folderSynced(), "the records went into a segment whose entry may not be durable");
    }
}
