package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;

/**
 * Rolling a partition back to its committed end (docs/spec.md §4; the Python core's
 * tests/oracles/committed_end.py over Log.truncate_to, indexer/recovery.py): records past the committed end
 * belong to no committed batch (a delivery that crashed or was refused wrote them) and are cut; nothing
 * below it changes. The caller holds the partition's lock.
 *
 * <p>The cut is the core's crash-safe truncation, file for file, so that a kill at any instant leaves a
 * folder the core's recovery reads as the old log or completes to the new one:
 * <ol>
 * <li>the recovery point is lowered to the cut, if above it (it must not vouch for what the cut touches);</li>
 * <li>the intent, {@code truncate.pending} ({"offset", "segment", "position", "batch": ""}), is written
 *   atomically: from here on the core's recovery finishes the job;</li>
 * <li>later segments are renamed {@code .deleted}, from the top (the {@code .log} first);</li>
 * <li>the boundary segment's {@code .log} is cut at the batch boundary and forced; its offset index keeps
 *   the keys below the cut, its time index the entries written with a kept offset index entry
 *   (docs/format.md "Time index"), the dropped slots zeroed from the last backwards, and a file that was
 *   not preallocated to {@code segment.index.bytes} trimmed to its entries (the core's _truncate_entries);</li>
 * <li>the folder is fsynced, the intent removed, the folder fsynced again.</li>
 * </ol>
 * A committed end below the partition's remote end is refused before anything is done
 * ({@link TieredOffsetsException}): what is tiered is immutable (docs/tiered-storage.md §4), as the core's
 * {@code Log.truncate_to} refuses it.
 * A committed end is always a batch boundary (commits are made at log ends); a batch straddling it is
 * reported, never rewritten here. Indexes whose last entries do not match the cut log are left to the core:
 * the intent stays, and the error says to run {@code seglog recover}.
 */
public final class CommittedEndRollBack {
    public static final String INTENT = "truncate.pending";
    private static final int OFFSET_ENTRY = 8;
    private static final int TIME_ENTRY = 12;

    private CommittedEndRollBack() {}

    /** What a roll back did: whether it cut, and the log end it left. */
    public static final class Result {
        private final boolean cut;
        private final long logEnd;
        private final Opened opened;

        public Result(boolean cut, long logEnd) {
            this(cut, logEnd, null);
        }

        Result(boolean cut, long logEnd, Opened opened) {
            this.cut = cut;
            this.logEnd = logEnd;
            this.opened = opened;
        }

