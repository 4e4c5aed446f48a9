package io.seglog.spark.format;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.RecordBatch;

/**
 * One segment read-only: its {@code .log} through Kafka's {@link FileRecords} (positional reads) and its
 * two indexes. A segment exists when its {@code .log} does; its indexes are created before it and renamed
 * away after it (docs/format.md "Segment states"). The three files are opened together, so they are one
 * segment's, whatever a merge, a clean or retention renames afterwards (an open file keeps its bytes).
 */
public final class Segment implements Closeable {
    public static final String LOG = ".log";
    /** A record batch header, magic 2 (docs/format.md "Record batches"), and its base offset + length prefix. */
    static final int HEADER = 61;
    static final int LOG_OVERHEAD = 12;
    /** Milliseconds a reader waits for a missing index to appear, as the core's _INDEX_SETTLE_WAITS. */
    private static final long[] INDEX_SETTLE_WAITS_MS = {2, 10, 50, 100, 200};

    public final long base;
    /** Offsets run on from batch to batch (each base = the previous last + 1); false where compaction may
     *  have left gaps ({@link OffsetGaps}): then each batch must only start above the previous one. */
    public final boolean dense;
    /** The largest partition leader epoch a batch may carry ({@link LeaderEpochs#maxLeaderEpoch}): 0 in a
     *  folder seglog wrote, any in a Kafka broker's (one with a leader-epoch-checkpoint). */
    public final int maxLeaderEpoch;
    private final Path logPath;
    private final FileRecords records;
    private final int size;
    private OffsetIndexFile offsetIndex;       // a tiered segment's: fetched on first need (offsetIndex())
    private FileChannel timeIndexFile;         // opened with the .log (a tiered one's fetched on first need), its entries read on first need
    private TimeIndexFile timeIndex;
    /** A tiered segment's indexes, fetched from the remote tier on first need: a whole read from its start
     *  needs neither (planning and a walk from position 0 use the record's size and offsets), so a replay
     *  costs the .log's bytes and nothing per segment beside them. Null for a local segment. */
    private RemoteIndexes remoteIndexes;
    private long largest = Long.MIN_VALUE;     // computed on first need
    /** A tiered segment's bytes in this JVM, fetched as its walks reach them; null for a local segment. */
    private RemoteSegmentCache.CachedLog fill;
    private RemoteSegmentCache.CachedLog.ChunkChannel remoteBytes;   // its bytes as Kafka's FileRecords reads them
    /** What errors name: the .log's path, or a tiered segment's object URI. */
    private String where;
    private long knownNext = -1;               // a tiered segment's next offset, from its record
    private boolean released;                  // a tiered segment's hold on its copy given back (close)

    private Segment(long base, boolean dense, int maxLeaderEpoch, Path logPath, FileRecords records,
                    OffsetIndexFile offsetIndex, FileChannel timeIndexFile) {
        this.base = base;
        this.dense = dense;
        this.maxLeaderEpoch = maxLeaderEpoch;
        this.logPath = logPath;
        this.records = records;
        this.size = records.sizeInBytes();
        this.offsetIndex = offsetIndex;
        this.timeIndexFile = timeIndexFile;
        this.where = logPath.toString();
    }

    public static String fileName(long base, String suffix) {
        return String.format("%020d%s", base, suffix);
    }

    /** Segments opened in this JVM: what a driver path costs grows with it (tests hold planning to the
     *  segments a read covers, not the history before them). */
    private static final java.util.concurrent.atomic.LongAdder OPENS = new java.util.concurrent.atomic.LongAdder();

    public static long opens() {
        return OPENS.sum();
    }

    /** Record batches read whole in this JVM (to check a CRC or to decode records): what a header-only walk
     *  ({@link Batches#checkingCrcs} false) must not grow but at the range's ends (tests hold the pushed count to it). */
    private static final java.util.concurrent.atomic.LongAdder BODIES_READ = new java.util.concurrent.atomic.LongAdder();

    public static long batchBodiesRead() {
        return BODIES_READ.sum();
    }

