package io.seglog.spark.format;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;

/**
 * A partition's active segment open for appends, under the partition's lock: the writer's half of the
 * Python core's indexer/segment.py LogSegment, rule for rule, so that appends here leave the bytes the core's
 * appends leave for the same batches (tests/sink/test_jvm_copy.py compares every file).
 *
 * <ul>
 * <li>Open ({@link #open}: the core's load_state): the next offset, the largest timestamp and the last offset
 *   of the first batch holding it (the last time index entry if an offset index entry exists, else none; then
 *   every batch from the last offset index entry's on, a strictly larger one counting), the first timestamp
 *   (the first batch's base timestamp, else its largest), and the bytes since the last index entry (the
 *   bytes after the batch that entry names; the whole segment when it has none).</li>
 * <li>Room: an index holds what its file holds or segment.index.bytes, whichever is more; the time index
 *   keeps its last slot for the seal entry. The first append "preallocates" both (the core's reserve), and a
 *   time index of exactly one all-zero entry, (0, base), then counts none: the core never writes that entry
 *   to a preallocated file.</li>
 * <li>The index rule and the seal entry ({@link SegmentIndexer}, the core's index_batch and seal) and the roll rule
 *   ({@link AppendRules#rolls}, through {@link #fits} and {@link #batchesThatFit}, the core's two callers of it).</li>
 * <li>Files: a batch's bytes are written before its index entries; the index files hold exactly their
 *   entries (never a zero tail), as the core's clean close and seal leave them.</li>
 * </ul>
 */
final class ActiveSegment implements Closeable {
    private static final int OFFSET_ENTRY = SegmentIndexer.OFFSET_ENTRY;
    private static final int TIME_ENTRY = SegmentIndexer.TIME_ENTRY;

    final Path dir;
    final long base;
    private final AppendRules rules;
    private final FileChannel log;
    private final FileChannel offsetIndex;
    private final FileChannel timeIndex;
    private final long createdMs;
    private long size;
    private long nextOffset;
    private final SegmentIndexer idx;   // the indexes' entries and rules; *Written: the entries in the files
    private int offWritten;
    private int timeWritten;
    private long offFileSize;
    private long timeFileSize;
    private boolean reserved;  // appended to: the core's reserve() ran

