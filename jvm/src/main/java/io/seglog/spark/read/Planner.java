package io.seglog.spark.read;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.apache.kafka.common.TopicPartition;

import io.seglog.spark.format.DataLossException;
import io.seglog.spark.format.LogStartBeyondEndException;
import io.seglog.spark.format.LogStartCheckpoint;
import io.seglog.spark.format.OffsetGaps;
import io.seglog.spark.format.PartitionLog;
import io.seglog.spark.format.SegmentGoneException;
import io.seglog.spark.format.TopicLayout;

/**
 * Planning a read on the driver (docs/spec.md §8): each partition's range [start, end) resolved once
 * from the options and the pushed filters, never past its committed end (docs/spec.md §4); then the
 * work cut into tasks of about a target number of bytes, as if the ranges were one stream: small
 * partitions share a task, large ones are cut at offset index entries (no log scan). Planning takes no
 * lock: a segment deleted by retention, merged or cleaned while planning makes it plan again from a new
 * listing ({@link #retrying}: batch planning and every driver path of a stream).
 */
public final class Planner {
    private static final Logger LOG = LoggerFactory.getLogger(Planner.class);
    static final long MIN_TASK_BYTES = 8L << 20;   // below this a second task costs more than it saves
    static final int SLACK = 8;                    // a range may overflow its task by target/SLACK rather than be cut
    /** Milliseconds before each attempt: a swap or a two-step truncation settles within them (the core's _SETTLE_WAITS). */
    private static final long[] SETTLE_WAITS_MS = {0, 2, 10, 50, 100, 200};

    private Planner() {}

    /** A batch read's layout: every topic (and assigned partition) exists, and every per-partition JSON covers
     *  the partitions read exactly. */
    public static Map<String, List<Integer>> checkLayout(ReadOptions o) {
        return layout(o, true);
    }

    /**
     * The topics and partitions read now ({@link TopicSelection#resolve}), each per-partition JSON checked
     * against them. {@code missingIsError} false (a stream) leaves out a topic not created yet, so the stream
     * waits for it, unless a per-partition JSON names it: offsets for partitions that do not exist are refused
     * either way, as Spark's Kafka source refuses offsets that do not match the partitions assigned.
     */
    public static Map<String, List<Integer>> layout(ReadOptions o, boolean missingIsError) {
        Path root = Paths.get(o.root);
        Map<String, List<Integer>> layout = o.selection.resolve(root, o.root, missingIsError);
        for (Bound bound : new Bound[] {o.starting, o.ending}) {
            if (!bound.isPerPartition()) continue;
            for (TopicPartition tp : bound.values.keySet()) {
                if (!layout.containsKey(tp.topic())) {
                    List<String> there = TopicLayout.topics(root);
                    throw new NoSuchTopicException("seglog source: option '" + bound.option + "' names topic '" + tp.topic()
                        + "', which is not under '" + o.root + "'" + (o.selection.kind == TopicSelection.Kind.PATTERN
                            ? " or does not match the pattern" : "")
                        + " (topics there: " + (there.isEmpty() ? "none" : String.join(", ", there)) + ")");
                }
            }
        }
        for (Map.Entry<String, List<Integer>> e : layout.entrySet()) {
            checkBoundPartitions(o.starting, e.getKey(), e.getValue());
            checkBoundPartitions(o.ending, e.getKey(), e.getValue());
        }
        return layout;
    }

    /** As Spark's Kafka source: a per-partition JSON names every partition of each topic, and only those. */
    static void checkBoundPartitions(Bound bound, String topic, List<Integer> partitions) {
        if (!bound.isPerPartition()) return;
        TreeSet<Integer> named = new TreeSet<>();
        for (TopicPartition tp : bound.values.keySet()) {
            if (tp.topic().equals(topic)) named.add(tp.partition());
        }
        List<String> missing = new ArrayList<>();
        for (int p : partitions) if (!named.contains(p)) missing.add(topic + "-" + p);
        if (!missing.isEmpty()) {
            throw new NoSuchTopicException("seglog source: option '" + bound.option + "' must give every partition of topic '"
                + topic + "'; missing: " + String.join(", ", missing));
        }
        List<String> unknown = new ArrayList<>();
        for (int p : named) if (!partitions.contains(p)) unknown.add(topic + "-" + p);
        if (!unknown.isEmpty()) {
            List<String> all = new ArrayList<>();
            for (int p : partitions) all.add(String.valueOf(p));
            throw new NoSuchTopicException("seglog source: option '" + bound.option + "' names partitions that topic '"
                + topic + "' does not have: " + String.join(", ", unknown) + " (partitions: " + String.join(", ", all) + ")");
        }
    }