    /**
     * Opens the segment's three files. The {@code .log} first: retention renames it first (the core's
     * rename_deleted), so an index missing after it is a deletion when the {@code .log} name is gone too
     * ({@link SegmentGoneException}: the caller lists again), or else an index that is lost: reported
     * naming it, as the core's read-only open does (indexer/segment_list.py), never read as "no entries"
     * (a missing time index under-estimates the largest timestamp, and a seek would skip the segment).
     */
    public static Segment open(Path dir, long base, boolean dense) {
        return open(dir, base, dense, LeaderEpochs.maxLeaderEpoch(dir));
    }

    /** {@link #open(Path, long, boolean)} with the folder's leader epoch bound already known (a
     *  {@link PartitionLog} reads it once for all its segments). */
    public static Segment open(Path dir, long base, boolean dense, int maxLeaderEpoch) {
        OPENS.increment();
        Path log = dir.resolve(fileName(base, LOG));
        FileRecords records = null;
        FileChannel timeIndex = null;
        try {
            RootFiles.refuseSymlink(log);     // FileRecords opens its file itself: the link is refused before
            records = FileRecords.open(log.toFile(), false);
            OffsetIndexFile offsetIndex;
            boolean emptyLog = records.sizeInBytes() == 0;
            try (FileChannel ch = openIndex(dir, base, ".index", "offset index", log, emptyLog)) {
                offsetIndex = OffsetIndexFile.read(ch, base);
            }
            timeIndex = openIndex(dir, base, ".timeindex", "time index", log, emptyLog);
            Segment seg = new Segment(base, dense, maxLeaderEpoch, log, records, offsetIndex, timeIndex);
            records = null;
            timeIndex = null;
            return seg;
        } catch (NoSuchFileException e) {
            throw new SegmentGoneException(log + " was deleted while the log was read", e);
        } catch (IOException e) {
            throw new CorruptLogException("cannot open " + log + ": " + e, e);
        } finally {
            closeQuietly(records, timeIndex);
        }
    }

    /**
     * Opens a tiered segment from this JVM's copies ({@link RemoteSegmentCache}): its {@code .log} held in memory
     * chunk by chunk as walks reach its bytes, its indexes fetched and checked against
     * the manifest on first need ({@link RemoteIndexes}). Nothing is fetched here: what a read of the segment
     * costs is the bytes it reads. Read as a local segment, with the same checks; errors name the remote
     * object. Its next offset and largest timestamp are its record's (it is sealed).
     */
    public static Segment openRemote(RemoteTier tier, String topic, int partition, RemoteSegmentLog.Entry e,
                                     boolean dense, int maxLeaderEpoch) {
        OPENS.increment();
        String logUri = tier.location.objectUri(topic, partition, e.base(), LOG);
        RemoteSegmentCache.CachedLog log = RemoteSegmentCache.acquire(tier, logUri, e.log());
        FileRecords records = null;
        try {
            RemoteSegmentCache.CachedLog.ChunkChannel bytes = log.channel();
            records = ChannelRecords.of(logUri, bytes, Math.toIntExact(e.log().size()));
            Segment seg = new Segment(e.base(), dense, maxLeaderEpoch, Path.of(e.log().sha256() + LOG), records, null, null);
            seg.remoteIndexes = new RemoteIndexes(tier, topic, partition, e);
            seg.fill = log;
            seg.remoteBytes = bytes;
            seg.where = logUri;
            seg.knownNext = e.next();
            seg.largest = e.maxTs();
            records = null;
            return seg;
        } catch (IOException ex) {
            log.release();
            throw new StorageException("cannot open the copy of " + logUri + ": " + ex, ex);
        } finally {
            closeQuietly(records, null);
        }
    }

    /** A tiered segment's two indexes, each fetched (whole, checked against the manifest) on first need. */
    private static final class RemoteIndexes {
        private final RemoteTier tier;
        private final String topic;
        private final int partition;
        private final RemoteSegmentLog.Entry e;

        private RemoteIndexes(RemoteTier tier, String topic, int partition, RemoteSegmentLog.Entry e) {
            this.tier = tier;
            this.topic = topic;
            this.partition = partition;
            this.e = e;
        }

