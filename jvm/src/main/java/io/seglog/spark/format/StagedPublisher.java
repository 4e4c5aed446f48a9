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

/**
 * Publishing staged segments at a partition's log end, as the Python core's tests/oracles/staged.py {@code publish}
 * and the sink around it (a writable Log open, publish, flush, close), step for step, so that the folder the
 * JVM leaves is the one the core leaves for the same staged segments (tests/sink/test_jvm_formats.py and
 * tests/sink/test_jvm_copy.py compare every file byte for byte). The caller holds the partition's lock and has
 * rolled the partition back to its committed end.
 *
 * <p>Each staged segment with records goes in one of two ways (the core's rule and threshold, {@link
 * #RENAME_MIN_BYTES} unless the write says otherwise): runs of those of at least {@code renameMinBytes} are
 * renamed in together; smaller ones are copied onto the active segment, so micro-batches leave no tiny
 * segments.
 *
 * <p>Copy (the core's _copy over Log.append_encoded): the staged batches, read in runs of whole batches of at
 * most {@link #COPY_CHUNK_BYTES}, get their base offsets (log end + relative base) and, when the partition's
 * write epoch is not 0 (an imported folder), its leader epoch, both outside the CRC; batches stay as the stager
 * compressed them (the topic's codec). They go through {@link ActiveSegment}: the core's roll rule per batch
 * (a roll seals the active segment and starts one at the log end), its index rule, and the bytes-since-entry
 * and largest-timestamp state as a reopen loads it.
 *
 * <p>Rename (the core's _rename and the oracle's adopt_segments):
 * <ol>
 * <li>Each staged batch's base offset and partition leader epoch are patched in place, one write per batch.
 *   The {@code .log} is forced, and the indexes unless the stager already forced them: a sealed segment is
 *   trusted once renamed in. A driver patches every partition's at once before the publishes ({@link
 *   #patchesBefore}); the publish then checks each is where its patch put it.</li>
 * <li>The active segment is sealed (its seal entry, both indexes trimmed; no fsync: the end makes it durable),
 *   or, empty, removed ({@code .log} first, so no reader lists a segment without its indexes).</li>
 * <li>Each staged segment's {@code .index}, {@code .timeindex} and, last, {@code .log} are renamed to
 *   {@code <B>.*} (a segment exists when its {@code .log} does); the last becomes the active segment.</li>
 * </ol>
 *
 * <p>At the end, as the core's flush and close: the segments sealed here are forced ({@code .log} and indexes),
 * the active segment's {@code .log} forced and its indexes trimmed to their entries, the recovery point raised to
 * the active segment's base when segments rolled (the segments it newly covers forced first; the file written and
 * forced under a temporary name, renamed), and the folder fsynced once, for the segments' names and the point's, when
 * its entries changed ({@code Publish#entriesChanged}: a steady micro-batch, appending to the active segment's files,
 * changes none). Everything is durable before the commit that makes it visible.
 *
 * <p>Crash safety: nothing here is visible before the commit (readers stop at the committed end, docs/spec.md
 * §4); a kill part way leaves records past the committed end (a copy's bytes, even a torn batch, or renamed
 * segments), which the next write's {@link CommittedEndRollBack} cuts.
 */
public final class StagedPublisher {
    /** Staged segments smaller than this are copied, larger ones renamed in (the core's RENAME_MIN_BYTES). */
    public static final long RENAME_MIN_BYTES = 1L << 20;
    /** The copy reads at most this much of a staged {@code .log} at once (the core's COPY_CHUNK_BYTES). */
    static final long COPY_CHUNK_BYTES = 16L << 20;

    /** The one rule of which staged segments are renamed in (the rest are copied): those of at least {@code
     *  renameMinBytes} with files; one sent whole with its task's report (InlineSegmentBudget) has none, and is copied. */
    static boolean renamed(StagedSegment s, long renameMinBytes) {
        return s.size() >= renameMinBytes && s.data() == null;
    }
    private static final int META = 36;

    private StagedPublisher() {}

    /** What a publish did: the log end before and after, the base offsets of the segments renamed in, how many
     *  staged segments were copied, and whether it fsynced the folder (not compared: how, not what). */
    public static final class Result {
        private final long start;
        private final long end;
        private final List<Long> bases;
        private final int copied;
        private final boolean folderSynced;