    /** Offsets [start, logStart) of a partition retention deleted before they were read. */
    static String lossOf(String topic, int partition, long start, long logStart) {
        return topic + "-" + partition + ": offsets " + start + " to " + (logStart - 1)
            + " are no longer in the log (deleted by retention; the log now starts at offset " + logStart + ")";
    }

    static String skipTo(long logStart) {
        return "Set failOnDataLoss=false to skip to offset " + logStart + " instead of failing.";
    }

    public static String dataLossMessage(String topic, int partition, long start, long logStart) {
        return "seglog source: " + lossOf(topic, partition, start, logStart) + ". Some data may have been lost. "
            + skipTo(logStart);
    }

    /**
     * Runs one planning attempt until it sees a settled log: a segment listed but gone when opened
     * (retention, a merge's or a clean's swap) or a log start beyond the log end (a truncation restarting
     * the log, two steps) makes it list again after a short wait. The attempt closes what it opened; the
     * data loss it found is told once, after the attempt that succeeded.
     */
    static <T> T retrying(String what, DataLoss loss, Supplier<T> attempt) {
        for (int i = 0; ; i++) {
            try {
                T out = attempt.get();
                loss.publish();
                return out;
            } catch (SegmentGoneException | LogStartBeyondEndException e) {
                loss.discard();
                if (i + 1 >= SETTLE_WAITS_MS.length) throw e;
                LOG.info("seglog source: {}: the log changed under the reader ({}); listing it again (attempt {} of {})",
                    what, e.getMessage(), i + 2, SETTLE_WAITS_MS.length);
                try {
                    Thread.sleep(SETTLE_WAITS_MS[i + 1]);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /** [start, end) for one partition; raises on data loss (failOnDataLoss), on a start past an end
     *  given as offsets, and on a starting timestamp with no offset under strategy `error`. */
    static PartitionRange resolve(ReadOptions o, ScanBounds bounds, String topic, int p, PartitionLog log, long committed,
                                  DataLoss loss) {
        log.requireStartWithinEnd();
        long logStart = log.logStartOffset();
        // The committed end, not capped by the log end the files show now: records below it were committed, so
        // a log that ends short of it (a torn or lost tail) is reported by the read, never read as fewer rows.
        long endCap = Math.max(committed, logStart);

        long end;
        Bound ending = o.ending;
        if (ending.kind == Bound.Kind.LATEST) {
            end = endCap;
        } else if (ending.kind == Bound.Kind.OFFSETS) {
            long v = ending.value(topic, p);
            end = v == ReadOptions.LATEST ? endCap : Math.min(v, endCap);
        } else {   // by timestamp: no offset for it means latest (Spark's Kafka source); -1 / -2 are latest / earliest
            long ts = ending.value(topic, p);
            long found = ts == ReadOptions.LATEST ? endCap : ts == ReadOptions.EARLIEST ? logStart : log.offsetForTimestamp(ts, endCap);
            end = found < 0 ? endCap : Math.min(found, endCap);
        }

        long start;
        boolean explicit = false;
        Bound starting = o.starting;
        if (starting.kind == Bound.Kind.EARLIEST) {
            start = logStart;
        } else if (starting.kind == Bound.Kind.LATEST) {
            start = endCap;
        } else if (starting.kind == Bound.Kind.OFFSETS) {
            long v = starting.value(topic, p);
            start = v == ReadOptions.EARLIEST ? logStart : v == ReadOptions.LATEST ? endCap : v;
            explicit = v >= 0;
        } else if (starting.value(topic, p) == ReadOptions.LATEST || starting.value(topic, p) == ReadOptions.EARLIEST) {
            // Kafka's ListOffsets sentinels in a by-timestamp JSON, as Spark hands them to the broker: always an offset
            start = Math.min(starting.value(topic, p) == ReadOptions.LATEST ? endCap : logStart, end);
        } else {
            long ts = starting.value(topic, p);
            long found = log.offsetForTimestamp(ts, endCap);
            if (found < 0 || found >= endCap) {
                if (!o.strategyLatest) {
                    throw new NoOffsetForTimestampException("seglog source: " + topic + "-" + p
                        + " has no record with a timestamp at or after " + ts + " (" + starting.option
                        + "); set startingOffsetsByTimestampStrategy=latest to start at the latest offset ("
                        + endCap + ") instead");
                }
                found = endCap;
            }
            start = Math.min(found, end);
        }

        boolean skipped = false;
        if (start < logStart) {
            if (explicit) loss.report(lossOf(topic, p, start, logStart), logStart - start, skipTo(logStart));
            start = logStart;
            skipped = true;
        }
        if (explicit && !skipped && start > end) {
            throw new OffsetRangeException("seglog source: " + topic + "-" + p + ": starting offset " + start + " ("
                + starting.option + ") is after the ending offset " + end + " (committed end " + endCap
                + "); ask for a start at or below the end");
        }

        // Pushed filters narrow the range: an offset window, and a timestamp seek (docs/spec.md §3.5: every
        // record with a timestamp >= T is at or after offset_for_timestamp(T)).
        long[] window = bounds.offsetRange();
        start = Math.max(start, window[0]);
        end = Math.min(end, window[1]);
        Long lowTs = bounds.lowestTimestamp();
        if (lowTs != null && start < end) {
            long found = log.offsetForTimestamp(lowTs, endCap);
            start = found < 0 ? end : Math.max(start, Math.min(found, end));
        }
        if (bounds.isEmpty() || start > end) start = end;
        return new PartitionRange(topic, p, start, end, endCap, log);   // unsized: the latest offsets need only ends
    }

    /** About one task per core for a modest read, never tasks above maxBytesPerTask; minPartitions asks
     *  for at least that many tasks (Spark's Kafka source): total / minPartitions rounded down, so that
     *  tasks of at most the target make at least that many. */
    static long targetTaskBytes(long total, ReadOptions o, int cores) {
        if (o.minPartitions > 0) {
            return Math.max(1, Math.min(o.maxBytesPerTask, total / o.minPartitions));
        }
        return Math.max(1, Math.min(o.maxBytesPerTask, Math.max(MIN_TASK_BYTES, ceilDiv(total, Math.max(1, cores)))));
    }

    /** The overflow a task may take rather than cut a range: target/SLACK, none when minPartitions asks for a
     *  task count (an overflow could make one task fewer). */
    static long slack(long target, ReadOptions o) {
        return o.minPartitions > 0 ? 0 : Math.max(1, target / SLACK);
    }

    private static long ceilDiv(long a, long b) {
        return -Math.floorDiv(-a, b);
    }

    /**
     * Cuts the ranges, in order, into tasks of at most {@code target} bytes as if they were one stream
     * (docs/spec.md §8; the Python planner's `pack` keeps the same rule): a range that fits the task's room
     * (with {@code slack}) joins it whole; else it is cut at the last offset index entry within the room
     * ({@link PartitionLog#splitOffset}) and the task closes; a range with no entry within the room closes a
     * task that holds something and goes to the next one, where a first piece larger than the target is
     * taken as it is (one batch cannot be cut). Empty ranges are dropped.
     */
    static List<List<Slice>> pack(List<PartitionRange> ranges, long target, long slack) {
        return pack(ranges, target, slack, LOG_CUTS);
    }

    /** Where a range may be cut, and the log bytes before a cut: the offset index ({@link PartitionLog#splitOffset}),
     *  or a table of cuts (tests/conformance/task_packing.json pins {@link #pack} with one, as the Python pack's
     *  {@code split} argument does). */
    interface Cuts {
        /** The cut for a task of {@code room} bytes from {@code start}, or a value outside (start, end): none. */
        long cut(PartitionRange r, long start, long end, long room);

        long bytes(PartitionRange r, long start, long cut);
    }

    static final Cuts LOG_CUTS = new Cuts() {
        @Override
        public long cut(PartitionRange r, long start, long end, long room) {
            return r.log.splitOffset(start, end, room);
        }

        @Override
        public long bytes(PartitionRange r, long start, long cut) {
            return r.log.byteSize(start, cut);
        }
    };

    static List<List<Slice>> pack(List<PartitionRange> ranges, long target, long slack, Cuts cuts) {
        List<List<Slice>> tasks = new ArrayList<>();
        List<Slice> current = new ArrayList<>();
        long room = target;
        for (PartitionRange r : ranges) {
            long start = r.start, end = r.end, left = r.bytes;
            while (start < end) {
                if (left <= room + slack) {
                    current.add(new Slice(r.topic, r.partition, start, end, r.bound));
                    room -= left;
                    break;
                }
                long cut = cuts.cut(r, start, end, Math.max(1, room));
                if (!(start < cut && cut < end)) {   // no entry inside the range: it cannot be cut
                    current.add(new Slice(r.topic, r.partition, start, end, r.bound));
                    room -= left;
                    break;
                }
                long piece = cuts.bytes(r, start, cut);
                if (piece > room + slack && !current.isEmpty()) {   // not even one piece fits: the next task
                    tasks.add(current);
                    current = new ArrayList<>();
                    room = target;
                    continue;
                }
                current.add(new Slice(r.topic, r.partition, start, cut, r.bound));
                left = Math.max(0, left - piece);
                start = cut;
                tasks.add(current);
                current = new ArrayList<>();
                room = target;
            }
            if (room <= 0) {
                tasks.add(current);
                current = new ArrayList<>();
                room = target;
            }
        }
        if (!current.isEmpty()) tasks.add(current);
        tasks.removeIf(List::isEmpty);
        return tasks;
    }

    /**
     * maxRecordsPerPartition (Spark's Kafka source, 3.5+): no task holds more than {@code max} offsets, so no more
     * records. A task of the byte packing above it is cut into the fewest tasks of at most {@code max} offsets,
     * of about equal size (as Spark divides a range evenly), at exact offsets: a batch may then be read by two
     * tasks, each keeping only its own offsets. {@code max} 0: the tasks as they are.
     */
    static List<List<Slice>> capRecords(List<List<Slice>> tasks, long max) {
        if (max <= 0) return tasks;
        List<List<Slice>> out = new ArrayList<>();
        for (List<Slice> task : tasks) {
            long total = 0;
            for (Slice s : task) total += s.end - s.start;
            if (total <= max) {
                out.add(task);
                continue;
            }
            long pieces = ceilDiv(total, max);
            long base = total / pieces, rem = total % pieces;   // piece k holds base or base + 1 <= max offsets
            long given = 0;        // offsets handed out so far
            long piece = 0;
            List<Slice> current = new ArrayList<>();
            for (Slice s : task) {
                long from = s.start;
                while (from < s.end) {
                    long pieceEnd = base * (piece + 1) + Math.min(piece + 1, rem);   // offsets in pieces 0..piece
                    long take = Math.min(s.end - from, pieceEnd - given);
                    if (take > 0) {
                        current.add(new Slice(s.topic, s.partition, from, from + take, s.bound));
                        from += take;
                        given += take;
                    }
                    if (given >= pieceEnd && piece < pieces - 1) {
                        out.add(current);
                        current = new ArrayList<>();
                        piece++;
                    }
                }
            }
            if (!current.isEmpty()) out.add(current);
        }
        return out;
    }

    /** Resolves every partition's range and cuts the work into tasks; data loss goes to {@code loss}. */
    public static List<List<Slice>> plan(ReadOptions o, ScanBounds bounds, int cores, DataLoss loss) {
        return retrying("planning " + o.selection, loss, () -> {
            List<PartitionLog> logs = new ArrayList<>();
            try {
                long total = 0;
                List<PartitionRange> nonEmpty = new ArrayList<>();
                for (PartitionRange r : resolveAll(o, bounds, logs, loss, LogLooks.fresh(), true)) {
                    if (r.start >= r.end) continue;
                    PartitionRange sized = r.sized();
                    total += sized.bytes;
                    nonEmpty.add(sized);
                }
                long target = targetTaskBytes(total, o, cores);
                return capRecords(pack(nonEmpty, target, slack(target, o)), o.maxRecordsPerPartition);
            } finally {
                for (PartitionLog l : logs) l.close();
            }
        });
    }

    /** Every kept partition's range; the logs opened are added to {@code logs} (the caller closes them);
     *  folders and commit logs are looked at through {@code looks} (a stream's, or afresh); {@code missingIsError}
     *  as {@link #layout}. */
    static List<PartitionRange> resolveAll(ReadOptions o, ScanBounds bounds, List<PartitionLog> logs, DataLoss loss,
                                           LogLooks looks, boolean missingIsError) {
        Map<String, List<Integer>> layout = layout(o, missingIsError);
        Path root = Paths.get(o.root);
        Map<String, Long> checkpoint = LogStartCheckpoint.read(root);
        OffsetGaps gaps = OffsetGaps.at(root);
        List<PartitionRange> ranges = new ArrayList<>();
        for (Map.Entry<String, List<Integer>> e : layout.entrySet()) {
            String topic = e.getKey();
            List<Integer> kept = new ArrayList<>();
            for (int p : e.getValue()) if (bounds.keepsPartition(topic, p)) kept.add(p);
            if (kept.isEmpty()) continue;
            Map<Integer, Long> ends = looks.committedEnds(root, topic);
            for (int p : kept) {
                Path dir = TopicLayout.partitionDir(root, topic, p);
                if (!Files.isDirectory(dir)) {
                    // A partition the sink never wrote has no folder: zero rows. Unless the commit log says
                    // records were committed there: then its folder was lost.
                    long lost = ends.getOrDefault(p, 0L);
                    if (lost > 0) {
                        loss.report(topic + "-" + p + ": the commit log says offsets 0 to " + (lost - 1) + " were committed, "
                            + "but the partition folder " + dir + " is gone", lost,
                            "Set failOnDataLoss=false to read the other partitions.");
                    }
                    continue;
                }
                PartitionLog log = PartitionLog.open(root, topic, p, checkpoint.getOrDefault(topic + "-" + p, 0L), gaps, looks.listings,
                    RemoteConf.SESSION);
                logs.add(log);
                long committed = ends.getOrDefault(p, log.logStartOffset());
                ranges.add(resolve(o, bounds, topic, p, log, committed, loss));
            }
        }
        return ranges;
    }
}
