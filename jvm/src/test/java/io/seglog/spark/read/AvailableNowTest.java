package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.append;
import static io.seglog.spark.TestLogs.batches;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static io.seglog.spark.TestLogs.T0;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Item 9 of issue 23: Spark calls prepareForTriggerAvailableNow before initialOffset. A commit in between
 * must not leave the AvailableNow end below a start resolved after it (startingOffsets=latest, or a
 * timestamp): the end is taken at the first latestOffset, as Spark's KafkaMicroBatchStream takes
 * allDataForTriggerAvailableNow.
 */
class AvailableNowTest {
    @TempDir
    Path root;

    @ParameterizedTest
    @ValueSource(strings = {"latest", "timestamp"})
    void theEndIsTakenAtTheFirstLatestOffset(String start, @TempDir Path cp) {
        Path log = segment(partitionDir(root, "t", 0), 0, batches(0, 100, 10));
        commit(root, "t", Map.of(0, 100L));
        Map<String, String> o = new HashMap<>(Map.of("path", root.toString(), "topic", "t", "failOnDataLoss", "true"));
        if (start.equals("latest")) o.put("startingOffsets", "latest");
        else o.put("startingTimestamp", String.valueOf(T0 + 120));
        SeglogMicroBatchStream stream = new SeglogMicroBatchStream(ReadOptions.parse(o, true), cp.toString(),
            Configuration::new, () -> 2);

        stream.prepareForTriggerAvailableNow();
        append(log, batches(100, 150, 10));          // a commit between the two calls
        commit(root, "t", Map.of(0, 150L));
        SeglogSourceOffset initial = (SeglogSourceOffset) stream.initialOffset();
        long first = start.equals("latest") ? 150 : 120;
        assertEquals("{\"t\":{\"0\":" + first + "}}", initial.json());

        SeglogSourceOffset end = (SeglogSourceOffset) stream.latestOffset(initial, ReadLimit.allAvailable());
        assertEquals("{\"t\":{\"0\":150}}", end.json());
        stream.planInputPartitions(initial, end);     // no spurious data loss: the end is not below the start

        append(log, batches(150, 200, 10));          // after the first latestOffset: not part of this run
        commit(root, "t", Map.of(0, 200L));
        assertEquals("{\"t\":{\"0\":150}}", ((SeglogSourceOffset) stream.latestOffset(end, ReadLimit.allAvailable())).json());
    }
}
