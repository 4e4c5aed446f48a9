package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.append;
import static io.seglog.spark.TestLogs.batch;
import static io.seglog.spark.TestLogs.file;
import static io.seglog.spark.TestLogs.marker;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static io.seglog.spark.TestLogs.txnBatch;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.seglog.spark.format.PartitionLog;

/**
 * A stream's incremental last stable offset ({@link TransactionFates#lastStableOffset}, kept across
 * triggers) against a brute-force model over the same real log: random plain batches, transactions of
 * three producers, commit and abort markers, rolls, a reader position that moves up to the last stable
 * offset between triggers. At every trigger both agree.
 */
class LastStableOffsetModelTest {
    @TempDir
    Path root;

    /** One batch as the model sees it: offsets [base, base + count), producer (-1: not transactional), marker. */
    private record Written(long base, int count, long pid, boolean isMarker) {}

    /** The first offset of a transaction with no marker below {@code end}, from {@code from} on; else end. */
    private static long modelLso(List<Written> log, long from, long end) {
        for (int i = 0; i < log.size(); i++) {
            Written b = log.get(i);
            if (b.base >= end) break;
            if (b.pid < 0 || b.isMarker || b.base + b.count - 1 < from) continue;
            boolean decided = false;
            for (int j = i + 1; j < log.size() && log.get(j).base < end; j++) {
                if (log.get(j).isMarker && log.get(j).pid == b.pid) {
                    decided = true;
                    break;
                }
            }
            if (!decided) return Math.max(from, b.base);
        }
        return end;
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void incrementalAgreesWithTheModel(long seed) {
        Random rnd = new Random(seed);
        Path dir = partitionDir(root, "t", 0);
        List<Written> model = new ArrayList<>();
        Map<Long, Boolean> open = new HashMap<>();
        long end = 0;
        long segmentBase = 0;
        segment(dir, 0, List.of());
        int inSegment = 0;
        long from = 0;
        TransactionFates kept = new TransactionFates();
        for (int trigger = 0; trigger < 60; trigger++) {
            int appended = rnd.nextInt(4);
            for (int k = 0; k < appended; k++) {
                if (inSegment >= 5) {      // a roll
                    segmentBase = end;
                    segment(dir, segmentBase, List.of());
                    inSegment = 0;
                }
                long pid = rnd.nextInt(3);
                int kind = rnd.nextInt(3);
                ByteBuffer b;
                if (kind == 0) {
                    int n = 1 + rnd.nextInt(4);
                    b = batch(end, n);
                    model.add(new Written(end, n, -1, false));
                    end += n;
                } else if (kind == 1 || !open.containsKey(pid)) {
                    int n = 1 + rnd.nextInt(4);
                    b = txnBatch(end, n, pid);
                    open.put(pid, true);
                    model.add(new Written(end, n, pid, false));
                    end += n;
                } else {
                    b = marker(end, pid, rnd.nextBoolean());
                    open.remove(pid);
                    model.add(new Written(end, 1, pid, true));
                    end += 1;
                }
                append(file(dir, segmentBase, ".log"), List.of(b));
                inSegment++;
            }
            long want = modelLso(model, from, end);
            long got;
            try (PartitionLog log = PartitionLog.open(root, "t", 0, 0)) {
                got = kept.lastStableOffset(log, from, end);
            }
            assertEquals(want, got, "seed " + seed + ", trigger " + trigger + ", from " + from + ", end " + end);
            if (want > from) from += rnd.nextInt((int) (want - from) + 1);   // the stream reads on, at most to the LSO
        }
    }
}