        public boolean cut() { return cut; }
        public long logEnd() { return logEnd; }
        /** The folder as this roll back read it when it cut nothing from a folder with segments, else null. */
        public Opened opened() { return opened; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Result)) return false;
            Result that = (Result) o;
            return cut == that.cut
                    && logEnd == that.logEnd;
        }

        @Override public int hashCode() { return java.util.Objects.hash(cut, logEnd); }

        @Override public String toString() { return "Result[cut=" + cut + ", logEnd=" + logEnd + "]"; }
    }

    /**
     * A partition folder as a roll back that cut nothing read it (its segment bases, the gap rule, the leader epoch
     * bound, its log end, the last segment holding whole batches only). Invariant: it is what the folder holds only
     * while the partition's lock taken before the roll back is still held; a publish under that same hold
     * ({@link StagedPublisher#publish}) starts from it instead of listing and opening the folder again (issue 41).
     */
    public static final class Opened {
        final long[] bases;
        final boolean dense;
        final int epochs;
        final long logEnd;
        final boolean lastEmpty;   // the last segment holds no bytes

        Opened(long[] bases, boolean dense, int epochs, long logEnd, boolean lastEmpty) {
            this.bases = bases;
            this.dense = dense;
            this.epochs = epochs;
            this.logEnd = logEnd;
            this.lastEmpty = lastEmpty;
        }
    }

    /**
     * Cut {@code <root>/<topic>-<partition>} back to {@code committed} if its log ends past it (or holds a
     * torn tail past it). {@code segmentIndexBytes} is the topic's {@code segment.index.bytes}.
     */
    public static Result rollBack(Path root, String topic, int partition, long committed, int segmentIndexBytes) {
        return rollBack(root, topic, partition, committed, segmentIndexBytes, null);
    }

    /**
     * {@link #rollBack(Path, String, int, long, int)} with the gap rule's files as read once for every partition of a
     * commit ({@code gaps}, taken with this partition's lock already held: {@link OffsetGaps#at}; null: read here).
     */
    public static Result rollBack(Path root, String topic, int partition, long committed, int segmentIndexBytes,
                                  OffsetGaps gaps) {
        return rollBack(root, topic, partition, committed, segmentIndexBytes, gaps, null);
    }

    /**
     * {@link #rollBack(Path, String, int, long, int, OffsetGaps)} with the root's log start checkpoint as read once for
     * every partition of a commit too ({@code logStarts}: {@link LogStartCheckpoint#read}, taken with this partition's
     * lock already held; null: read here). Issue 41: it was read once per partition. Invariant: a partition's entry
     * changes only under that partition's lock (a writable Log's retention, a recovery, a restart here; the file's own
     * lock only orders its rewrites), so a copy read with the lock held is this partition's entry until it is released.
     */
    public static Result rollBack(Path root, String topic, int partition, long committed, int segmentIndexBytes,
                                  OffsetGaps gaps, java.util.Map<String, Long> logStarts) {
        Path dir = TopicLayout.partitionDir(root, topic, partition);
        if (!Files.isDirectory(dir)) return new Result(false, 0);
        try {
            return cut(root, dir, topic, partition, committed, segmentIndexBytes, gaps != null ? gaps : OffsetGaps.at(root),
                    logStarts);
        } catch (IOException e) {
            throw new StorageException(dir + ": roll back to the committed end " + committed + " failed: " + e, e);
        }
    }

    private static Result cut(Path root, Path dir, String topic, int partition, long committed, int indexBytes,
                              OffsetGaps gaps, java.util.Map<String, Long> logStarts) throws IOException {
        refuseBelowRemoteEnd(dir, root, topic, partition, committed);
        finishIntent(root, dir, topic, partition, indexBytes, gaps);
        // one listing: refused by an unrecovered trace's name, else the segments' bases (issue 41: it was listed twice)
        long[] bases = PartitionLog.listBases(dir, null, name -> refuseUnrecovered(dir, name));
        if (bases.length == 0) return new Result(false, 0);
        boolean dense = !gaps.mayHaveGaps(topic, partition);
        int epochs = LeaderEpochs.maxLeaderEpoch(dir);
        long last = bases[bases.length - 1];
        long logEnd;
        int validEnd;
        long lastSize;
        try (Segment active = Segment.open(dir, last, dense, epochs)) {
            long[] ends = active.nextOffsetAndWholeBatchesEnd();
            logEnd = ends[0];
            validEnd = (int) ends[1];
            lastSize = active.size();
        }
        if (committed > logEnd) {
            throw new CorruptLogException(dir + ": the log ends at offset " + logEnd + ", below its committed end "
                    + committed + ": committed records are lost (seglog verify reports which)");
        }
        long logStart = Math.max(bases[0], (logStarts != null ? logStarts : LogStartCheckpoint.read(root))
                .getOrDefault(topic + "-" + partition, 0L));
        if (committed < logStart) {
            // retention deleted records past the committed end: everything goes, the log restarts at the cut
            restart(root, dir, topic, partition, committed, bases);
            return new Result(true, committed);
        }
        long offset;
        long cutBase;
        int position;
        if (committed == logEnd) {
            if (lastSize == validEnd) {   // nothing past the committed end
                return new Result(false, logEnd, new Opened(bases, dense, epochs, logEnd, lastSize == 0));
            }
            // a torn tail after the last whole batch (a killed writer's): cut as the core's recovery cuts it
            offset = logEnd;
            cutBase = last;
            position = validEnd;
        } else {
            offset = committed;
            int i = floorIndex(bases, offset);
            if (i > 0 && bases[i] == offset) i--;   // a cut at a base removes that segment whole
            cutBase = bases[i];
            position = boundary(dir, cutBase, offset, dense, epochs);
        }
        RecoveryPointFile.lowerTo(dir, topic, partition, offset);
        String intent = "{\"offset\": " + offset + ", \"segment\": " + cutBase + ", \"position\": " + position + ", \"batch\": \"\"}";
        AtomicFile.write(dir.resolve(INTENT), intent.getBytes(StandardCharsets.US_ASCII));
        applyCut(dir, bases, offset, cutBase, position, indexBytes, dense, epochs);
        return new Result(true, offset);
    }

    /**
     * Steps 3 to 5 of a cut whose intent is written: idempotent, so that finishing an intent a killed driver left
     * ({@link #finishIntent}) runs them again from the start.
     */
    private static void applyCut(Path dir, long[] bases, long offset, long cutBase, long position, int indexBytes,
                                 boolean dense, int epochs) throws IOException {
        for (int j = bases.length - 1; j >= 0 && bases[j] > cutBase; j--) {   // from the top: a crash leaves a prefix
            renameDeleted(dir, bases[j]);
        }
        Path log = dir.resolve(Segment.fileName(cutBase, ".log"));
        try (FileChannel ch = RootFiles.openWritable(log, StandardOpenOption.WRITE)) {
            if (ch.size() < position) {
                throw new RecoveryNeededException(dir + ": " + INTENT + " cuts segment " + cutBase + " at position " + position
                        + " but its .log holds " + ch.size() + " bytes; `seglog recover` finishes it");
            }
            ch.truncate(position);
            ch.force(true);
        }
        long lastKey = truncateOffsetIndex(dir.resolve(Segment.fileName(cutBase, ".index")), cutBase, offset, indexBytes);
        truncateTimeIndex(dir.resolve(Segment.fileName(cutBase, ".timeindex")), cutBase,
                lastKey < 0 ? cutBase : Math.min(offset, lastKey + 1), indexBytes);
        String mismatch = tailMismatch(dir, cutBase, dense, epochs);
        if (mismatch != null) {
            throw new RecoveryNeededException(dir + ": after the cut to offset " + offset + " the indexes of segment " + cutBase
                    + " do not match its log (" + mismatch + "); " + INTENT + " is kept: `seglog recover` rebuilds them");
        }
        FileSync.directory(dir);
        Files.delete(dir.resolve(INTENT));
        FileSync.directory(dir);
    }

    /**
     * A truncation a killed driver left half done ({@code truncate.pending}, written by this class or by the core
     * without a rewritten batch): finished here as the core's recovery finishes it (finish_truncation), under the
     * partition's lock the caller holds, so a write after a crash at any instant of a roll back goes on instead of
     * waiting for the sidecar. An intent that rewrites a straddling batch (the core's, never this class's) is left
     * to the core: refused by {@link #refuseUnrecovered}. True if it finished one.
     */
    private static boolean finishIntent(Path root, Path dir, String topic, int partition, int indexBytes,
                                        OffsetGaps gaps) throws IOException {
        Path file = dir.resolve(INTENT);
        if (!Files.exists(file)) return false;
        com.fasterxml.jackson.databind.JsonNode intent;
        try {
            intent = new com.fasterxml.jackson.databind.ObjectMapper().readTree(Files.readAllBytes(file));
        } catch (IOException e) {
            throw new RecoveryNeededException(dir + ": " + INTENT + " cannot be read (" + e.getMessage()
                    + "); `seglog recover` finishes it");
        }
        if (intent == null || !intent.path("offset").canConvertToLong() || !intent.path("segment").canConvertToLong()) {
            throw new RecoveryNeededException(dir + ": " + INTENT + " is not an intent this reader knows; `seglog recover` finishes it");
        }
        long offset = intent.path("offset").asLong();
        long segment = intent.path("segment").asLong();
        if (segment != -1 && (!intent.path("batch").asText("").isEmpty() || !intent.path("position").canConvertToLong())) {
            return false;   // a rewritten straddling batch: the core's recovery
        }
        List<Long> swaps = new ArrayList<>();
        long[] bases = PartitionLog.listBases(dir, swaps);
        if (!swaps.isEmpty()) return false;
        if (segment == -1) {
            restart(root, dir, topic, partition, offset, bases);
            return true;
        }
        boolean dense = !gaps.mayHaveGaps(topic, partition);
        int epochs = LeaderEpochs.maxLeaderEpoch(dir);
        long position = intent.path("position").asLong();
        // the intent must name the batch boundary of its offset in its segment, as the cut that wrote it found it
        // (the bytes below the cut are never changed by a cut, so a partly applied one finds it again)
        if (java.util.Arrays.binarySearch(bases, segment) < 0 || boundary(dir, segment, offset, dense, epochs) != position) {
            throw new RecoveryNeededException(dir + ": " + INTENT + " cuts segment " + segment + " at position " + position
                    + " for offset " + offset + ", which is not that offset's batch boundary there; `seglog recover` finishes it");
        }
        applyCut(dir, bases, offset, segment, position, indexBytes, dense, epochs);
        return true;
    }

    /**
     * The core's full truncation (finish_truncation with segment -1): the intent, every segment renamed
     * {@code .deleted} from the top, the partition's log start checkpointed at the cut (before the new
     * segment appears: a reader lists the segments first and reads the checkpoint after), an empty segment
     * at the cut. Its index files are created before its {@code .log} (a new segment's order), where the core
     * leaves them to its next writable open to rebuild.
     */
    private static void restart(Path root, Path dir, String topic, int partition, long offset, long[] bases) throws IOException {
        RecoveryPointFile.lowerTo(dir, topic, partition, offset);
        AtomicFile.write(dir.resolve(INTENT), ("{\"offset\": " + offset + ", \"segment\": -1}").getBytes(StandardCharsets.US_ASCII));
        for (int j = bases.length - 1; j >= 0; j--) renameDeleted(dir, bases[j]);
        try (FileLock lock = new FileLock(FileLock.lockPath(root, LogStartCheckpoint.FILE), "log start offset checkpoint")
                .acquire(null)) {
            java.util.Map<String, Long> entries = LogStartCheckpoint.read(root);
            entries.put(topic + "-" + partition, offset);
            LogStartCheckpoint.write(root, entries);
        }
        boolean shared = GroupShared.isShared(dir);
        for (String suffix : new String[] {".index", ".timeindex", ".log"}) {
            // a restart killed after renaming a segment of this base's .log but before its indexes left them
            // behind (its .log is gone, so no reader has them): they go, and the new segment's are made
            Path file = dir.resolve(Segment.fileName(offset, suffix));
            if (!suffix.equals(".log")) Files.deleteIfExists(file);
            GroupShared.createNew(file, shared).close();
        }
        FileSync.directory(dir);
        Files.delete(dir.resolve(INTENT));
        FileSync.directory(dir);
    }

    /**
     * The remote end is at most the log end (only sealed segments are copied), so a committed end below it means a
     * cut (or a restart) that would remove tiered offsets: refused first, before an intent is finished or written.
     */
    private static void refuseBelowRemoteEnd(Path dir, Path root, String topic, int partition, long committed) {
        long floor = RemoteSegmentLog.mutableFrom(root, topic, partition);
        if (committed < floor) {
            throw new TieredOffsetsException(dir + ": cannot roll partition " + topic + "-" + partition
                    + " back to its committed end " + committed + ": offsets up to " + (floor - 1) + " are tiered to the "
                    + "remote tier, and what is tiered is immutable (docs/tiered-storage.md §4); nothing was changed");
        }
    }

    /** Traces only the core's writable open finishes: refused, named (each name of the roll back's listing). */
    private static void refuseUnrecovered(Path dir, String name) {
        if (name.equals(INTENT) || name.endsWith(".swap")) {
            throw new RecoveryNeededException(dir + " holds " + name + " (an interrupted "
                    + (name.equals(INTENT) ? "truncation" : "clean or merge swap") + "): the Python core's "
                    + "writable open finishes it (`seglog recover`, or the sidecar); the JVM writes nothing there");
        }
    }

    private static int floorIndex(long[] bases, long offset) {
        int lo = 0, hi = bases.length;   // first base > offset
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (bases[mid] <= offset) lo = mid + 1; else hi = mid;
        }
        return lo - 1;
    }

    /** The position where the records at {@code offset} and after begin in the segment at {@code base}:
     *  every batch below it judged; a batch holding it and records below it is refused. */
    private static int boundary(Path dir, long base, long offset, boolean dense, int epochs) {
        try (Segment seg = Segment.open(dir, base, dense, epochs)) {
            Segment.Batches it = seg.batchesBelow(offset);
            long lastDrawn = -1;
            while (it.hasNext()) {
                FileChannelRecordBatch b = it.next();
                lastDrawn = b.lastOffset();
            }
            if (lastDrawn >= offset) {
                throw new CorruptLogException(seg.path() + ": the batch ending at offset " + lastDrawn + " straddles the committed end "
                        + offset + "; a committed end is a batch boundary (a commit is made at a log end): not cut");
            }
            return it.position();
        }
    }

    /** As the core's rename_deleted: the {@code .log} first, so a crash leaves at worst index files without one. */
    private static void renameDeleted(Path dir, long base) throws IOException {
        for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
            Path f = dir.resolve(Segment.fileName(base, suffix));
            try {
                Files.move(f, f.resolveSibling(f.getFileName() + ".deleted"), StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            } catch (NoSuchFileException e) {
                // already renamed (a roll back run again after a crash)
            }
        }
    }

    /** Keep the offset index entries with keys below {@code offset}; returns the last kept key, or -1. */
    private static long truncateOffsetIndex(Path path, long base, long offset, int indexBytes) throws IOException {
        OffsetIndexFile index = OffsetIndexFile.open(path, base);
        int keep = 0;
        while (keep < index.entries() && index.offsetAt(keep) < offset) keep++;
        truncateEntries(path, index.entries(), keep, OFFSET_ENTRY, indexBytes);
        return keep == 0 ? -1 : index.offsetAt(keep - 1);
    }

    /** Keep the time index entries whose offset is below {@code offset}. */
    private static void truncateTimeIndex(Path path, long base, long offset, int indexBytes) throws IOException {
        TimeIndexFile index = TimeIndexFile.open(path, base);
        int keep = 0;
        while (keep < index.entries() && index.offsetAt(keep) < offset) keep++;
        truncateEntries(path, index.entries(), keep, TIME_ENTRY, indexBytes);
    }

    /**
     * Zero slots {@code keep..entries} from the last backwards (a reader counting entries never sees a hole),
     * then, when the file is not preallocated to segment.index.bytes, trim it to its entries so that no zero
     * slot is counted as the time index's all-zero first entry (the core's MmapIndex._truncate_entries).
     */
    private static void truncateEntries(Path path, int entries, int keep, int entrySize, int indexBytes) throws IOException {
        try (FileChannel ch = RootFiles.openWritable(path, StandardOpenOption.WRITE)) {
            if (keep < entries) {
                ByteBuffer zero = ByteBuffer.allocate(entrySize);
                for (int slot = entries - 1; slot >= keep; slot--) {
                    zero.clear();
                    while (zero.hasRemaining()) ch.write(zero, (long) slot * entrySize + zero.position());
                }
            }
            long slots = ch.size() / entrySize;
            long target = (indexBytes - indexBytes % entrySize) / entrySize;
            if (keep < entries && target > slots) {
                ch.truncate((long) keep * entrySize);
            }
        }
    }

    /** The core's _tail_matches_index after the cut: the last offset index entry names a batch ending at its
     *  key, and the last time index entry (T, O) the batch ending at O, whose largest timestamp is T. */
    private static String tailMismatch(Path dir, long base, boolean dense, int epochs) {
        try (Segment seg = Segment.open(dir, base, dense, epochs)) {
            OffsetIndexFile oi = seg.offsetIndex();
            if (oi.entries() > 0) {
                int n = oi.entries() - 1;
                Segment.Batches it = seg.batchesFrom(oi.positionAt(n), -1, oi.offsetAt(n), Long.MAX_VALUE);
                if (!it.hasNext()) return "the last offset index entry names no batch";
            }
            TimeIndexFile ti = seg.timeIndex();
            if (ti.entries() > 0) {
                long ts = ti.timestampAt(ti.entries() - 1);
                long at = ti.offsetAt(ti.entries() - 1);
                Segment.Batches it = seg.batchesHolding(at, Long.MAX_VALUE);
                while (it.hasNext()) {
                    FileChannelRecordBatch b = it.next();
                    if (b.lastOffset() >= at) {
                        return b.lastOffset() == at && b.maxTimestamp() == ts ? null
                                : "the last time index entry (" + ts + ", " + at + ") names no batch ending there with that timestamp";
                    }
                }
                return "the last time index entry's offset " + at + " is past the log";
            }
            return null;
        } catch (CorruptLogException e) {
            return e.getMessage();
        }
    }
}
