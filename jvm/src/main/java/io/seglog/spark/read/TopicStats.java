package io.seglog.spark.read;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.catalyst.InternalRow;

import io.seglog.spark.format.CommitLogReader;
import io.seglog.spark.format.LogStartCheckpoint;
import io.seglog.spark.format.OffsetGaps;
import io.seglog.spark.format.PartitionLog;
import io.seglog.spark.format.SegmentListings;
import io.seglog.spark.format.TopicLayout;

/**
 * What Kafka's DescribeTopics and ListOffsets say of a topic, for the SQL catalog's DESCRIBE: per partition
 * its log start and committed end (the offsets JSON the source's startingOffsets/endingOffsets take), the
 * local segment bytes, and over the committed records their count and oldest/newest timestamps (the
 * pushed aggregate's exact answer: it reads every batch of the topic, so it is asked only by DESCRIBE).
 */
public final class TopicStats {
    private TopicStats() {}

    /** Property name to value, in a fixed order. */
    public static Map<String, String> of(String root, String topic) {
        Path rootPath = Paths.get(root);
        List<Integer> parts = TopicLayout.partitions(rootPath, topic);
        Map<String, Long> checkpoint = LogStartCheckpoint.read(rootPath);
        OffsetGaps gaps = OffsetGaps.at(rootPath);
        Map<Integer, Long> ends = CommitLogReader.committedEnds(rootPath, topic);
        Map<Integer, Long> starts = new TreeMap<>();
        Map<Integer, Long> endOffsets = new TreeMap<>();
        long bytes = 0;
        for (int p : parts) {
            if (!java.nio.file.Files.isDirectory(TopicLayout.partitionDir(rootPath, topic, p))) {
                starts.put(p, 0L);
                endOffsets.put(p, ends.getOrDefault(p, 0L));
                continue;
            }
            try (PartitionLog log = PartitionLog.open(rootPath, topic, p, checkpoint.getOrDefault(topic + "-" + p, 0L), gaps,
                    SegmentListings.NONE, RemoteConf.SESSION)) {
                long start = log.logStartOffset();
                starts.put(p, start);
                endOffsets.put(p, Math.max(start, ends.getOrDefault(p, start)));
                for (int i = log.remoteSegmentCount(); i < log.segmentCount(); i++) bytes += log.segment(i).size();
            }
        }
        long records = 0;
        long oldest = Long.MAX_VALUE, newest = Long.MIN_VALUE;
        if (!parts.isEmpty()) {
            Map<String, String> options = new LinkedHashMap<>();
            options.put("path", root);
            options.put("topic", topic);
            ReadOptions o = ReadOptions.parse(options, false);
            for (InternalRow r : PushedAggregate.perPartition().rows(o, ScanBounds.NONE)) {
                records += r.getLong(1);
                if (!r.isNullAt(4)) oldest = Math.min(oldest, r.getLong(4) / 1000);
                if (!r.isNullAt(5)) newest = Math.max(newest, r.getLong(5) / 1000);
            }
        }
        Map<String, String> out = new LinkedHashMap<>();
        out.put("partitions", Integer.toString(parts.size()));
        out.put("startOffsets", offsetsJson(topic, starts));
        out.put("endOffsets", offsetsJson(topic, endOffsets));
        out.put("records", Long.toString(records));
        out.put("sizeBytes", Long.toString(bytes));
        out.put("oldestTimestamp", oldest == Long.MAX_VALUE ? "" : Instant.ofEpochMilli(oldest).toString());
        out.put("newestTimestamp", newest == Long.MIN_VALUE ? "" : Instant.ofEpochMilli(newest).toString());
        return out;
    }

    /** {"topic":{"0":start,...}}: what startingOffsets/endingOffsets take. */
    private static String offsetsJson(String topic, Map<Integer, Long> offsets) {
        List<String> items = new ArrayList<>();
        for (Map.Entry<Integer, Long> e : offsets.entrySet()) items.add("\"" + e.getKey() + "\":" + e.getValue());
        return "{" + io.seglog.spark.format.PythonJson.string(topic) + ":{" + String.join(",", items) + "}}";
    }
}