        public RemoteTier tier() { return tier; }
        public String topic() { return topic; }
        public int partition() { return partition; }
        public RemoteSegmentLog.Entry e() { return e; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof RemoteIndexes)) return false;
            RemoteIndexes that = (RemoteIndexes) o;
            return java.util.Objects.equals(tier, that.tier)
                    && java.util.Objects.equals(topic, that.topic)
                    && partition == that.partition
                    && java.util.Objects.equals(e, that.e);
        }

        @Override public int hashCode() { return java.util.Objects.hash(tier, topic, partition, e); }

        @Override public String toString() { return "RemoteIndexes[tier=" + tier + ", topic=" + topic + ", partition=" + partition + ", e=" + e + "]"; }

        // openIndex fetches a local copy again when it went or changed (as Kafka's remote index cache does)
        OffsetIndexFile offsetIndex() {
            String uri = tier.location.objectUri(topic, partition, e.base(), ".index");
            try (FileChannel ch = RemoteSegmentCache.openIndex(tier, uri, e.index(), ".index")) {
                return OffsetIndexFile.read(ch, e.base());
            } catch (IOException ex) {
                throw new StorageException("cannot read the local copy of the tiered offset index " + uri + ": " + ex, ex);
            }
        }

        FileChannel timeIndexFile() {
            return RemoteSegmentCache.openIndex(tier, tier.location.objectUri(topic, partition, e.base(), ".timeindex"),
                e.timeindex(), ".timeindex");
        }
    
    }

    /** A tiered segment: starts fetching its bytes from the start of the walk {@link #batchesHolding} would make
     *  for {@code offset} (a reader about to reach it); a local segment: nothing. */
    public void prefetch(long offset, long bound) {
        if (fill != null) fill.prefetch(offset <= base ? 0 : floorPosition(offset), walkEnd(bound));
    }

    /** Where a walk up to {@code bound} ends in the file, for read-ahead: the start of the first batch indexed at
     *  or past the bound (a task cut is one: the next task's first batch), else the size. Invariant: a walk never
     *  fetches ahead past its end; those bytes are another task's, fetched twice when the cache bound drops them
     *  in between (the tight cache bound test saw it). */
    long walkEnd(long bound) {
        if (knownNext >= 0 && bound >= knownNext) return size;      // to the end: no index needed (none fetched)
        OffsetIndexFile index = offsetIndex();
        int e = index.floorEntry(bound - 1) + 1;        // the first entry whose key (a batch's last offset) >= bound
        return e < index.entries() ? index.positionAt(e) : size;
    }

    /** A tiered segment, read from the remote tier. */
    public boolean remote() {
        return fill != null;
    }

    /** What errors about this segment name: its .log's path, or a tiered segment's object URI. */
    public String where() {
        return where;
    }

    /** {@code emptyLog}: the {@code .log} was empty when opened. Its missing index is then read as an empty one
     *  (the state a roll passes through: Kafka creates a new segment's indexes lazily, a crash may stop there),
     *  nothing to index; as the core's read-only open (indexer/segment.py). */
    private static FileChannel openIndex(Path dir, long base, String suffix, String what, Path log, boolean emptyLog)
            throws IOException {
        Path file = dir.resolve(fileName(base, suffix));
        for (int attempt = 0; ; attempt++) {
            try {
                return RootFiles.openReadable(file);
            } catch (NoSuchFileException e) {
                if (!Files.exists(log)) {
                    throw new SegmentGoneException(log + " was deleted while the log was read", e);
                }
                if (emptyLog) return FileChannel.open(Path.of("/dev/null"), StandardOpenOption.READ);
                if (attempt == INDEX_SETTLE_WAITS_MS.length) {
                    throw new CorruptLogException(file + ": the " + what + " of segment " + base + " is missing while its "
                        + ".log (" + log + ") is there; a writable open rebuilds it from the .log (`seglog recover`; "
                        + "`seglog import` does so for a broker's folder)", e);
                }
                try {
                    Thread.sleep(INDEX_SETTLE_WAITS_MS[attempt]);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new SegmentGoneException(file + ": interrupted while waiting for it to appear", ie);
                }
            }
        }
    }

    private static void closeQuietly(FileRecords records, FileChannel channel) {
        try {
            if (records != null) records.closeHandlers();
            if (channel != null) channel.close();
        } catch (IOException e) {
            // read-only: nothing to lose
        }
    }

    public Path path() {
        return logPath;
    }

    public int size() {
        return size;
    }

    public OffsetIndexFile offsetIndex() {
        if (offsetIndex == null) offsetIndex = remoteIndexes.offsetIndex();
        return offsetIndex;
    }

    public TimeIndexFile timeIndex() {
        if (timeIndex == null) {
            if (timeIndexFile == null) timeIndexFile = remoteIndexes.timeIndexFile();
            try {
                timeIndex = TimeIndexFile.read(timeIndexFile, base);
            } catch (IOException e) {
                throw new CorruptLogException("cannot read the time index of " + where + ": " + e, e);
            }
        }
        return timeIndex;
    }

    /** Checked batches from file position {@code pos} (see {@link Batches}); offsets at or past
     *  {@code bound} end the walk unjudged. */
    public Batches batchesFrom(int pos, long expectedBase, long expectedLast, long bound) {
        return new Batches(pos, expectedBase, expectedLast, bound);
    }

    /**
     * Checked batches from the batch holding {@code offset} (index floor, then a forward walk:
     * docs/spec.md §3.4), up to {@code bound} (exclusive: the committed end the reader was given; bytes
     * past it are not judged). Batches ending below {@code offset} are drawn too (the caller skips them).
     */
    public Batches batchesHolding(long offset, long bound) {
        if (offset <= base) return new Batches(0, base, -1, bound);    // from the start: no index needed
        int floor = offsetIndex().floorEntry(offset);
        if (floor < 0) {
            return new Batches(0, base, -1, bound);
        }
        return new Batches(offsetIndex().positionAt(floor), -1, offsetIndex().offsetAt(floor), bound);
    }

    /** The base offset of the batch at {@code position} (an offset index entry's), read from its first 8 bytes;
     *  {@code otherwise} when they cannot be read (planning never judges: a read reports what is wrong there). */
    public long baseOffsetAt(int position, long otherwise) {
        ByteBuffer head = ByteBuffer.allocate(8);
        try {
            while (head.hasRemaining() && records.channel().read(head, position + head.position()) >= 0) {
                // positional reads until the 8 bytes are whole or the file ends
            }
        } catch (IOException e) {
            return otherwise;
        }
        if (head.hasRemaining()) return otherwise;
        long base = head.getLong(0);
        return base <= otherwise && base >= this.base ? base : otherwise;
    }

    /** The byte position of the batch at or before the index floor of {@code offset} (an estimate). */
    public int floorPosition(long offset) {
        if (offset <= base) return 0;                                    // the start: no index needed
        int floor = offsetIndex().floorEntry(offset);
        return floor < 0 ? 0 : offsetIndex().positionAt(floor);
    }

    /**
     * Checked batches from the segment's start, or from the last offset index entry below {@code offset},
     * up to {@code offset} (exclusive): every batch wholly below it, each judged, and the batch straddling
     * it, if any. Its {@link Batches#position()} after the walk is where the bytes of {@code offset} and
     * after begin (a truncation's cut), when the last batch drawn ends below it.
     */
    public Batches batchesBelow(long offset) {
        int floor = offset > base ? offsetIndex().floorEntry(offset - 1) : -1;
        return floor < 0 ? new Batches(0, base, -1, offset)
                         : new Batches(offsetIndex().positionAt(floor), -1, offsetIndex().offsetAt(floor), offset);
    }

    /** The walk from the last offset index entry's batch, the part no entry covers yet (an estimate: a
     *  torn tail, a writer's unfinished batch, ends it). */
    private Batches tail() {
        int n = offsetIndex().entries();
        Batches it = n == 0 ? new Batches(0, base, -1, Long.MAX_VALUE)
                            : new Batches(offsetIndex().positionAt(n - 1), -1, offsetIndex().offsetAt(n - 1), Long.MAX_VALUE);
        it.tolerateTornTail = true;
        return it;
    }

    /**
     * The segment's largest timestamp: its last time index entry's (every record up to that entry's
     * offset, and up to the last offset index entry written with or after it, is at most that) and
     * every batch from the last offset index entry on (the part no entry covers yet).
     */
    public long largestTimestamp(long nextBase) {
        if (largest == Long.MIN_VALUE) {
            TimeIndexFile ti = timeIndex();
            if (sealed(ti, nextBase)) {
                // A sealed segment's last time index entry says its largest timestamp (docs/format.md); an
                // empty one, that its records carry none (sealed() read its batches to know it).
                largest = ti.entries() > 0 ? ti.timestampAt(ti.entries() - 1) : RecordBatch.NO_TIMESTAMP;
                return largest;
            }
            long max = ti.entries() > 0 ? ti.timestampAt(ti.entries() - 1) : RecordBatch.NO_TIMESTAMP;
            Batches it = tail();
            while (it.hasNext()) {
                max = Math.max(max, it.next().maxTimestamp());
            }
            largest = max;
        }
        return largest;
    }

    /** Sealed, from the files alone (the Python core's segment.sealed_summary): both indexes trimmed, the
     *  {@code .log} not empty (an empty one under sealed indexes lost its records), and the last time index
     *  entry inside the segment (below the next segment's base). An empty time index means "no record has a
     *  timestamp" only when its batches say so: a segment whose batches carry timestamps can be left with
     *  empty, trimmed indexes (a truncation back into it, then a roll), and taking its largest timestamp as
     *  none made a lookup skip it. The active segment, nextBase = MAX, is never sealed. */
    private boolean sealed(TimeIndexFile ti, long nextBase) {
        if (nextBase == Long.MAX_VALUE || size == 0 || !offsetIndex().trimmed() || !ti.trimmed()) return false;
        if (ti.entries() == 0) {
            Batches it = tail();
            while (it.hasNext()) {
                if (it.next().maxTimestamp() >= 0) return false;
            }
            return true;
        }
        long last = ti.offsetAt(ti.entries() - 1);
        return last >= base && last < nextBase;
    }

    /** The offset after the last whole, valid batch (a torn tail of a crashed writer is not read). An
     *  estimate of the log end: reads judge the bytes below their committed end themselves. */
    public long nextOffset() {
        if (knownNext >= 0) return knownNext;
        int n = offsetIndex().entries();
        long next = n == 0 ? base : offsetIndex().offsetAt(n - 1) + 1;
        Batches it = tail();
        while (it.hasNext()) {
            next = it.next().lastOffset() + 1;
        }
        return next;
    }

    /** {@link #nextOffset} and {@link #wholeBatchesEnd} of a local segment from one walk of its tail (each walks
     *  it, reading and checking the batches no index entry covers yet): {next offset, position}. */
    public long[] nextOffsetAndWholeBatchesEnd() {
        int n = offsetIndex().entries();
        long next = n == 0 ? base : offsetIndex().offsetAt(n - 1) + 1;
        Batches it = tail();
        while (it.hasNext()) next = it.next().lastOffset() + 1;
        return new long[] {knownNext >= 0 ? knownNext : next, it.position()};
    }

    /** The file position after the last whole, valid batch: the segment's bytes without a torn tail (as the
     *  Python core's segment size), so that sizes of a range to the log end agree on both sides. */
    public int wholeBatchesEnd() {
        Batches it = tail();
        while (it.hasNext()) it.next();
        return it.position();
    }

    @Override
    public void close() {
        closeQuietly(records, timeIndexFile);
        if (fill != null && !released) {         // after its FileRecords is closed: the copy may be deleted now
            released = true;
            fill.release();
        }
    }

    /** A dense log's batch whose record count is not its offsets' span, in the words every reader uses (every offset
     *  of a batch is a record on a dense log: docs/format.md). */
    public static String denseCountDisagrees(RecordBatch b) {
        return "it holds " + b.countOrNull() + " records but its offsets " + b.baseOffset() + " to " + b.lastOffset()
            + " are dense: its header is damaged";
    }

    /**
     * Batches from a file position, each checked: its CRC (Kafka's {@code ensureValid}), and offsets
     * dense from the previous batch (the CRC leaves the base offset and length out: docs/format.md), and
     * partition leader epochs in bounds (the CRC leaves them out too; docs/kafka.md "Leader epochs"): each
     * at least the previous batch's (0 for the walk's first) and at most {@link #maxLeaderEpoch}. The
     * first batch must start at {@code expectedBase} (position 0: the segment's base) or end at
     * {@code expectedLast} (an index entry's key), whichever is given. In a segment that may have gaps
     * ({@link #dense} false) "dense" weakens to "above": the first batch at or above the base, each
     * next one above the previous last offset (the Python core's check, indexer/segment.py). A read's
     * {@code checkCrcs=false} ({@link #checkingCrcs}) drops the CRC alone: every other check here stays, and a v2
     * batch's header is held to what its 61 bytes must say ({@link #checkStructure}).
     *
     * <p>The walk ends at the file's end only on a whole batch. Kafka's iterator takes a batch that
     * runs past the end (a lost tail, a damaged length field) for the end of the file: here that is
     * reported, naming the file and the position, as the core's read_checked reports it.
     *
     * <p>Invariant (docs/spec.md §4): nothing at or past {@code bound}, the committed end the reader was
     * given, is judged. Bytes there may be a batch in flight or one a roll back is cutting; whatever the
     * walk meets once the next offset would be at or past the bound ends it quietly. Offsets only rise,
     * so the next batch's first offset is at least the previous last + 1.
     */
    public final class Batches implements Iterator<FileChannelRecordBatch> {
        private final Iterator<FileChannelRecordBatch> it;
        private final long bound;
        private final long expectedBase;
        private final long expectedLast;
        private long prevLast;
        private int minEpoch;               // the previous batch's leader epoch: epochs never decrease
        private boolean first = true;
        private int end;                    // where the next batch starts: just after the last one drawn
        private boolean done;
        private FileChannelRecordBatch next;
        boolean tolerateTornTail;           // an estimate's walk: any fault ends it
        private BatchBuffer into;           // readInto: each batch is read into it and checked there
        private long metPastBound = -1;     // the first offset of the batch that ended the walk at the bound
        private long aheadUntil = Long.MAX_VALUE;   // readingUntil's offset (else the bound)
        private long aheadLimit = -1;       // aheadLimit(): computed at the first read-ahead of a tiered walk
        private RecordBatch inMemory;       // the last batch drawn, as read into `into` (null: not read so)
        private boolean checkCrcs = true;   // false: Kafka's check.crcs=false, structure only, bodies read on demand
        private FileChannelRecordBatch drawn;   // the last batch drawn (its body is read by inMemory() when asked)

        Batches(int pos, long expectedBase, long expectedLast, long bound) {
            this.it = pos >= size ? java.util.Collections.emptyIterator() : records.batchesFrom(pos).iterator();
            this.expectedBase = expectedBase;
            this.expectedLast = expectedLast;
            this.bound = bound;
            this.end = pos;
        }

        /** Where this walk's bytes end ({@link #walkEnd}), for its read-ahead. */
        private long aheadLimit() {
            if (aheadLimit < 0) aheadLimit = walkEnd(Math.min(aheadUntil, bound));
            return aheadLimit;
        }

        /** The smallest offset the next batch may hold; MIN_VALUE when not known (the first batch found
         *  through an index entry, which ends at the entry's key below any bound a reader seeks under). */
        private long nextOffset() {
            if (!first) return prevLast + 1;
            return expectedBase >= 0 ? expectedBase : Long.MIN_VALUE;
        }

        /**
         * From here on each batch drawn is read whole into {@code buffer} and checked there ({@link #inMemory}):
         * one buffer for the walk instead of a new one per batch. The batch drawn last stays valid until the next
         * {@link #hasNext} that draws one.
         */
        public Batches readInto(BatchBuffer buffer) {
            this.into = buffer;
            return this;
        }

        /**
         * Kafka's consumer setting {@code check.crcs}: with false, the walk checks each batch's structure but not
         * its CRC ({@link #checkStructure}), and reads a batch's body only when {@link #inMemory} asks for it, so a
         * walk that only counts reads the 61-byte headers. Invariant: every check but the CRC still runs, so a
         * damaged length, offset or header is reported as with the CRC; only a flipped byte the structure cannot
         * show (a key's or value's bytes, a count on a compacted log) goes unseen, as in Kafka.
         */
        public Batches checkingCrcs(boolean check) {
            this.checkCrcs = check;
            return this;
        }

        /** A reader that stops at {@code end} (a task's slice end, below the bound): the read-ahead stops there too. */
        public Batches readingUntil(long end) {
            this.aheadUntil = Math.min(end, bound);
            return this;
        }

        /** The batch drawn last as read into the {@link #readInto} buffer (its records, every codec); null when it
         *  was not read so (no buffer given, or a batch older than magic 2). Without CRC checks the body is read here,
         *  on first ask. */
        public RecordBatch inMemory() {
            if (inMemory == null && !checkCrcs && into != null && drawn != null && drawn.magic() == RecordBatch.MAGIC_VALUE_V2) {
                FileChannelRecordBatch b = drawn;
                try {
                    // its records are framed as they are decoded: DirectBatch parses exactly or leaves the batch to
                    // Kafka's iterator, whose framing errors read.CheckedRecords reports naming the batch
                    inMemory = into.load(records.channel(), b.position(), b.sizeInBytes());
                    BODIES_READ.increment();
                } catch (org.apache.kafka.common.KafkaException e) {
                    if (fill != null) throw new RemoteObjectException(where + ": a corrupt batch at position " + b.position()
                        + ": " + e.getMessage(), e);
                    throw new CorruptLogException(logPath + ": a corrupt batch at position " + b.position() + ": "
                        + e.getMessage(), e);
                }
            }
            return inMemory;
        }

        /** The first offset of the batch whose start, at or past the bound, ended the walk (-1: none did): the
         *  offsets between the last batch drawn and it are not in this segment (a cleaner's gap). */
        public long metPastBound() {
            return metPastBound;
        }

        /** The file position after the last batch drawn (or where the walk started). */
        public int position() {
            return end;
        }

        /** Ends the walk: quietly past the bound (or in an estimate), else a corruption naming file and position. */
        private boolean fault(String what, Throwable cause) {
            done = true;
            if (tolerateTornTail || nextOffset() >= bound) return false;
            if (fill != null) throw new RemoteObjectException(where + ": " + what, cause);
            throw new CorruptLogException(logPath + ": " + what, cause);
        }

        @Override
        public boolean hasNext() {
            if (next != null) return true;
            if (done) return false;
            if (nextOffset() >= bound) {
                done = true;
                return false;
            }
            FileChannelRecordBatch b;
            try {
                if (!it.hasNext()) {
                    done = true;
                    return end < size && fault(tornTail(), null);
                }
                b = it.next();
            } catch (org.apache.kafka.common.KafkaException e) {
                return fault("a corrupt batch at position " + end + ": " + e.getMessage(), e);
            }
            // Tiered: the chunks after the one this batch starts in start arriving, asked only now that the walk holds
            // that one: a walk's first fetch (and one the read-ahead did not bring in time) does not share the server
            // with fetches ahead of it, so the bytes it waits for come first (issue 41: the walk waited for its first
            // chunk while five other 8 MiB GETs of the same JVM arrived beside it).
            if (remoteBytes != null) remoteBytes.readAheadOf(b.position(), aheadLimit());
            // the header is read here (Kafka loads it on first ask): bytes that are no batch header are a corrupt batch
            int epoch;
            try {
                if (first) {
                    if (expectedBase >= 0 && (dense ? b.baseOffset() != expectedBase : b.baseOffset() < expectedBase)) {
                        return fault("the batch at position " + b.position() + " starts at offset " + b.baseOffset()
                            + ", expected " + expectedBase + (dense ? "" : " or above"), null);
                    }
                    if (expectedLast >= 0 && b.lastOffset() != expectedLast) {
                        return fault("the batch at position " + b.position() + " ends at offset " + b.lastOffset()
                            + ", but the offset index says " + expectedLast, null);
                    }
                } else if (dense ? b.baseOffset() != prevLast + 1 : b.baseOffset() <= prevLast) {
                    return fault("the batch at position " + b.position() + " starts at offset " + b.baseOffset()
                        + ", expected " + (prevLast + 1) + (dense ? "" : " or above"), null);
                }
                if (b.baseOffset() >= bound) {     // past the bound (a gap across it): not judged
                    metPastBound = b.baseOffset();
                    done = true;
                    return false;
                }
                // Leader epochs, in the core's words (indexer/codec/records.py walk_batches). Not in an estimate's walk
                // (the core's load_state does not judge them either): a read reports them.
                epoch = b.partitionLeaderEpoch();
                if (!tolerateTornTail && epoch < minEpoch) {
                    return fault("batch at position " + b.position() + " (offset " + b.baseOffset() + "): partition leader "
                        + "epoch " + epoch + " below the previous batch's " + minEpoch + " (epochs never decrease)", null);
                }
                if (!tolerateTornTail && epoch > maxLeaderEpoch) {
                    return fault("batch at position " + b.position() + " (offset " + b.baseOffset() + "): partition leader "
                        + "epoch " + epoch + " above " + maxLeaderEpoch + ", the largest this partition can hold", null);
                }
                String bad = checkCrcs || b.magic() < RecordBatch.MAGIC_VALUE_V2 ? null : checkStructure(b);
                // what the batch can hold bounds its count, CRC or not (a valid CRC covers a crafted count too)
                if (bad == null && b.magic() >= RecordBatch.MAGIC_VALUE_V2) bad = BatchBounds.countProblem(b);
                if (bad != null) return fault("a corrupt batch at position " + b.position() + " (offset " + b.baseOffset()
                    + "): " + bad, null);
            } catch (org.apache.kafka.common.KafkaException | IllegalArgumentException e) {   // the latter: a codec id
                return fault("a corrupt batch at position " + b.position() + ": " + e.getMessage(), e);
            }
            try {
                // the same check either way (Kafka's ensureValid of the batch in memory); a v2 batch read into the
                // walk's own buffer saves Kafka's new buffer per batch. Without CRC checks a v2 body waits for
                // inMemory() (a legacy batch is still checked whole: its CRC is its only check)
                inMemory = null;
                drawn = b;
                if (!checkCrcs && b.magic() == RecordBatch.MAGIC_VALUE_V2) {
                    // structure checked above
                } else if (into != null && b.magic() == RecordBatch.MAGIC_VALUE_V2) {
                    BODIES_READ.increment();
                    RecordBatch loaded = into.load(records.channel(), b.position(), b.sizeInBytes());
                    loaded.ensureValid();
                    inMemory = loaded;
                } else {
                    BODIES_READ.increment();
                    b.ensureValid();
                }
            } catch (org.apache.kafka.common.KafkaException e) {
                return fault("a corrupt batch at position " + b.position() + ": " + e.getMessage(), e);
            }
            prevLast = b.lastOffset();
            minEpoch = epoch;
            first = false;
            end = b.position() + b.sizeInBytes();
            next = b;
            return true;
        }

        /**
         * A v2 batch's header without its CRC (checkCrcs false), from its 61 bytes alone: the checks of Kafka's
         * {@code ensureValid} but the checksum (a size that holds the header, magic 2), a last offset delta that
         * is not negative, a known codec, and a record count that fits the offsets (on a dense log, fills them:
         * every offset of a batch is a record there). The offsets' chaining, the leader epochs and the bound are
         * the walk's checks. Null when sound, else what is wrong.
         */
        private String checkStructure(FileChannelRecordBatch b) {
            if (b.sizeInBytes() < HEADER) return "its length " + b.sizeInBytes() + " is below a batch header's " + HEADER + " bytes";
            if (b.magic() != RecordBatch.MAGIC_VALUE_V2) return "magic " + b.magic() + ", expected " + RecordBatch.MAGIC_VALUE_V2;
            long span = b.lastOffset() - b.baseOffset() + 1;
            if (span < 1) return "its last offset delta " + (span - 1) + " is negative";
            try {
                b.compressionType();
            } catch (IllegalArgumentException e) {
                return "an unknown compression codec (" + e.getMessage() + ")";
            }
            Integer n = b.countOrNull();
            if (n == null || n < 0 || n > span) return "its record count " + n + " does not fit its offsets " + b.baseOffset()
                + " to " + b.lastOffset();
            if (dense && n != span) return denseCountDisagrees(b);
            return null;
        }

        /** What the bytes after the last whole batch are, in the core's words (indexer/codec/records.py walk_batches). */
        private String tornTail() {
            int left = size - end;
            if (left < HEADER) {
                return "torn batch header at position " + end + ": " + left + " bytes left, a header needs " + HEADER;
            }
            ByteBuffer head = ByteBuffer.allocate(LOG_OVERHEAD);
            try {
                while (head.hasRemaining() && records.channel().read(head, end + head.position()) >= 0) {
                    // positional reads until the prefix is whole or the file ends
                }
            } catch (IOException e) {
                return "torn batch at position " + end + " (" + left + " bytes left before the end at " + size + "): " + e;
            }
            if (head.hasRemaining()) {
                return "torn batch at position " + end + ": the file ends before the end at " + size + " it had when opened";
            }
            return "batch at position " + end + " (offset " + head.getLong(0) + ") has length "
                + ((long) head.getInt(8) + LOG_OVERHEAD) + ", past the end at " + size;
        }

        @Override
        public FileChannelRecordBatch next() {
            if (!hasNext()) throw new NoSuchElementException();
            FileChannelRecordBatch b = next;
            next = null;
            return b;
        }
    }
}