        public Result(long start, long end, List<Long> bases, int copied) {
            this(start, end, bases, copied, false);
        }

        Result(long start, long end, List<Long> bases, int copied, boolean folderSynced) {
            this.start = start;
            this.end = end;
            this.bases = bases;
            this.copied = copied;
            this.folderSynced = folderSynced;
        }

        public long start() { return start; }
        public long end() { return end; }
        public List<Long> bases() { return bases; }
        public int copied() { return copied; }
        /** Whether the folder was fsynced: its entries changed (see Publish's entriesChanged). */
        public boolean folderSynced() { return folderSynced; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Result)) return false;
            Result that = (Result) o;
            return start == that.start
                    && end == that.end
                    && java.util.Objects.equals(bases, that.bases)
                    && copied == that.copied;
        }

        @Override public int hashCode() { return java.util.Objects.hash(start, end, bases, copied); }

        @Override public String toString() { return "Result[start=" + start + ", end=" + end + ", bases=" + bases + ", copied=" + copied + "]"; }
    }

    /**
     * Put {@code staged} (in order) at the end of {@code <root>/<topic>-<partition>} under the topic's
     * {@code rules}; every staged batch must carry the topic's codec (the stager compresses with it). Staged
     * segments below {@code renameMinBytes} are copied.
     */
    public static Result publish(Path root, String topic, int partition, List<StagedSegment> staged, AppendRules rules,
                                 long renameMinBytes) {
        return publish(root, topic, partition, staged, rules, renameMinBytes, null);
    }

    /**
     * {@link #publish(Path, String, int, List, AppendRules, long)} starting from the folder as the roll back just
     * made under the partition's lock, still held, read it ({@code opened}; null: read it here): its listing, gap
     * rule, epoch bound and log end are not read again.
     */
    public static Result publish(Path root, String topic, int partition, List<StagedSegment> staged, AppendRules rules,
                                 long renameMinBytes, CommittedEndRollBack.Opened opened) {
        return publish(root, topic, partition, staged, rules, renameMinBytes, opened, List.of());
    }

    /**
     * {@link #publish(Path, String, int, List, AppendRules, long, CommittedEndRollBack.Opened)} of staged segments some
     * of which the caller patched already ({@code patched}: {@link #patchesBefore}'s, each run): those are renamed in
     * unpatched again, each checked to be where its patch put it (else a {@link CorruptLogException}, nothing renamed).
     */
    public static Result publish(Path root, String topic, int partition, List<StagedSegment> staged, AppendRules rules,
                                 long renameMinBytes, CommittedEndRollBack.Opened opened, List<Patch> patched) {
        Path dir = TopicLayout.partitionDir(root, topic, partition);
        try {
            // a new partition's entry in the root is made durable there (GroupShared's invariant) before the commit
            // names its records; the folder's own fsync, at the publish's end, covers only the files in it
            if (opened == null && !Files.isDirectory(dir)) GroupShared.createDirectories(dir);   // else the roll back found it
            Publish publish = new Publish(root, dir, topic, partition, rules, opened);
            for (Patch p : patched) publish.patched.put(p.segment.stem(), p);
            return publish.run(staged, renameMinBytes);
        } catch (IOException e) {
            throw new StorageException(dir + ": publishing staged segments failed: " + e, e);
        }
    }

    /**
     * One staged segment's patch, as a publish that renames it in makes it ({@link #patch}: base offsets and leader
     * epochs written in place, then the {@code .log} forced), run by the caller before the publish: a driver runs every
     * partition's patches at once (issue 41: a partition's were forced one after another inside its publish, each an
     * fsync to wait for). The staged file is in the write's staging folder, named by nothing a reader lists: patched
     * or not, a kill leaves it to the next write's removal of crashed runs.
     */
    public static final class Patch {
        private final StagedSegment segment;
        private final long base;
        private final int epoch;

        Patch(StagedSegment segment, long base, int epoch) {
            this.segment = segment;
            this.base = base;
            this.epoch = epoch;
        }

        public void run() {
            try {
                patch(segment, base, epoch);
            } catch (IOException e) {
                throw new StorageException(segment.stem() + ".log: patching its base offsets failed: " + e, e);
            }
        }
    }

    /**
     * The patches a publish of {@code staged} into the partition's folder, as {@code opened} read it (null: as the
     * folder is, which must then hold no segment), would make before renaming segments in: each staged segment it
     * renames (records, and at least {@code renameMinBytes}) at the base the publish gives it, the log end plus the
     * records of every staged segment before it (copied or renamed: {@link #endAfter}'s rule), with the partition's
     * write epoch. Empty when the start is not known without the publish's own read (a roll back that cut: the publish
     * then patches them itself). The caller holds the partition's lock, and its folder exists.
     */
    public static List<Patch> patchesBefore(Path root, String topic, int partition, List<StagedSegment> staged,
                                            long renameMinBytes, CommittedEndRollBack.Opened opened) {
        Path dir = TopicLayout.partitionDir(root, topic, partition);
        try {
            long end;
            int epoch;
            if (opened != null) {
                end = opened.logEnd;
                epoch = writeEpoch(dir, opened.bases, opened.dense, opened.epochs);
            } else {
                if (!Files.isDirectory(dir) || PartitionLog.listBases(dir, null).length > 0) return List.of();
                // a new partition: the publish starts it at the checkpointed log start (Publish.run)
                end = LogStartCheckpoint.readFile(root.resolve("log-start-offset-checkpoint")).getOrDefault(topic + "-" + partition, 0L);
                epoch = writeEpoch(dir, new long[0], true, LeaderEpochs.maxLeaderEpoch(dir));
            }
            List<Patch> out = new ArrayList<>();
            for (StagedSegment s : staged) {
                if (s.records() <= 0) continue;
                if (renamed(s, renameMinBytes)) out.add(new Patch(s, end, epoch));
                end += s.records();
            }
            return out;
        } catch (IOException e) {
            throw new StorageException(dir + ": planning the patches of staged segments failed: " + e, e);
        }
    }

    /**
     * Where a publish of {@code staged} starting from the folder as {@code opened} read it ends the log: that end plus
     * the records of each staged segment that has any (a copy gives them the offsets from the log end on, a rename puts
     * the segment's base there). A driver writes its commit from this while the publish forces its files (issue 41),
     * and links it only when the publish ended there ({@link Result#end}).
     */
    public static long endAfter(CommittedEndRollBack.Opened opened, List<StagedSegment> staged) {
        long end = opened.logEnd;
        for (StagedSegment s : staged) if (s.records() > 0) end += s.records();
        return end;
    }

    /** One publish: the partition's segments as they change, the active segment while a copy appends to it. */
    private static final class Publish {
        private final Path root;
        private final Path dir;
        private final String topic;
        private final int partition;
        private final AppendRules rules;
        private final boolean dense;
        private final int epochs;
        private final List<Long> bases = new ArrayList<>();
        private final List<ActiveSegment> sealed = new ArrayList<>();   // sealed here, forced at the end
        private final List<Long> adopted = new ArrayList<>();
        final java.util.Map<String, Patch> patched = new java.util.HashMap<>();   // by stem: patched by the caller
        private final CommittedEndRollBack.Opened opened;   // the folder as the roll back read it, or null
        private ActiveSegment active;        // open while copies append to it
        private long end;
        private long openedEnd;
        private int epoch;
        private int copied;
        private int appends;                 // runs of batches appended by copies (the crash test's count)
        /**
         * Whether the folder needs its fsync before the commit. Invariant: every entry of the folder that names a
         * committed record is durable (each commit's publish, and the core's flush after a roll, fsync the folder
         * before the commit). So a publish must fsync it only when it made an entry the commit will name or whose
         * loss would matter: a file created (an active segment, a roll's), renamed in, or removed (an empty active
         * segment before a rename, whose name the renamed segment then takes), each set where it happens; or when it
         * starts from an empty last segment: made by a publish that was killed or failed before its folder's fsync,
         * which the roll back leaves (it holds nothing past the committed end), so its entry may not be durable yet.
         * A roll back that cut fsynced the folder itself after its removals (CommittedEndRollBack: the intent's
         * protocol); anything else a killed publish left holds records past the committed end, and the next roll
         * back cuts it, with that fsync. A steady micro-batch only appends to the active segment's existing files:
         * their sizes are the files' own metadata, forced with them, and the folder is not fsynced (issue 41: one
         * fsync a partition; the Python core's rule, SegmentList.flush_rolled).
         */
        private boolean entriesChanged;

        Publish(Path root, Path dir, String topic, int partition, AppendRules rules, CommittedEndRollBack.Opened opened) {
            this.root = root;
            this.dir = dir;
            this.topic = topic;
            this.partition = partition;
            this.rules = rules;
            this.opened = opened;
            this.dense = opened != null ? opened.dense : !OffsetGaps.at(root).mayHaveGaps(topic, partition);
            this.epochs = opened != null ? opened.epochs : LeaderEpochs.maxLeaderEpoch(dir);
        }

        Result run(List<StagedSegment> staged, long renameMinBytes) throws IOException {
            List<StagedSegment> todo = new ArrayList<>();
            for (StagedSegment s : staged) if (s.records() > 0) todo.add(s);
            for (StagedSegment s : todo) checkCodec(s, rules.codec());   // refused before anything is written
            for (long b : opened != null ? opened.bases : PartitionLog.listBases(dir, null)) bases.add(b);
            long point = RecoveryPointFile.read(dir, topic, partition);
            if (opened != null) {
                end = opened.logEnd;   // the roll back found whole batches only, ending there
                if (opened.lastEmpty) entriesChanged = true;   // see entriesChanged
            } else if (bases.isEmpty()) {
                // a new partition: the core's writable open starts it at the checkpointed log start
                end = LogStartCheckpoint.readFile(root.resolve("log-start-offset-checkpoint")).getOrDefault(topic + "-" + partition, 0L);
            } else {
                try (Segment seg = Segment.open(dir, last(), dense, epochs)) {
                    end = seg.nextOffset();
                    if (seg.size() == 0) entriesChanged = true;   // see entriesChanged
                    if (seg.wholeBatchesEnd() != seg.size()) {
                        throw new CorruptLogException(seg.path() + ": bytes after the last whole batch at position "
                                + seg.wholeBatchesEnd() + ": roll the partition back to its committed end first");
                    }
                }
            }
            openedEnd = end;
            long start = end;
            epoch = writeEpoch(dir, bases.stream().mapToLong(Long::longValue).toArray(), dense, epochs);
            try {
                List<StagedSegment> run = new ArrayList<>();
                for (StagedSegment s : todo) {
                    if (renamed(s, renameMinBytes)) {
                        run.add(s);
                        continue;
                    }
                    if (!run.isEmpty()) renameIn(run);
                    run.clear();
                    copy(s);
                    copied++;
                }
                if (!run.isEmpty()) renameIn(run);
                finish(point);
            } finally {
                closeAll();
            }
            return new Result(start, end, adopted, copied, entriesChanged);
        }

        private long last() {
            return bases.get(bases.size() - 1);
        }

        /** The active segment open for appends: the last one, or a new one at the log end in an empty folder. */
        private ActiveSegment active() throws IOException {
            if (active == null) {
                if (bases.isEmpty()) {
                    entriesChanged = true;
                    active = ActiveSegment.create(dir, end, rules, System.currentTimeMillis());
                    bases.add(end);
                } else {
                    active = ActiveSegment.open(dir, last(), rules, dense, epochs);
                }
            }
            return active;
        }

        /** The core's roll: the active segment sealed (forced at the end), a new one at the log end. */
        private ActiveSegment roll() throws IOException {
            active.seal();
            sealed.add(active);
            entriesChanged = true;
            active = ActiveSegment.create(dir, active.nextOffset(), rules, System.currentTimeMillis());
            bases.add(active.base);
            return active;
        }

        /** One staged segment copied onto the active segment, in runs of whole batches of at most COPY_CHUNK_BYTES. */
        private void copy(StagedSegment s) throws IOException {
            ByteBuffer meta = readMeta(s);
            int n = s.batches();
            long[] pos = new long[n + 1];
            for (int i = 0; i < n; i++) pos[i] = meta.getLong(i * META);
            pos[n] = s.size();
            // a segment sent whole with the task's report is read from it (no file: InlineSegmentBudget)
            try (FileChannel ch = s.data() != null ? null : FileChannel.open(Path.of(s.stem() + ".log"), StandardOpenOption.READ)) {
                int i = 0;
                while (i < n) {
                    long from = pos[i];
                    int j = i + 1;
                    while (j < n && pos[j + 1] <= from + COPY_CHUNK_BYTES) j++;
                    ByteBuffer data = ByteBuffer.allocate((int) (pos[j] - from));
                    if (ch == null) data.put(s.data(), (int) from, data.capacity());   // patched below: a copy
                    while (data.hasRemaining()) {
                        if (ch.read(data, from + data.position()) < 0) {
                            throw new CorruptLogException(s.stem() + ".log: short read at " + (from + data.position()));
                        }
                    }
                    int k = j - i;
                    long[] positions = new long[k + 1];
                    long[] lasts = new long[k];
                    long[] firsts = new long[k];
                    long[] maxes = new long[k];
                    long firstRel = meta.getLong(i * META + 8) - meta.getInt(i * META + 32) + 1;
                    for (int b = 0; b < k; b++) {
                        int m = (i + b) * META;
                        positions[b] = pos[i + b] - from;
                        long count = meta.getInt(m + 32);
                        long baseOffset = end + meta.getLong(m + 8) - count + 1 - firstRel;
                        lasts[b] = baseOffset + count - 1;
                        firsts[b] = meta.getLong(m + 16);
                        maxes[b] = meta.getLong(m + 24);
                        data.putLong((int) positions[b], baseOffset);                 // outside the CRC
                        if (epoch != LeaderEpochs.SEGLOG_LEADER_EPOCH) data.putInt((int) positions[b] + 12, epoch);
                    }
                    positions[k] = pos[j] - from;
                    append(new CopiedBatches(data.clear(), positions, lasts, firsts, maxes));
                    i = j;
                }
            }
        }

        /** The core's Log._write_batches: each batch where the roll rule puts it, runs of them at once. */
        private void append(CopiedBatches b) throws IOException {
            long now = System.currentTimeMillis();
            ActiveSegment seg = active();
            int i = 0;
            while (i < b.count) {
                if (!seg.fits(b.size(i), b.lastOffsets[i], b.maxTs[i], now)) seg = roll();
                int j = seg.batchesThatFit(b, i, now);
                seg.append(b, i, j);
                crashPoint(++appends);
                i = j;
            }
            end = seg.nextOffset();
        }

        /** A run of large staged segments renamed in (the core's _rename and the oracle's adopt_segments). */
        private void renameIn(List<StagedSegment> run) throws IOException {
            entriesChanged = true;   // renamed in, and an empty active segment removed
            long base = end;
            for (StagedSegment s : run) {
                Patch done = patched.get(s.stem());
                if (done == null) {
                    patch(s, base, epoch);
                } else if (done.base != base || done.epoch != epoch) {   // never renamed in where its offsets are not
                    throw new CorruptLogException(s.stem() + ".log: patched for base " + done.base + " (epoch " + done.epoch
                            + "), published at " + base + " (epoch " + epoch + ")");
                }
                base += s.records();
            }
            ActiveSegment current = active;
            active = null;
            if (current == null && !bases.isEmpty()) {
                Path log = dir.resolve(Segment.fileName(last(), ".log"));
                if (Files.size(log) > 0) {
                    current = ActiveSegment.open(dir, last(), rules, dense, epochs);
                } else {
                    for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
                        Files.deleteIfExists(dir.resolve(Segment.fileName(last(), suffix)));
                    }
                    bases.remove(bases.size() - 1);
                }
            }
            if (current != null) {
                if (current.size() > 0) {
                    current.seal();
                    sealed.add(current);
                } else {   // a copy never leaves an empty active segment; a roll back's restart does
                    current.close();
                    for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
                        Files.deleteIfExists(current.file(suffix));
                    }
                    bases.remove(bases.size() - 1);
                }
            }
            base = end;
            for (StagedSegment s : run) {
                for (String suffix : new String[] {".index", ".timeindex", ".log"}) {
                    Files.move(Path.of(s.stem() + suffix), dir.resolve(Segment.fileName(base, suffix)),
                            StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                }
                adopted.add(base);
                bases.add(base);
                base += s.records();
            }
            end = base;
        }

        /** The core's flush and close: durable, the active indexes trimmed, the recovery point raised. */
        private void finish(long point) throws IOException {
            if (active == null) {
                if (bases.isEmpty()) {
                    active();                       // the core's writable open leaves an empty segment
                } else if (adopted.isEmpty() || adopted.get(adopted.size() - 1) != last()) {
                    active();                       // untouched: its indexes are trimmed as a clean close does
                }
            }
            for (ActiveSegment s : sealed) s.force(true);
            if (active != null) {
                active.trim();
                active.force(false);
            }
            // One fsync of the folder makes both durable: the names this publish made (segments renamed in, rolled,
            // sealed) and the raised recovery point's (issue 41: the point's own folder fsync came after this one, one
            // more journal commit per partition on the publish's path). Invariant: the point's name may reach the disk
            // before a segment's (POSIX orders neither), and that is safe, since every segment file below the point
            // had its data forced before it got its name (patched and forced before its rename, sealed and forced
            // above, or forced by the raise): whichever names a crash keeps, the point vouches only for durable,
            // sealed segments (a missing index is rebuilt, the last segment always examined), and everything past the
            // committed end is cut by the next roll back, which lowers the point first.
            if (raiseRecoveryPoint(point)) entriesChanged = true;   // the point's new name
            if (entriesChanged) FileSync.directory(dir);
        }

        /**
         * The core's _advance_recovery_point at its close: to the active segment's base when that is above the
         * point, after forcing the segments it newly covers that were there before this publish, except the ones
         * sealed here: {@link #finish} forced those already, .log and both indexes, after their seal (issue 41: the
         * previous write's active segment, sealed by a rename, was forced twice, 3 fsyncs a partition more). A failed
         * write leaves the old point, which stays true. Whether the point's file was renamed in (its name wants the
         * folder's fsync).
         */
        private boolean raiseRecoveryPoint(long point) throws IOException {
            long to = last();
            if (to <= point) return false;
            java.util.Set<Long> forced = new java.util.HashSet<>();
            for (ActiveSegment s : sealed) forced.add(s.base);
            for (int i = 0; i < bases.size(); i++) {
                long next = i + 1 < bases.size() ? bases.get(i + 1) : end;
                if (next > point && bases.get(i) < openedEnd && next <= to && !forced.contains(bases.get(i))) {
                    for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
                        FileSync.file(dir.resolve(Segment.fileName(bases.get(i), suffix)));
                    }
                }
            }
            try {
                RecoveryPointFile.writeUnsynced(dir, topic, partition, to);   // its name made durable by finish's fsync
                return true;
            } catch (IOException e) {
                // a full disk, a read-only file: the old point stays true (it covers durable segments only)
                return false;
            }
        }

        private void closeAll() throws IOException {
            IOException first = null;
            List<ActiveSegment> all = new ArrayList<>(sealed);
            if (active != null) all.add(active);
            for (ActiveSegment s : all) {
                try {
                    s.close();
                } catch (IOException e) {
                    if (first == null) first = e;
                }
            }
            if (first != null) throw first;
        }
    }

    static final String CRASH_POINT = "seglog.test.copyCrashPoint";

    /**
     * Where the crash test kills a copy part way (tests/sink/test_jvm_copy.py): with the system property
     * {@code seglog.test.copyCrashPoint=<marker file>@<n>}, the n-th run of batches a publish appends creates the
     * marker and waits to be killed. Unset (always, outside that test), it does nothing.
     */
    private static void crashPoint(int appends) {
        String spec = System.getProperty(CRASH_POINT);
        if (spec == null) return;
        int at = spec.lastIndexOf('@');
        if (at < 0 || !spec.substring(at + 1).equals(Integer.toString(appends))) return;
        try {
            Files.writeString(Path.of(spec.substring(0, at)), "waiting to be killed\n");
            Thread.sleep(600_000L);
        } catch (IOException | InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A staged segment's {@code .batches}: one 36-byte row per batch (position, relative last offset, first
     *  and largest timestamp, record count), as the task sent them with its report or, if it did not, read from
     *  the file. */
    private static ByteBuffer readMeta(StagedSegment s) throws IOException {
        byte[] rows = s.batchRows() != null ? s.batchRows() : Files.readAllBytes(Path.of(s.stem() + ".batches"));
        ByteBuffer meta = ByteBuffer.wrap(rows).asReadOnlyBuffer();
        if (meta.capacity() != s.batches() * META) {
            throw new CorruptLogException(s.stem() + ".batches: " + meta.capacity() / META + " batches, the writer reported " + s.batches());
        }
        return meta;
    }

    private static void checkCodec(StagedSegment s, int codec) throws IOException {
        if (s.data() != null) {
            if (s.data().length <= 22) throw new CorruptLogException(s.stem() + ".log: no batch header");
            if ((s.data()[22] & 0x07) != codec) {
                throw new CorruptLogException(s.stem() + ".log: batches in codec " + (s.data()[22] & 0x07) + ", the topic writes codec " + codec);
            }
            return;
        }
        try (FileChannel ch = FileChannel.open(Path.of(s.stem() + ".log"), StandardOpenOption.READ)) {
            ByteBuffer attr = ByteBuffer.allocate(1);
            if (ch.read(attr, 22) != 1) throw new CorruptLogException(s.stem() + ".log: no batch header");
            int found = attr.get(0) & 0x07;
            if (found != codec) {
                throw new CorruptLogException(s.stem() + ".log: batches in codec " + found + ", the topic writes codec " + codec);
            }
        }
    }

    /**
     * The partition's write epoch (the core's Log.write_leader_epoch): 0 in seglog's folders; in a folder
     * imported from a Kafka broker (a leader-epoch-checkpoint), the checkpoint's largest epoch or the last
     * batch's, whichever is larger, so epochs never decrease and the checkpoint needs no new entry.
     */
    static int writeEpoch(Path dir, long[] bases, boolean dense, int epochs) throws IOException {
        if (epochs == LeaderEpochs.SEGLOG_LEADER_EPOCH) return LeaderEpochs.SEGLOG_LEADER_EPOCH;
        int max = 0;
        try {
            List<String> lines = Files.readAllLines(dir.resolve(LeaderEpochs.CHECKPOINT), StandardCharsets.UTF_8);
            for (String line : lines.subList(Math.min(2, lines.size()), lines.size())) {
                if (!line.isBlank()) max = Math.max(max, Integer.parseInt(line.strip().split("\\s+")[0]));
            }
        } catch (NoSuchFileException | NumberFormatException e) {
            // unreadable: the core's checkpoint_max_epoch says -1, and the last batch decides
        }
        for (int i = bases.length - 1; i >= 0; i--) {
            try (Segment seg = Segment.open(dir, bases[i], dense, epochs)) {
                if (seg.size() == 0) continue;
                Segment.Batches it = seg.batchesHolding(seg.nextOffset() - 1, Long.MAX_VALUE);
                int last = 0;
                while (it.hasNext()) last = it.next().partitionLeaderEpoch();
                return Math.max(max, last);
            }
        }
        return max;
    }

    /** Base offsets and leader epochs written in place, one 16-byte write per batch, then the .log forced. */
    private static void patch(StagedSegment s, long base, int epoch) throws IOException {
        ByteBuffer meta = readMeta(s);
        try (FileChannel ch = FileChannel.open(Path.of(s.stem() + ".log"), StandardOpenOption.WRITE)) {
            ByteBuffer head = ByteBuffer.allocate(16);
            for (int i = 0; i < s.batches(); i++) {
                long position = meta.getLong(i * META);
                long last = meta.getLong(i * META + 8);
                int count = meta.getInt(i * META + 32);
                long next = i + 1 < s.batches() ? meta.getLong((i + 1) * META) : s.size();
                head.clear();
                head.putLong(base + last - count + 1).putInt((int) (next - position - 12)).putInt(epoch).flip();
                while (head.hasRemaining()) ch.write(head, position + head.position());
            }
            ch.force(false);  // the real offsets durable before the rename (data only: the size did not change)
        }
        if (!s.durable()) {
            FileSync.file(Path.of(s.stem() + ".index"));
            FileSync.file(Path.of(s.stem() + ".timeindex"));
        }
    }

}
