package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.append;
import static io.seglog.spark.TestLogs.batch;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.marker;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static io.seglog.spark.TestLogs.txnBatch;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.PartitionLog;

/**
 * Item 7 of issue 23: read_committed learns a transaction's fate from its marker, walking forward; past
 * the committed end the bytes may be torn (a write in flight, a roll back cutting them): the walk stops
 * at the committed end, and a transaction without a marker below it is open (Kafka: the last stable
 * offset never passes the high watermark).
 */
class ReadCommittedBoundTest {
    @TempDir
    Path root;

    @Test
    void theMarkerWalkStopsAtTheCommittedEnd() {
        Path log = segment(partitionDir(root, "t", 0), 0, List.of(batch(0, 10), txnBatch(10, 5, 7), batch(15, 5)));
        commit(root, "t", Map.of(0, 20L));
        ByteBuffer torn = batch(20, 5);                    // uncommitted, its body torn: the CRC fails
        torn.put(torn.limit() - 3, (byte) (torn.get(torn.limit() - 3) ^ 0x5a));
        append(log, List.of(torn, marker(25, 7, true)));

        ReadOptions opts = ReadOptions.parse(Map.of("path", root.toString(), "topic", "t",
            "kafka.isolation.level", "read_committed"));
        List<Long> got = new ArrayList<>();
        try (RecordCursor cursor = new RecordCursor(opts, new Slice("t", 0, 0, 20))) {
            while (cursor.next()) got.add(cursor.record.offset());
        }
        List<Long> want = new ArrayList<>();
        for (long o = 0; o < 10; o++) want.add(o);
        assertEquals(want, got);                           // stops at the open transaction (offset 10)

        try (PartitionLog p = PartitionLog.open(root, "t", 0, 0)) {
            assertEquals(10, new TransactionFates().lastStableOffset(p, 0, 20));
        }
    }
}
