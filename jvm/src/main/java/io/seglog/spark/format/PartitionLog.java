package io.seglog.spark.format;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.Record;

/**
 * One partition folder read-only, as a reader sees it now: its segments (named by base offset, 20
 * digits, so a sorted listing is in offset order), its log start offset (the checkpoint's, or the first
 * segment's base if later) and its log end offset (after the last whole batch). Readers take no lock:
 * a segment deleted by retention after the listing surfaces as a {@link SegmentGoneException}, and the
 * caller opens the log again (docs/spec.md §3.7). The Python core's equivalent is indexer/log.py.
 */
public final class PartitionLog implements Closeable {
    /** Milliseconds before each listing while a clean's or merge's swap finishes (docs/spec.md §3.10), as the
     *  core's log._SETTLE_WAITS and the planner's (tests/conformance/settle_waits.json). */
    private static final long[] SETTLE_WAITS_MS = {0, 2, 10, 50, 100, 200};

    public final Path dir;
    public final String topic;
    public final int partition;
    /** False where compaction may have left offset gaps (docs/spec.md §3.9; the rule: {@link OffsetGaps}). */
    public final boolean dense;
    /** The largest partition leader epoch a batch here may carry ({@link LeaderEpochs}). */
    public final int maxLeaderEpoch;
    private final long[] bases;               // the tiered segments' bases, then the local ones'
    /** The tiered segments read from the remote tier (below the local log start), oldest first; bases[0..remote.length). */
    private final RemoteSegmentLog.Entry[] remote;
    private final Path root;
    private final java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf;
    private RemoteTier tier;
    private final long localStart;
    private final boolean keptListing;   // the segments are a listing kept from an earlier look (SegmentListings)
    private final Segment[] open;
    private final long logStart;
    private long logEnd = -1;
    /** Tests only: runs after every listing, before any segment of it is opened (a retention pass, a
     *  merge or a clean that lands in between). */
    private static volatile java.util.function.Consumer<Path> afterListing = dir -> { };

    public static void afterListing(java.util.function.Consumer<Path> hook) {
        afterListing = hook == null ? dir -> { } : hook;
    }

    private PartitionLog(Path root, String topic, int partition, boolean dense, long[] localBases, boolean keptListing,
                         int maxLeaderEpoch, long checkpointed, RemoteSegmentLog.State remoteState,
                         java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf) {
        this.root = root;
        this.dir = root.resolve(topic + "-" + partition);
        this.dense = dense;
        this.maxLeaderEpoch = maxLeaderEpoch;
        this.topic = topic;
        this.partition = partition;
        this.keptListing = keptListing;
        this.hadoopConf = hadoopConf;
        this.localStart = localBases.length == 0 ? checkpointed : Math.max(checkpointed, localBases[0]);
        // One log across both tiers (docs/tiered-storage.md §6), the Python core's TieredLog rule: the live tiered
        // segments below the local log start, then the local segments from the remote end on (a local segment below
        // it is a tiered one's local copy, the same bytes: what is tiered is immutable).
        this.remote = remoteState.live.headMap(localStart, false).values().toArray(new RemoteSegmentLog.Entry[0]);
        long remoteEnd = remote.length == 0 ? Long.MIN_VALUE : remote[remote.length - 1].next();
        if (remote.length > 0 && remoteEnd < localStart) {
            throw new CorruptLogException(RemoteSegmentLog.path(root, topic, partition) + ": " + topic + "-" + partition
                + ": the remote tier ends at offset " + remoteEnd + " and the local tier starts at " + localStart
                + ": offsets between are on neither tier");
        }
        int firstLocal = 0;
        while (firstLocal < localBases.length && localBases[firstLocal] < remoteEnd) firstLocal++;
        this.bases = new long[remote.length + localBases.length - firstLocal];
        for (int i = 0; i < remote.length; i++) bases[i] = remote[i].base();
        System.arraycopy(localBases, firstLocal, bases, remote.length, localBases.length - firstLocal);
        this.open = new Segment[bases.length];
        this.logStart = remote.length > 0 ? remote[0].base() : localStart;
    }

    /** Opens {@code <root>/<topic>-<partition>}; {@code checkpointed} is its checkpointed log start. */
    public static PartitionLog open(Path root, String topic, int partition, long checkpointed) {
        return open(root, topic, partition, checkpointed, OffsetGaps.at(root), SegmentListings.NONE);
    }

    /**
     * {@link #open(Path, String, int, long)} with the gap rule's files read once for many partitions
     * ({@code gaps}, read before this call) and listings kept from an earlier look ({@code listings}).
     */
    public static PartitionLog open(Path root, String topic, int partition, long checkpointed, OffsetGaps gaps,
                                    SegmentListings listings) {
        return open(root, topic, partition, checkpointed, gaps, listings, org.apache.hadoop.conf.Configuration::new);
    }