    private ActiveSegment(Path dir, long base, AppendRules rules, long createdMs) throws IOException {
        this.dir = dir;
        this.base = base;
        this.rules = rules;
        this.createdMs = createdMs;
        this.nextOffset = base;
        FileChannel l = null;
        FileChannel o = null;
        try {
            // RootFiles: never through a symlink, never into a file hard-linked elsewhere (seglog import --link)
            l = RootFiles.openWritable(file(".log"), StandardOpenOption.READ, StandardOpenOption.WRITE);
            o = RootFiles.openWritable(file(".index"), StandardOpenOption.READ, StandardOpenOption.WRITE);
            this.timeIndex = RootFiles.openWritable(file(".timeindex"), StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (IOException | RuntimeException e) {
            if (l != null) l.close();
            if (o != null) o.close();
            throw e;
        }
        this.log = l;
        this.offsetIndex = o;
        this.offFileSize = o.size();
        this.timeFileSize = timeIndex.size();
        // the core's max_entries: max(file slots at open, segment.index.bytes / entry size)
        this.idx = new SegmentIndexer(file(".index"), file(".timeindex"), base, rules,
                Math.max(offFileSize / OFFSET_ENTRY, rules.slots(OFFSET_ENTRY)), Math.max(timeFileSize / TIME_ENTRY, rules.slots(TIME_ENTRY)));
    }

    Path file(String suffix) {
        return dir.resolve(Segment.fileName(base, suffix));
    }

    /**
     * A new, empty segment at {@code base} (the core's add_active): its indexes created before its {@code .log}
     * (a segment exists when its {@code .log} does). Index files a crash left without a {@code .log} are
     * replaced (no reader lists them; the core's recovery sets them aside).
     */
    static ActiveSegment create(Path dir, long base, AppendRules rules, long now) throws IOException {
        boolean shared = GroupShared.isShared(dir);
        for (String suffix : new String[] {".index", ".timeindex"}) {
            Path p = dir.resolve(Segment.fileName(base, suffix));
            Files.deleteIfExists(p);
            GroupShared.createNew(p, shared).close();
        }
        GroupShared.createNew(dir.resolve(Segment.fileName(base, ".log")), shared).close();
        return new ActiveSegment(dir, base, rules, now);
    }

    /** The segment at {@code base}, which must hold whole batches only (rolled back to its committed end). */
    static ActiveSegment open(Path dir, long base, AppendRules rules, boolean dense, int epochs) throws IOException {
        long created = Files.getLastModifiedTime(dir.resolve(Segment.fileName(base, ".log"))).toMillis();
        ActiveSegment a = new ActiveSegment(dir, base, rules, created);
        try (Segment seg = Segment.open(dir, base, dense, epochs)) {
            a.load(seg);
        } catch (IOException | RuntimeException e) {
            a.close();
            throw e;
        }
        return a;
    }

    private void load(Segment seg) throws IOException {
        size = seg.size();
        OffsetIndexFile oi = seg.offsetIndex();
        TimeIndexFile ti = seg.timeIndex();
        for (int i = 0; i < oi.entries(); i++) idx.addOffsetEntry((int) (oi.offsetAt(i) - base), oi.positionAt(i));
        for (int i = 0; i < ti.entries(); i++) idx.addTimeEntry(ti.timestampAt(i), (int) (ti.offsetAt(i) - base));
        offWritten = idx.offCount;
        timeWritten = idx.timeCount;
        int n = oi.entries();
        long lastKey = n > 0 ? oi.offsetAt(n - 1) : -1;
        // the time index covers the batches up to the last offset index entry's (the core's _time_index_covered)
        if (n > 0) {
            if (idx.timeCount > 0) {
                idx.maxTs = idx.timeTs[idx.timeCount - 1];
                idx.offsetOfMax = base + idx.timeRel[idx.timeCount - 1];
            } else {
                ByteBuffer head = header(0);
                if (head != null && head.getLong(35) == 0 && head.getLong(0) + head.getInt(23) == base) {
                    idx.maxTs = 0;
                    idx.offsetOfMax = base;
                }
            }
        }
        Segment.Batches tail = n == 0 ? seg.batchesFrom(0, base, -1, Long.MAX_VALUE)
                : seg.batchesFrom(oi.positionAt(n - 1), -1, lastKey, Long.MAX_VALUE);
        int batches = 0;
        long secondStart = -1;
        long tailMax = -1;
        long tailMaxAt = -1;
        while (tail.hasNext()) {
            FileChannelRecordBatch b = tail.next();
            if (batches == 1) secondStart = b.position();
            if (batches == 0 || b.maxTimestamp() > tailMax) {
                tailMax = b.maxTimestamp();
                tailMaxAt = b.lastOffset();
            }
            nextOffset = b.lastOffset() + 1;
            batches++;
        }
        if (batches == 0) nextOffset = n > 0 ? lastKey + 1 : base;
        if (batches > 0 && tailMax > idx.maxTs) {
            idx.maxTs = tailMax;
            idx.offsetOfMax = tailMaxAt;
        }
        if (size > 0) {
            ByteBuffer head = header(0);
            long baseTs = head.getLong(27);
            idx.firstTs = baseTs >= 0 ? baseTs : head.getLong(35);
        }
        // bytes appended since the batch the last offset index entry names ended
        if (n > 0 && batches > 1) {
            idx.bytesSinceIndexEntry = size - secondStart;
        } else if (n > 0 && batches > 0) {
            idx.bytesSinceIndexEntry = 0;
        } else {
            idx.bytesSinceIndexEntry = size;
        }
    }

    /** The batch header at {@code pos}, or null when the file ends before a whole one. */
    private ByteBuffer header(long pos) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(Segment.HEADER);
        while (head.hasRemaining() && log.read(head, pos + head.position()) > 0) {
            // positional reads until the header is whole or the file ends
        }
        return head.hasRemaining() ? null : head.flip();
    }

    long size() {
        return size;
    }

    long nextOffset() {
        return nextOffset;
    }

    /** Whether the segment takes the next batch without rolling (the core's fits). */
    boolean fits(long batchBytes, long lastOffset, long batchMaxTs, long now) {
        return !idx.rolls(size, createdMs, batchBytes, lastOffset, batchMaxTs, now);
    }

    /**
     * The end j of the longest run of batches i..j-1 this segment takes without rolling, batch i known to fit
     * (the core's batches_that_fit: each next batch against the segment as it would be after those before; its
     * first timestamp, for an empty segment, batch i's; the room less one entry per batch).
     */
    int batchesThatFit(CopiedBatches b, int i, long now) {
        long sz = size + b.size(i);
        long first = size > 0 ? idx.firstTs : b.firstTs[i];
        long room = idx.entriesRoom();
        int j = i + 1;
        while (j < b.count) {
            if (rules.rolls(sz, base, first, createdMs, b.size(j), b.lastOffsets[j], b.maxTs[j], now, room - (j - i))) break;
            sz += b.size(j);
            j++;
        }
        return j;
    }

    /** Append batches i..j-1 of {@code b}: their bytes, then their index entries (the core's LogSegment.append). */
    void append(CopiedBatches b, int i, int j) throws IOException {
        reserve();
        int start = (int) b.positions[i];
        int end = (int) b.positions[j];
        ByteBuffer data = b.data.duplicate().position(start).limit(end);
        long at = size;
        while (data.hasRemaining()) log.write(data, at + (data.position() - start));
        for (int k = i; k < j; k++) {
            idx.indexBatch(b.lastOffsets[k], size + (b.positions[k] - start), b.size(k), b.firstTs[k], b.maxTs[k]);
        }
        size += end - start;
        nextOffset = b.lastOffsets[j - 1] + 1;
        writeEntries();
    }

    /**
     * The core's reserve() at an append: both indexes preallocated to segment.index.bytes. A time index file
     * that held exactly one slot, the all-zero entry (0, base), counts no entry once zeros follow it (the core
     * never writes that entry to a preallocated file; a seal writes it again when it is still the largest).
     */
    private void reserve() {
        if (reserved) return;
        reserved = true;
        long fileSlots = timeFileSize / TIME_ENTRY;
        if (rules.slots(TIME_ENTRY) > fileSlots && fileSlots == 1 && idx.timeCount == 1 && idx.timeTs[0] == 0 && idx.timeRel[0] == 0) {
            idx.timeCount = 0;
            timeWritten = 0;
        }
    }

    /** The entries not yet in the files, written after the ones there (time index first, as the core's bulk
     *  append: the last time index entry always covers up to the last offset index entry's batch). */
    private void writeEntries() throws IOException {
        if (timeWritten < idx.timeCount) {
            write(timeIndex, idx.timeEntryBytes(timeWritten), (long) timeWritten * TIME_ENTRY);
            timeWritten = idx.timeCount;
            timeFileSize = Math.max(timeFileSize, (long) idx.timeCount * TIME_ENTRY);
        }
        if (offWritten < idx.offCount) {
            write(offsetIndex, idx.offsetEntryBytes(offWritten), (long) offWritten * OFFSET_ENTRY);
            offWritten = idx.offCount;
            offFileSize = Math.max(offFileSize, (long) idx.offCount * OFFSET_ENTRY);
        }
    }

    private static void write(FileChannel ch, ByteBuffer buf, long at) throws IOException {
        long start = at - buf.position();
        while (buf.hasRemaining()) ch.write(buf, start + buf.position());
    }

    /**
     * Seal it as a roll does (the core's LogSegment.seal with durable=False, from the writer's state): the seal
     * entry (the largest timestamp, the last offset of the first batch holding it) unless the last entry holds
     * that timestamp, then both indexes trimmed to their entries (last: trimmed files mean sealed). No fsync:
     * the publisher forces a rolled segment before the commit.
     */
    void seal() throws IOException {
        boolean trimmed = offFileSize == (long) idx.offCount * OFFSET_ENTRY && timeFileSize == (long) idx.timeCount * TIME_ENTRY;
        if (trimmed && offWritten == idx.offCount && timeWritten == idx.timeCount && idx.sealEntryWritten()) return;
        idx.seal();
        trim();
    }

    /** Both index files cut to their entries (the core's clean close of the active segment; a seal's last step). */
    void trim() throws IOException {
        writeEntries();
        timeIndex.truncate((long) idx.timeCount * TIME_ENTRY);
        offsetIndex.truncate((long) idx.offCount * OFFSET_ENTRY);
        timeFileSize = (long) idx.timeCount * TIME_ENTRY;
        offFileSize = (long) idx.offCount * OFFSET_ENTRY;
    }

    /** fsync of the {@code .log} (the core's flush of the active segment) and, with {@code indexes}, both
     *  indexes too (a rolled segment's). */
    void force(boolean indexes) throws IOException {
        log.force(true);
        if (indexes) {
            offsetIndex.force(true);
            timeIndex.force(true);
        }
    }

    @Override
    public void close() throws IOException {
        try {
            log.close();
        } finally {
            try {
                offsetIndex.close();
            } finally {
                timeIndex.close();
            }
        }
    }
}
