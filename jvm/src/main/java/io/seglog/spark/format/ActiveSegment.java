package io.seglog.spark.format;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

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
 * <li>The index rule ({@link #indexBatch}, the core's index_batch) and the roll rule ({@link AppendRules#rolls},
 *   through {@link #fits} and {@link #batchesThatFit}, the core's two callers of it).</li>
 * <li>Files: a batch's bytes are written before its index entries; the index files hold exactly their
 *   entries (never a zero tail), as the core's clean close and seal leave them.</li>
 * </ul>
 */
final class ActiveSegment implements Closeable {
    private static final int OFFSET_ENTRY = 8;
    private static final int TIME_ENTRY = 12;

    final Path dir;
    final long base;
    private final AppendRules rules;
    private final FileChannel log;
    private final FileChannel offsetIndex;
    private final FileChannel timeIndex;
    private final long createdMs;
    private long size;
    private long nextOffset;
    private long maxTs = -1;
    private long offsetOfMax;
    private long firstTs = -1;
    private long bytesSinceIndexEntry;
    // the indexes' entries, (relative offset, position) and (timestamp, relative offset); *Written: in the file
    private int[] offRel = new int[16];
    private int[] offPos = new int[16];
    private int offCount;
    private int offWritten;
    private long[] timeTs = new long[16];
    private int[] timeRel = new int[16];
    private int timeCount;
    private int timeWritten;
    private long offSlots;     // the core's max_entries: max(file slots at open, segment.index.bytes / entry size)
    private long timeSlots;
    private long offFileSize;
    private long timeFileSize;
    private boolean reserved;  // appended to: the core's reserve() ran

    private ActiveSegment(Path dir, long base, AppendRules rules, long createdMs) throws IOException {
        this.dir = dir;
        this.base = base;
        this.rules = rules;
        this.createdMs = createdMs;
        this.offsetOfMax = base - 1;
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
        this.offSlots = Math.max(offFileSize / OFFSET_ENTRY, rules.slots(OFFSET_ENTRY));
        this.timeSlots = Math.max(timeFileSize / TIME_ENTRY, rules.slots(TIME_ENTRY));
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
        for (int i = 0; i < oi.entries(); i++) addOffsetEntry((int) (oi.offsetAt(i) - base), oi.positionAt(i));
        for (int i = 0; i < ti.entries(); i++) addTimeEntry(ti.timestampAt(i), (int) (ti.offsetAt(i) - base));
        offWritten = offCount;
        timeWritten = timeCount;
        int n = oi.entries();
        long lastKey = n > 0 ? oi.offsetAt(n - 1) : -1;
        // the time index covers the batches up to the last offset index entry's (the core's _time_index_covered)
        if (n > 0) {
            if (timeCount > 0) {
                maxTs = timeTs[timeCount - 1];
                offsetOfMax = base + timeRel[timeCount - 1];
            } else {
                ByteBuffer head = header(0);
                if (head != null && head.getLong(35) == 0 && head.getLong(0) + head.getInt(23) == base) {
                    maxTs = 0;
                    offsetOfMax = base;
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
        if (batches > 0 && tailMax > maxTs) {
            maxTs = tailMax;
            offsetOfMax = tailMaxAt;
        }
        if (size > 0) {
            ByteBuffer head = header(0);
            long baseTs = head.getLong(27);
            firstTs = baseTs >= 0 ? baseTs : head.getLong(35);
        }
        // bytes appended since the batch the last offset index entry names ended
        if (n > 0 && batches > 1) {
            bytesSinceIndexEntry = size - secondStart;
        } else if (n > 0 && batches > 0) {
            bytesSinceIndexEntry = 0;
        } else {
            bytesSinceIndexEntry = size;
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

    /** Batches both indexes can still take (each may add one entry to each), the time index's last slot kept
     *  for the seal entry (the core's _entries_room). */
    private long entriesRoom() {
        return Math.min(offSlots - offCount, timeSlots - timeCount - 1);
    }

    /** Whether the segment takes the next batch without rolling (the core's fits). */
    boolean fits(long batchBytes, long lastOffset, long batchMaxTs, long now) {
        return !rules.rolls(size, base, firstTs, createdMs, batchBytes, lastOffset, batchMaxTs, now, entriesRoom());
    }

    /**
     * The end j of the longest run of batches i..j-1 this segment takes without rolling, batch i known to fit
     * (the core's batches_that_fit: each next batch against the segment as it would be after those before; its
     * first timestamp, for an empty segment, batch i's; the room less one entry per batch).
     */
    int batchesThatFit(CopiedBatches b, int i, long now) {
        long sz = size + b.size(i);
        long first = size > 0 ? firstTs : b.firstTs[i];
        long room = entriesRoom();
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
            indexBatch(b.lastOffsets[k], size + (b.positions[k] - start), b.size(k), b.firstTs[k], b.maxTs[k]);
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
        if (rules.slots(TIME_ENTRY) > fileSlots && fileSlots == 1 && timeCount == 1 && timeTs[0] == 0 && timeRel[0] == 0) {
            timeCount = 0;
            timeWritten = 0;
        }
    }

    /**
     * The one index rule (the core's index_batch): an offset index entry (the batch's last offset, its start)
     * once more than index.interval.bytes were appended since the last entry, and with it a time index entry
     * (largest timestamp so far, the last offset of the first batch that reached it) if that timestamp grew.
     */
    void indexBatch(long lastOffset, long position, long batchBytes, long batchFirstTs, long batchMaxTs) {
        if (batchMaxTs > maxTs) {
            maxTs = batchMaxTs;
            offsetOfMax = lastOffset;
        }
        if (firstTs < 0 && batchFirstTs >= 0) firstTs = batchFirstTs;
        if (bytesSinceIndexEntry > rules.indexIntervalBytes()) {
            if (offCount >= offSlots) throw new CorruptLogException(file(".index") + " is full (" + offCount + " entries): the roll rule let a batch in");
            addOffsetEntry((int) (lastOffset - base), (int) position);
            if (maxTs >= 0) maybeAppendTime(maxTs, offsetOfMax);
            bytesSinceIndexEntry = 0;
        }
        bytesSinceIndexEntry += batchBytes;
    }

    /** The core's TimeIndex.maybe_append: only a timestamp above the last entry's, never (0, base). */
    private void maybeAppendTime(long ts, long offset) {
        checkAfterLast(ts, offset);
        if (ts <= (timeCount == 0 ? -1 : timeTs[timeCount - 1])) return;
        long rel = offset - base;
        if (ts == 0 && rel == 0) return;
        if (timeCount >= timeSlots - 1) throw new CorruptLogException(file(".timeindex") + " is full: the roll rule let a batch in");
        addTimeEntry(ts, (int) rel);
    }

    private void checkAfterLast(long ts, long offset) {
        if (timeCount == 0) return;
        long lastTs = timeTs[timeCount - 1];
        long lastOff = base + timeRel[timeCount - 1];
        if (offset < lastOff || (ts > lastTs && offset == lastOff)) {
            throw new CorruptLogException(file(".timeindex") + ": entry (timestamp " + ts + ", offset " + offset
                    + ") refused: offsets must grow with timestamps after the last entry (" + lastTs + ", " + lastOff + ")");
        }
    }

    private void addOffsetEntry(int rel, int pos) {
        if (offCount == offRel.length) {
            offRel = Arrays.copyOf(offRel, offCount * 2);
            offPos = Arrays.copyOf(offPos, offCount * 2);
        }
        offRel[offCount] = rel;
        offPos[offCount] = pos;
        offCount++;
    }

    private void addTimeEntry(long ts, int rel) {
        if (timeCount == timeTs.length) {
            timeTs = Arrays.copyOf(timeTs, timeCount * 2);
            timeRel = Arrays.copyOf(timeRel, timeCount * 2);
        }
        timeTs[timeCount] = ts;
        timeRel[timeCount] = rel;
        timeCount++;
    }

    /** The entries not yet in the files, written after the ones there (time index first, as the core's bulk
     *  append: the last time index entry always covers up to the last offset index entry's batch). */
    private void writeEntries() throws IOException {
        if (timeWritten < timeCount) {
            ByteBuffer buf = ByteBuffer.allocate((timeCount - timeWritten) * TIME_ENTRY);
            for (int k = timeWritten; k < timeCount; k++) buf.putLong(timeTs[k]).putInt(timeRel[k]);
            write(timeIndex, buf.flip(), (long) timeWritten * TIME_ENTRY);
            timeWritten = timeCount;
            timeFileSize = Math.max(timeFileSize, (long) timeCount * TIME_ENTRY);
        }
        if (offWritten < offCount) {
            ByteBuffer buf = ByteBuffer.allocate((offCount - offWritten) * OFFSET_ENTRY);
            for (int k = offWritten; k < offCount; k++) buf.putInt(offRel[k]).putInt(offPos[k]);
            write(offsetIndex, buf.flip(), (long) offWritten * OFFSET_ENTRY);
            offWritten = offCount;
            offFileSize = Math.max(offFileSize, (long) offCount * OFFSET_ENTRY);
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
        boolean trimmed = offFileSize == (long) offCount * OFFSET_ENTRY && timeFileSize == (long) timeCount * TIME_ENTRY;
        boolean lastHoldsMax = timeCount > 0 && timeTs[timeCount - 1] == maxTs;
        if (trimmed && offWritten == offCount && timeWritten == timeCount && (maxTs < 0 || lastHoldsMax)) return;
        if (maxTs < 0) {
            if (timeCount > 0) {
                throw new CorruptLogException(file(".timeindex") + ": seal with no largest timestamp but entries up to timestamp "
                        + timeTs[timeCount - 1]);
            }
        } else if (timeCount > 0 && maxTs < timeTs[timeCount - 1]) {
            throw new CorruptLogException(file(".timeindex") + ": seal with largest timestamp " + maxTs + " below the last entry's "
                    + timeTs[timeCount - 1]);
        } else if (lastHoldsMax) {
            if (offsetOfMax != base + timeRel[timeCount - 1]) {
                throw new CorruptLogException(file(".timeindex") + ": the largest timestamp " + maxTs + " is at offset " + offsetOfMax
                        + ", but the last entry says " + (base + timeRel[timeCount - 1]));
            }
        } else {
            checkAfterLast(maxTs, offsetOfMax);
            addTimeEntry(maxTs, (int) (offsetOfMax - base));
        }
        trim();
    }

    /** Both index files cut to their entries (the core's clean close of the active segment; a seal's last step). */
    void trim() throws IOException {
        writeEntries();
        timeIndex.truncate((long) timeCount * TIME_ENTRY);
        offsetIndex.truncate((long) offCount * OFFSET_ENTRY);
        timeFileSize = (long) timeCount * TIME_ENTRY;
        offFileSize = (long) offCount * OFFSET_ENTRY;
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