    /**
     * {@link #open(Path, String, int, long, OffsetGaps, SegmentListings)} with the Hadoop configuration that
     * reaches the root's remote tier (the session's on the driver, the one shipped to executors): asked for
     * only when the log holds tiered segments below its local log start.
     */
    public static PartitionLog open(Path root, String topic, int partition, long checkpointed, OffsetGaps gaps,
                                    SegmentListings listings,
                                    java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf) {
        Path dir = TopicLayout.partitionDir(root, topic, partition);   // a symlinked folder is refused
        // The gap rule first: the cleaner names the partition in its checkpoint before it swaps anything
        // in, so a listing taken after this read cannot hold cleaned segments of a partition judged dense;
        // nor can a kept one reused now (it is reused only when the folder did not change since it was taken).
        boolean dense = !gaps.mayHaveGaps(topic, partition);
        SegmentListings.Found found = listings.look(dir);
        afterListing.accept(dir);
        // The metadata log after the listing: local retention deletes a local segment only after its 'copied'
        // record is appended, so a segment the listing lacks was recorded before this read, which sees it (or
        // its 'deleting' record: then it is gone from the log, and the log start says so).
        RemoteSegmentLog.State remoteState = RemoteSegmentLog.read(root, topic, partition);
        return new PartitionLog(root, topic, partition, dense, found.bases(), found.kept(), found.maxLeaderEpoch(),
            checkpointed, remoteState, hadoopConf);
    }

