package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.batches;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.delete;
import static io.seglog.spark.TestLogs.logStart;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.hadoop.conf.Configuration;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.DataLossException;

/**
 * Item 11 of issue 23: with failOnDataLoss=false the stream goes on from what is left, and says so:
 * a warning in the driver's log (through Spark's log4j, as Spark's Kafka source's logWarning) and a
 * count in the source's metrics; a partition that vanished from the latest offsets is reported too.
 */
class DataLossReportTest {
    @TempDir
    Path root;
    private final List<String> warnings = new ArrayList<>();
    private AbstractAppender appender;

    @BeforeEach
    void capture() {
        Configurator.setLevel("io.seglog.spark", Level.INFO);
        appender = new AbstractAppender("seglog-capture", null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent event) {
                if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
                    synchronized (warnings) {
                        warnings.add(event.getMessage().getFormattedMessage());
                    }
                }
            }
        };
        appender.start();
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        LoggerConfig config = ctx.getConfiguration().getLoggerConfig("io.seglog.spark");
        config.addAppender(appender, Level.ALL, null);
        ctx.updateLoggers();
    }

    @AfterEach
    void release() {
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        ctx.getConfiguration().getLoggerConfig("io.seglog.spark").removeAppender("seglog-capture");
        ctx.updateLoggers();
        appender.stop();
    }

    /** Segment 0 (offsets 0 to 99) deleted by retention; 100 to 299 left and committed. */
    private void retentionRan() {
        Path dir = partitionDir(root, "t", 0);
        segment(dir, 0, batches(0, 100, 10));
        segment(dir, 100, batches(100, 200, 10));
        segment(dir, 200, batches(200, 300, 10));
        commit(root, "t", Map.of(0, 300L));
        logStart(root, Map.of("t-0", 100L));
        delete(dir, 0);
    }

    private SeglogMicroBatchStream stream(Path cp, boolean failOnDataLoss) {
        Map<String, String> o = new HashMap<>(Map.of("path", root.toString(), "topic", "t",
            "failOnDataLoss", String.valueOf(failOnDataLoss)));
        return new SeglogMicroBatchStream(ReadOptions.parse(o, true), cp.toString(), Configuration::new, () -> 2);
    }

    private static SeglogSourceOffset offsets(Map<Integer, Long> parts) {
        return new SeglogSourceOffset(Map.of("t", parts));
    }

    @Test
    void skippedOffsetsAreLoggedAndCounted(@TempDir Path cp) {
        retentionRan();
        SeglogMicroBatchStream stream = stream(cp, false);
        SeglogSourceOffset start = offsets(Map.of(0, 50L));
        SeglogSourceOffset end = (SeglogSourceOffset) stream.latestOffset(start, ReadLimit.allAvailable());
        assertEquals(offsets(Map.of(0, 300L)).json(), end.json());
        InputPartition[] parts = stream.planInputPartitions(start, end);
        Slice only = ((SeglogInputPartition) parts[0]).slices[0];
        assertEquals(100, only.start);
        assertEquals(300, only.end);
        assertTrue(warnings.stream().anyMatch(w -> w.contains("t-0: offsets 50 to 99 are no longer in the log")
            && w.contains("failOnDataLoss")), warnings.toString());
        Map<String, String> metrics = stream.metrics(Optional.of(end));
        assertEquals("50", metrics.get("dataLossSkippedOffsets"));
    }

    @Test
    void aPartitionGoneFromTheLatestOffsetsIsReported(@TempDir Path cp) {
        retentionRan();
        // The stream knew partition 1 (at offset 20); the topic has no partition 1 any more (no folder, no metadata).
        SeglogSourceOffset start = offsets(Map.of(0, 100L, 1, 20L));
        SeglogMicroBatchStream lenient = stream(cp, false);
        SeglogSourceOffset end = (SeglogSourceOffset) lenient.latestOffset(start, ReadLimit.allAvailable());
        assertEquals(offsets(Map.of(0, 300L)).json(), end.json());
        lenient.planInputPartitions(start, end);
        assertTrue(warnings.stream().anyMatch(w -> w.contains("t-1") && w.contains("gone")), warnings.toString());

        SeglogMicroBatchStream strict = stream(cp, true);
        DataLossException e = assertThrows(DataLossException.class, () -> strict.planInputPartitions(start, end));
        assertTrue(e.getMessage().contains("t-1"), e.getMessage());
    }
}
