package io.seglog.spark.format;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The writer's half of a segment's two indexes, held in the heap: the index rule, the roll rule's inputs and the
 * seal entry (the Python core's LogSegment.index_batch, TimeIndex.maybe_append and seal). The one home of those
 * rules for both JVM writers: a partition's active segment ({@link ActiveSegment}, which keeps the files) and a
 * write task's staged segments (write/SegmentStager, based at 0, written whole when sealed).
 *
 * <p>Invariants:
 * <ul>
 * <li>Offset index entries are (last offset - base, batch start), one once more than index.interval.bytes were
 *   written since the last; a time index entry goes with it when the largest timestamp grew: (largest timestamp,
 *   last offset of the first batch that reached it). Entries only grow, and the time index's offsets grow with
 *   its timestamps.</li>
 * <li>The all-zero time entry (0, base) is written by the seal only (docs/format.md "Time index").</li>
 * <li>Room: the time index keeps its last slot for the seal entry; an index that would pass its slots means the
 *   roll rule let a batch in ({@link CorruptLogException}).</li>
 * </ul>
 */
public final class SegmentIndexer {
    static final int OFFSET_ENTRY = 8;
    static final int TIME_ENTRY = 12;

    private final Path offsetIndexFile;   // named in errors only
    private final Path timeIndexFile;
    final long base;
    private final AppendRules rules;
    // the slots each index may fill (the core's max_entries)
    long offSlots;
    long timeSlots;
    // (relative offset, position) and (timestamp, relative offset)
    int[] offRel = new int[16];
    int[] offPos = new int[16];
    int offCount;
    long[] timeTs = new long[16];
    int[] timeRel = new int[16];
    int timeCount;
    long maxTs = -1;
    long offsetOfMax;
    long firstTs = -1;
    long bytesSinceIndexEntry;

    SegmentIndexer(Path offsetIndexFile, Path timeIndexFile, long base, AppendRules rules, long offSlots, long timeSlots) {
        this.offsetIndexFile = offsetIndexFile;
        this.timeIndexFile = timeIndexFile;
        this.base = base;
        this.rules = rules;
        this.offSlots = offSlots;
        this.timeSlots = timeSlots;
        this.offsetOfMax = base - 1;
    }

    /** The indexes of a new segment at {@code base}, each with segment.index.bytes of slots. */
    public static SegmentIndexer empty(Path offsetIndexFile, Path timeIndexFile, long base, AppendRules rules) {
        return new SegmentIndexer(offsetIndexFile, timeIndexFile, base, rules, rules.slots(OFFSET_ENTRY), rules.slots(TIME_ENTRY));
    }

    public int offsetEntries() {
        return offCount;
    }

    public int timeEntries() {
        return timeCount;
    }

    /** The first timestamp (the first batch's base timestamp, else its largest; -1: none yet). */
    public long firstTs() {
        return firstTs;
    }

    /** Batches both indexes can still take (each may add one entry to each), the time index's last slot kept
     *  for the seal entry (the core's _entries_room). */
    public long entriesRoom() {
        return Math.min(offSlots - offCount, timeSlots - timeCount - 1);
    }

    /**
     * Whether the next batch rolls a segment of {@code size} bytes created at {@code createdMs}: the one roll rule
     * ({@link AppendRules#rolls}) with this segment's base, first timestamp and index room.
     */
    public boolean rolls(long size, long createdMs, long batchBytes, long lastOffset, long batchMaxTs, long now) {
        return rules.rolls(size, base, firstTs, createdMs, batchBytes, lastOffset, batchMaxTs, now, entriesRoom());
    }

    /**
     * The one index rule (the core's index_batch): an offset index entry (the batch's last offset, its start)
     * once more than index.interval.bytes were appended since the last entry, and with it a time index entry
     * (largest timestamp so far, the last offset of the first batch that reached it) if that timestamp grew.
     */
    public void indexBatch(long lastOffset, long position, long batchBytes, long batchFirstTs, long batchMaxTs) {
        if (batchMaxTs > maxTs) {
            maxTs = batchMaxTs;
            offsetOfMax = lastOffset;
        }
        if (firstTs < 0 && batchFirstTs >= 0) firstTs = batchFirstTs;
        if (bytesSinceIndexEntry > rules.indexIntervalBytes()) {
            if (offCount >= offSlots) throw new CorruptLogException(offsetIndexFile + " is full (" + offCount + " entries): the roll rule let a batch in");
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
        if (timeCount >= timeSlots - 1) throw new CorruptLogException(timeIndexFile + " is full: the roll rule let a batch in");
        addTimeEntry(ts, (int) rel);
    }

    private void checkAfterLast(long ts, long offset) {
        if (timeCount == 0) return;
        long lastTs = timeTs[timeCount - 1];
        long lastOff = base + timeRel[timeCount - 1];
        if (offset < lastOff || (ts > lastTs && offset == lastOff)) {
            throw new CorruptLogException(timeIndexFile + ": entry (timestamp " + ts + ", offset " + offset
                    + ") refused: offsets must grow with timestamps after the last entry (" + lastTs + ", " + lastOff + ")");
        }
    }

    /** Whether the time index already ends as a seal leaves it: no largest timestamp, or the last entry holds it. */
    boolean sealEntryWritten() {
        return maxTs < 0 || (timeCount > 0 && timeTs[timeCount - 1] == maxTs);
    }

    /**
     * The seal entry (the core's LogSegment.seal): the largest timestamp and the last offset of the first batch
     * holding it, unless the last entry holds that timestamp; the all-zero entry too, when it is the largest.
     */
    public void seal() {
        boolean lastHoldsMax = timeCount > 0 && timeTs[timeCount - 1] == maxTs;
        if (maxTs < 0) {
            if (timeCount > 0) {
                throw new CorruptLogException(timeIndexFile + ": seal with no largest timestamp but entries up to timestamp "
                        + timeTs[timeCount - 1]);
            }
        } else if (timeCount > 0 && maxTs < timeTs[timeCount - 1]) {
            throw new CorruptLogException(timeIndexFile + ": seal with largest timestamp " + maxTs + " below the last entry's "
                    + timeTs[timeCount - 1]);
        } else if (lastHoldsMax) {
            if (offsetOfMax != base + timeRel[timeCount - 1]) {
                throw new CorruptLogException(timeIndexFile + ": the largest timestamp " + maxTs + " is at offset " + offsetOfMax
                        + ", but the last entry says " + (base + timeRel[timeCount - 1]));
            }
        } else {
            checkAfterLast(maxTs, offsetOfMax);
            addTimeEntry(maxTs, (int) (offsetOfMax - base));
        }
    }

    void addOffsetEntry(int rel, int pos) {
        if (offCount == offRel.length) {
            offRel = Arrays.copyOf(offRel, offCount * 2);
            offPos = Arrays.copyOf(offPos, offCount * 2);
        }
        offRel[offCount] = rel;
        offPos[offCount] = pos;
        offCount++;
    }

    void addTimeEntry(long ts, int rel) {
        if (timeCount == timeTs.length) {
            timeTs = Arrays.copyOf(timeTs, timeCount * 2);
            timeRel = Arrays.copyOf(timeRel, timeCount * 2);
        }
        timeTs[timeCount] = ts;
        timeRel[timeCount] = rel;
        timeCount++;
    }

    /** Offset index entries {@code from}.. as the file holds them, ready to write. */
    public ByteBuffer offsetEntryBytes(int from) {
        ByteBuffer buf = ByteBuffer.allocate((offCount - from) * OFFSET_ENTRY);
        for (int k = from; k < offCount; k++) buf.putInt(offRel[k]).putInt(offPos[k]);
        return buf.flip();
    }

    /** Time index entries {@code from}.. as the file holds them, ready to write. */
    public ByteBuffer timeEntryBytes(int from) {
        ByteBuffer buf = ByteBuffer.allocate((timeCount - from) * TIME_ENTRY);
        for (int k = from; k < timeCount; k++) buf.putLong(timeTs[k]).putInt(timeRel[k]);
        return buf.flip();
    }
}