    /**
     * The bases of a listing taken while no clean or merge is swapping a segment in: with a
     * {@code .log.swap} present the listing may lack the group (even at the log start, which would read
     * as records gone), so it waits for the swap; one that stays (its sidecar died; recovery on the next
     * writable open finishes it) is a {@link SegmentGoneException}, never a shorter log.
     */
    static long[] settledBases(Path dir) {
        List<Long> swaps = new ArrayList<>();
        for (long wait : SETTLE_WAITS_MS) {
            if (wait > 0) {
                try {
                    Thread.sleep(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            swaps.clear();
            long[] bases = listBases(dir, swaps);
            if (swaps.isEmpty()) return bases;
        }
        throw new SegmentGoneException(dir + ": segment " + swaps.get(0) + " is being swapped in (a .log.swap): the "
            + "listing may lack its group; open the log again");
    }

    /** Folder listings taken in this JVM: a trigger's driver cost grows with them (tests hold a stream's
     *  triggers to none for a folder that did not change). */
    private static final java.util.concurrent.atomic.LongAdder LISTINGS = new java.util.concurrent.atomic.LongAdder();

    public static long listings() {
        return LISTINGS.sum();
    }

    static long[] listBases(Path dir, List<Long> swaps) {
        return listBases(dir, swaps, null);
    }

    /**
     * {@link #listBases(Path, List)}, every name of the folder first shown to {@code refuse} (null: none), which
     * throws to refuse the folder: so a caller that refuses a folder by some of its names (the roll back's
     * unrecovered traces) lists it once. Invariant: a name {@code refuse} throws for is refused whatever the order of
     * the listing, even when a name that is not a segment's is listed too (its error is thrown after the whole
     * listing was shown to {@code refuse}), as a separate listing for {@code refuse} taken first would.
     */
    static long[] listBases(Path dir, List<Long> swaps, java.util.function.Consumer<String> refuse) {
        LISTINGS.increment();
        List<Long> found = new ArrayList<>();
        SegmentNameException badName = null;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                if (refuse != null) refuse.accept(name);
                SegmentName.Parsed s;
                try {
                    s = SegmentName.parse(name);
                } catch (SegmentNameException e) {
                    if (refuse == null) throw new SegmentNameException(dir + ": " + e.getMessage());
                    if (badName == null) badName = new SegmentNameException(dir + ": " + e.getMessage());
                    continue;
                }
                if (s == null) continue;
                if (s.tail().equals(Segment.LOG)) {
                    found.add(s.base());
                } else if (swaps != null && s.tail().equals(".log.swap")) {
                    swaps.add(s.base());
                }
            }
        } catch (NoSuchFileException e) {
            throw new DataLossException("seglog source: " + dir + ": the partition folder is gone");
        } catch (IOException e) {
            throw new CorruptLogException("cannot list " + dir + ": " + e, e);
        }
        if (badName != null) throw badName;
        long[] out = found.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(out);
        return out;
    }

    /** The log start a reader sees: the remote log start when tiered segments are read, else the local one. */
    public long logStartOffset() {
        return logStart;
    }

    /** The local tier's log start (the checkpoint's, or its first segment's base if later). */
    public long localLogStartOffset() {
        return localStart;
    }

    /** Segments [0, remoteSegmentCount()) are tiered ones, read from the remote tier. */
    public int remoteSegmentCount() {
        return remote.length;
    }

    private RemoteTier tier() {
        if (tier == null) {
            RemoteLocation location = RemoteLocation.load(root);
            if (location == null) {
                throw new RemoteTierNotReadableException(RemoteSegmentLog.path(root, topic, partition) + " records tiered "
                    + "segments (offsets " + logStart + " to " + (localStart - 1) + ") but " + RemoteLocation.path(root)
                    + " is missing: the remote tier cannot be found", null);
            }
            RemoteTier t = new RemoteTier(location, hadoopConf);
            RemoteOwner.check(root, t);     // another root's objects are never read as this root's rows
            tier = t;
        }
        return tier;
    }

    public long logEndOffset() {
        if (logEnd < 0) {
            logEnd = bases.length == 0 ? logStart : Math.max(segment(bases.length - 1).nextOffset(), logStart);
        }
        return logEnd;
    }

    /** The segments are a listing kept from an earlier look, not one taken when this log was opened. */
    public boolean keptListing() {
        return keptListing;
    }

    public int segmentCount() {
        return bases.length;
    }

    public long base(int i) {
        return bases[i];
    }

    public Segment segment(int i) {
        if (open[i] == null) {
            open[i] = i < remote.length ? Segment.openRemote(tier(), topic, partition, remote[i], dense, maxLeaderEpoch)
                                        : Segment.open(dir, bases[i], dense, maxLeaderEpoch);
        }
        return open[i];
    }

    /** The segment that holds {@code offset}: the last whose base is at most it (0 if none). */
    public int segmentIndexFor(long offset) {
        int i = Arrays.binarySearch(bases, offset);
        if (i >= 0) return i;
        return Math.max(0, -i - 2);
    }

    /**
     * The Python core's rule (indexer/log.py {@code _bounds}): a checkpointed log start beyond the log end
     * hides every record; it is reported, never read as an empty log. A log without segments has no end
     * but its start. A start at or below the last segment's base is within the end without opening it
     * (the end is at least that base): the usual case costs no segment open.
     */
    public void requireStartWithinEnd() {
        if (bases.length == 0 || logStart <= bases[bases.length - 1]) return;
        long end = segment(bases.length - 1).nextOffset();
        if (logStart > end) {
            throw new LogStartBeyondEndException(dir + ": the log start offset " + logStart + " (from " + dir.getParent()
                + "/" + LogStartCheckpoint.FILE + ") is beyond the log end offset " + end
                + ": it would hide every record; correct or remove the checkpoint entry");
        }
    }

    /**
     * The smallest offset in [log start, {@code bound}) whose record has a timestamp of at least
     * {@code ts}, or -1 (docs/format.md "Lookup by timestamp"): the first segment whose largest
     * timestamp reaches ts (the running maximum is monotone, so that is the first candidate), then its
     * time index (last entry strictly below ts), then a walk of the batches that can hold it. The walk
     * stops at {@code bound}, the committed end: bytes past it (an append in flight, a roll back's cut)
     * are never read, let alone judged (docs/spec.md §4).
     */
    public long offsetForTimestamp(long ts, long bound) {
        for (int i = segmentIndexFor(logStart); i < bases.length && bases[i] < bound; i++) {
            // A tiered segment's largest timestamp is its record's: skipped without fetching its indexes.
            if (i < remote.length && remote[i].maxTs() < ts) continue;
            Segment seg = segment(i);
            long nextBase = i + 1 < bases.length ? bases[i + 1] : Long.MAX_VALUE;
            if (seg.largestTimestamp(nextBase) < ts) continue;
            long found = findInSegment(seg, ts, Math.max(logStart, seg.base), bound);
            if (found >= 0) return found;
        }
        return -1;
    }

    private static long findInSegment(Segment seg, long ts, long lower, long bound) {
        TimeIndexFile ti = seg.timeIndex();
        int e = ti.lastStrictlyBelow(ts);
        long start = Math.max(lower, e < 0 ? seg.base : ti.offsetAt(e));
        Segment.Batches it = seg.batchesHolding(start, bound);
        while (it.hasNext()) {
            FileChannelRecordBatch b = it.next();
            // Every batch counts, transaction markers too: a marker's record has a timestamp and an offset like any
            // other, as Kafka's ListOffsets (LogSegment.findOffsetByTimestamp) and the Python core count it.
            if (b.lastOffset() < start || b.maxTimestamp() < ts) continue;
            for (Record r : b) {
                if (r.offset() >= bound) return -1;
                if (r.offset() >= start && r.timestamp() >= ts) return r.offset();
            }
        }
        return -1;
    }

    /** Log bytes of segment {@code i} before {@code offset}, from its offset index alone: its whole size
     *  when the offset is at or past the segment's end (the last segment's up to its last whole batch: a
     *  torn tail is no part of the log). */
    private long positionIn(int i, long offset) {
        Segment seg = segment(i);
        if (i == bases.length - 1) return offset >= logEndOffset() ? seg.wholeBatchesEnd() : seg.floorPosition(offset);
        return offset >= bases[i + 1] ? seg.size() : seg.floorPosition(offset);
    }

    /**
     * An estimate of the log bytes in [start, end), from the indexes alone; additive (the bytes of
     * [a, b) and [b, c) make those of [a, c)). Only the segments holding the range are opened: the cost
     * of a read's planning follows the range, not the history retained before it (issue 24).
     */
    public long byteSize(long start, long end) {
        if (bases.length == 0 || end <= start) return 0;
        int i = segmentIndexFor(start), j = segmentIndexFor(end);
        long bytes = -positionIn(i, start);
        for (int k = i; k < j; k++) bytes += segment(k).size();
        return Math.max(0, bytes + positionIn(j, end));
    }

    /** Where a task holding at most {@code targetBytes} of log from {@code start} may end, without a log scan:
     *  the first offset of the batch of the last offset index entry in (start, end) at most {@code targetBytes}
     *  past start; when none is that close, of the first entry past it (a batch larger than the target cannot be
     *  cut); -1 when (start, end) holds no entry past start's own batch. A cut is always a batch's start, so no
     *  batch is read by two tasks. The same rule as the Python planner's (`Log.split_offset`).
     *  Only the segments from start's to the one holding the cut are opened. */
    public long splitOffset(long start, long end, long targetBytes) {
        if (bases.length == 0 || end <= start) return -1;
        int first = segmentIndexFor(start);
        long before = -positionIn(first, start);   // log bytes from start to the current segment's base
        long within = -1;
        // Tiered segments wholly within the room since the last cut found: every entry of theirs is within, so
        // their cuts matter only when no later segment has one. Their indexes are fetched only then: planning a
        // read of the remote tier costs an index per task cut, not one per segment (docs/tiered-storage.md).
        List<long[]> deferred = new ArrayList<>();
        for (int i = first; i < bases.length && bases[i] < end; i++) {
            Segment seg = segment(i);
            if (seg.remote() && dense && before + seg.size() <= targetBytes) {
                deferred.add(new long[] {i, before});
                before += seg.size();
                continue;
            }
            OffsetIndexFile oi = seg.offsetIndex();
            for (int k = 0; k < oi.entries(); k++) {
                long cut = cutAt(seg, oi, k, before, start, end);
                if (cut < 0) continue;
                if (before + oi.positionAt(k) > targetBytes) {
                    long late = lastCut(deferred, start, end);
                    if (late >= 0) within = late;
                    return within >= 0 ? within : cut;
                }
                within = cut;
                deferred.clear();
            }
            before += seg.size();
        }
        long late = lastCut(deferred, start, end);
        return late >= 0 ? late : within;
    }

    /** The cut at offset index entry {@code k} of {@code seg} (whose base is {@code before} log bytes past start),
     *  or -1 when the entry is no cut of (start, end): outside it, or start's own batch. The cut is the first
     *  offset of the entry's batch (the entry's key is its last): a task ends where a batch begins, so the batch
     *  at a cut is read by the next task only (issue 28). */
    private long cutAt(Segment seg, OffsetIndexFile oi, int k, long before, long start, long end) {
        long off = oi.offsetAt(k);
        long past = before + oi.positionAt(k);
        if (!(start < off && off < end) || past <= 0) return -1;   // past <= 0: start's own batch
        // A tiered segment is dense (a compacted topic is never tiered): the batch after entry k-1's starts at its
        // key + 1, a cut found without fetching bytes on the driver.
        long cut = seg.remote() && dense ? (k == 0 ? seg.base : oi.offsetAt(k - 1) + 1)
                                         : seg.baseOffsetAt(oi.positionAt(k), off);
        return cut <= start ? -1 : cut;
    }

    /** The last cut among the deferred segments ({index, bytes before it}), latest first; -1 when none has one. */
    private long lastCut(List<long[]> deferred, long start, long end) {
        for (int d = deferred.size() - 1; d >= 0; d--) {
            Segment seg = segment((int) deferred.get(d)[0]);
            OffsetIndexFile oi = seg.offsetIndex();
            for (int k = oi.entries() - 1; k >= 0; k--) {
                long cut = cutAt(seg, oi, k, deferred.get(d)[1], start, end);
                if (cut >= 0) return cut;
            }
        }
        return -1;
    }

    @Override
    public void close() {
        for (int i = 0; i < open.length; i++) {
            if (open[i] != null) {
                open[i].close();
                open[i] = null;
            }
        }
    }
}
