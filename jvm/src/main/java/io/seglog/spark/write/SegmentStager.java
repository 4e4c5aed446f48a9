package io.seglog.spark.write;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import io.seglog.spark.format.AppendRules;
import io.seglog.spark.format.GroupShared;
import io.seglog.spark.format.SegmentIndexer;

/**
 * One log partition's records within one write task: encoded into batches and written as staged
 * segments ({@code <stem>.log}, {@code .index}, {@code .timeindex}, {@code .batches}) whose offsets
 * start at 0 in each segment, compressed with the topic's codec (BatchEncoder). The publisher
 * (tests/oracles/staged.py) gives each segment its real base offset B: a batch's base offset becomes B plus the staged one, and the indexes, relative to the
 * segment's base and to positions in the file, stay as they are.
 *
 * <p>Invariants (the same rules as indexer/segment.py, so a staged segment is what seglog's Python
 * Log writes for the same batches from an empty segment, then rolled; the roll rule is {@link AppendRules#rolls},
 * the index rule and the seal entry {@link SegmentIndexer}'s, as for the JVM's appends to an active segment):
 * <ul>
 * <li>Roll: a batch goes to a new segment when the current one holds bytes and the batch would pass
 *   segment.bytes, an index has no room (the time index keeps its last slot for the seal entry), the
 *   relative offset would pass int32, or segment.ms is exceeded (docs/spec.md §3.2).</li>
 * <li>Index: an offset index entry (batch last offset, batch start) once more than
 *   index.interval.bytes were written since the last entry, and with it a time index entry
 *   (largest timestamp so far, last offset of the first batch that reached it) if that timestamp
 *   grew; never the all-zero entry while the segment is written (docs/format.md "Time index").</li>
 * <li>Every staged segment is sealed when finished (seal entry, trimmed indexes), so whichever
 *   segment follows it at publish time, it is a valid sealed segment (docs/spec.md §2.5).</li>
 * <li>Batch rows: written to {@code .batches}, or sent with the task's report within its {@link BatchRowsBudget}.</li>
 * <li>Held in memory: with an {@link InlineSegmentBudget} (format("seglog")'s tasks), a segment is held in the heap
 *   and sent whole with the report (its bytes and batch rows; no folder, no file) while it stays below
 *   {@code durableMinBytes} (the publisher copies it, reading only those) and within the budget; else it goes to
 *   its files, the bytes so far first. Its indexes are never written: a copy indexes the batches anew.</li>
 * <li>Durability: a staged file is either copied (its copy is fsynced by the Log's flush) or
 *   patched and renamed by the driver, which fsyncs it after patching and before the commit. The
 *   bytes of a large one are written back while the task runs ({@link BackgroundSync}), so that
 *   fsync finds only the patched pages dirty.</li>
 * </ul>
 */
final class SegmentStager {
    static final int BATCH_META_SIZE = 36;   // position i64, last offset i64, first ts i64, max ts i64, count i32

    /** A finished staged segment, as the task reports it to the driver. */
    static final class Staged {
        final String stem;
        final long size;
        final long records;
        final int batches;
        final boolean durable;   // all its files forced by the task (BackgroundSync) before it reported
        final byte[] batchRows;  // its .batches rows, sent with the report (null: written to <stem>.batches)
        final byte[] data;       // its .log bytes, held in memory and sent with the report (null: in <stem>.log)

        Staged(String stem, long size, long records, int batches, boolean durable, byte[] batchRows) {
            this(stem, size, records, batches, durable, batchRows, null);
        }

        Staged(String stem, long size, long records, int batches, boolean durable, byte[] batchRows, byte[] data) {
            this.stem = stem;
            this.size = size;
            this.records = records;
            this.batches = batches;
            this.durable = durable;
            this.batchRows = batchRows;
            this.data = data;
        }

        /** What the task's report says of it (the driver publishes from this). */
        io.seglog.spark.format.StagedSegment reported() {
            return new io.seglog.spark.format.StagedSegment(stem, size, records, batches, durable, batchRows, data);
        }
    }

    private final TaskFolder folder;   // the task's, shared by its stagers: made once
    private final String prefix;
    private final StageConfig cfg;
    private final AppendRules rules;
    private final long now;
    private final BackgroundSync sync;   // the task's: writes staged bytes back while it encodes
    private final long durableMinBytes;  // a finished segment this large is forced (it will be renamed in)
    private final BatchRowsBudget rowsBudget;   // the task's (null: every segment's rows in its .batches file)
    private final InlineSegmentBudget inline;   // the task's (null: every segment in files)
    private final BatchEncoder encoder;
    // the open batch's first key (at most KEY_SHOWN + 1 bytes; null: none): a batch over max.message.bytes holds
    // one record (the batching budget is below the limit), this one, and the error names it
    private byte[] firstKey;
    private boolean firstKeyNull;
    static final int KEY_SHOWN = 40;
    private final List<Staged> finished = new ArrayList<>();
    private boolean groupShared;   // dir is group-writable: so are its files (GroupShared, shared roots)
    private long records;
    private long bytes;

    // the current staged segment
    private int seq = -1;
    private FileChannel log;
    private ByteBuffer mem;    // the segment's bytes while it is held in memory (then log is null)
    private ByteBuffer meta;
    private long size;
    private long nextRel;
    private int batches;
    private long createdMs;
    private SegmentIndexer indexes;

    SegmentStager(Path dir, String prefix, StageConfig cfg, long now, BackgroundSync sync, long durableMinBytes) {
        this(new TaskFolder(dir), prefix, cfg, now, sync, durableMinBytes, null);
    }

    /** {@code rowsBudget}: the task's budget for batch rows sent with its report instead of a {@code .batches}
     *  file (null: always the file, as tests/oracles/staged.py reads it). */
    SegmentStager(Path dir, String prefix, StageConfig cfg, long now, BackgroundSync sync, long durableMinBytes,
                  BatchRowsBudget rowsBudget) {
        this(new TaskFolder(dir), prefix, cfg, now, sync, durableMinBytes, rowsBudget);
    }

    /** {@code folder}: the task's staging folder, shared by all its stagers (made by the first segment opened). */
    SegmentStager(TaskFolder folder, String prefix, StageConfig cfg, long now, BackgroundSync sync, long durableMinBytes,
                  BatchRowsBudget rowsBudget) {
        this(folder, prefix, cfg, now, sync, durableMinBytes, rowsBudget, null);
    }

    /** {@code inline}: the task's budget for segments held in memory and sent whole with its report (null: none). */
    SegmentStager(TaskFolder folder, String prefix, StageConfig cfg, long now, BackgroundSync sync, long durableMinBytes,
                  BatchRowsBudget rowsBudget, InlineSegmentBudget inline) {
        this.folder = folder;
        this.rowsBudget = rowsBudget;
        this.inline = inline;
        this.prefix = prefix;
        this.cfg = cfg;
        this.rules = new AppendRules(cfg.segmentBytes, cfg.segmentMs, cfg.indexBytes, cfg.indexInterval, cfg.codec);
        this.now = now;
        this.sync = sync;
        this.durableMinBytes = durableMinBytes;
        this.encoder = new BatchEncoder(cfg.maxBatchBytes, cfg.logAppendTime, cfg.codec);
    }

    long records() {
        return records;
    }

    long bytes() {
        return bytes;
    }

    List<Staged> segments() {
        return finished;
    }

    /** One record; {@code timestamp} in ms (-1: none), already resolved (null = now, LogAppendTime). */
    void add(long timestamp, byte[] key, BytesView value, byte[][] hKeys, byte[][] hValues) throws IOException {
        int rs = encoder.recordSize(timestamp, key, value, hKeys, hValues);
        if (!encoder.fits(rs)) {
            flushBatch();
            rs = encoder.recordSize(timestamp, key, value, hKeys, hValues);
        }
        if (encoder.count() == 0) {
            firstKeyNull = key == null;
            firstKey = key == null ? null : java.util.Arrays.copyOf(key, Math.min(key.length, KEY_SHOWN + 1));
        }
        encoder.append(timestamp, key, value, hKeys, hValues, rs);
        records++;
    }

    /** Write the open batch (if any) and seal the last segment; the task then reports {@link #segments()}. */
    void finish() throws IOException {
        flushBatch();
        if (log != null || mem != null) {
            closeSegment();
        }
    }

    /** Close files without reporting (a failed task; its folder is removed by the driver). */
    void abort() {
        mem = null;
        try {
            if (log != null) {
                log.close();
            }
        } catch (IOException ignored) {
            // the driver removes the whole staging folder of a failed attempt
        }
    }

    /** A key as Python shows bytes ({@code b'k\\x00'}), its first {@value #KEY_SHOWN} bytes: the Python sink's messages. */
    static String showKey(byte[] key) {
        if (key == null) return "null";
        int n = Math.min(key.length, KEY_SHOWN);
        boolean single = false;
        boolean dbl = false;
        for (int i = 0; i < n; i++) {
            single |= key[i] == '\'';
            dbl |= key[i] == '"';
        }
        char quote = single && !dbl ? '"' : '\'';
        StringBuilder sb = new StringBuilder("b").append(quote);
        for (int i = 0; i < n; i++) {
            int b = key[i] & 0xff;
            if (b == quote || b == '\\') sb.append('\\').append((char) b);
            else if (b == '\t') sb.append("\\t");
            else if (b == '\n') sb.append("\\n");
            else if (b == '\r') sb.append("\\r");
            else if (b >= 0x20 && b < 0x7f) sb.append((char) b);
            else sb.append(String.format("\\x%02x", b));
        }
        sb.append(quote);
        return key.length > KEY_SHOWN ? sb.append("...").toString() : sb.toString();
    }

    private void flushBatch() throws IOException {
        int count = encoder.count();
        if (count == 0) {
            return;
        }
        // Sizes as written (compressed with the topic's codec): max.message.bytes, the roll and the
        // index rules all see the batch's bytes on disk, as Log._append after compress_encoded.
        ByteBuffer out = encoder.finish(0, 0);
        int batchSize = out.remaining();
        if (batchSize > cfg.maxMessageBytes) {
            throw new RecordTooLargeException("seglog RecordTooLargeError: a record (key " + showKey(firstKeyNull ? null : firstKey)
                    + ") encodes to a batch of " + batchSize + " bytes, more than max.message.bytes=" + cfg.maxMessageBytes);
        }
        long batchMax = encoder.maxTimestamp();
        long batchFirst = encoder.baseTimestamp();
        if ((log == null && mem == null) || indexes.rolls(size, createdMs, batchSize, nextRel + count - 1, batchMax, now)) {
            if (log != null || mem != null) {
                closeSegment();
            }
            openSegment();
        }
        out.putLong(0, nextRel);   // the base offset, relative to the staged segment (outside the CRC)
        long position = size;
        if (mem != null && !(size + batchSize < durableMinBytes && inline.take(batchSize + BATCH_META_SIZE))) spill();
        if (mem != null) {
            if (mem.remaining() < batchSize) {
                ByteBuffer bigger = ByteBuffer.allocate((int) Math.max(mem.capacity() * 2L, size + batchSize));
                bigger.put(mem.flip());
                mem = bigger;
            }
            mem.put(out);
        } else {
            while (out.hasRemaining()) {
                log.write(out);
            }
            sync.wrote(log, batchSize);
        }
        long lastRel = nextRel + count - 1;
        indexes.indexBatch(lastRel, position, batchSize, batchFirst, batchMax);
        if (meta.remaining() < BATCH_META_SIZE) {
            ByteBuffer bigger = ByteBuffer.allocate(meta.capacity() * 2);
            meta.flip();
            bigger.put(meta);
            meta = bigger;
        }
        meta.putLong(position).putLong(lastRel).putLong(batchFirst).putLong(batchMax).putInt(count);
        size += batchSize;
        bytes += batchSize;
        nextRel += count;
        batches++;
        encoder.clear();
    }

    private Path file(String suffix) {
        return folder.dir.resolve(String.format("%s-%d%s", prefix, seq, suffix));
    }

    private void openSegment() throws IOException {
        seq++;
        if (inline != null) {
            mem = ByteBuffer.allocate(16 << 10);   // in memory until spill(); grows by doubling
        } else {
            groupShared = folder.make();    // never the run's folder: an aborted run stays gone
            log = GroupShared.createNew(file(".log"), groupShared);
        }
        meta = ByteBuffer.allocate(BATCH_META_SIZE * 64);
        size = 0;
        nextRel = 0;
        batches = 0;
        createdMs = System.currentTimeMillis();
        indexes = SegmentIndexer.empty(file(".index"), file(".timeindex"), 0, rules);
    }

    /** The segment held in memory so far to its {@code .log} (it reached durableMinBytes, or its task's budget): its
     *  files are made now, and its budget given back. */
    private void spill() throws IOException {
        groupShared = folder.make();    // never the run's folder: an aborted run stays gone
        log = GroupShared.createNew(file(".log"), groupShared);
        mem.flip();
        while (mem.hasRemaining()) {
            log.write(mem);
        }
        sync.wrote(log, size);
        inline.giveBack(size + (long) batches * BATCH_META_SIZE);
        mem = null;
    }

    /** Seal (the seal entry, as LogSegment.seal) and write both indexes trimmed; a segment held in memory is reported
     *  with its bytes and batch rows instead (its indexes are never read: the publisher copies it). */
    private void closeSegment() throws IOException {
        if (mem != null) {
            byte[] rows = new byte[meta.flip().remaining()];
            meta.get(rows);
            finished.add(new Staged(file("").toString(), size, nextRel, batches, false, rows,
                    java.util.Arrays.copyOf(mem.array(), (int) size)));
            mem = null;
            return;
        }
        indexes.seal();
        // a segment the driver renames in must be durable; a small one is copied (its copy is fsynced)
        boolean durable = size >= durableMinBytes;
        sync.close(log, durable);
        log = null;
        writeFile(file(".index"), indexes.offsetEntryBytes(0), durable);
        writeFile(file(".timeindex"), indexes.timeEntryBytes(0), durable);
        meta.flip();
        byte[] rows = null;
        if (rowsBudget != null && rowsBudget.take(meta.remaining())) {
            rows = new byte[meta.remaining()];
            meta.get(rows);
        } else {
            writeFile(file(".batches"), meta, false);   // read by the driver only, never renamed in
        }
        String stem = file("").toString();
        finished.add(new Staged(stem, size, nextRel, batches, durable, rows));
    }

    /** Write a whole small file ({@code data}, flipped); {@code durable}: forced and closed by the sync thread. */
    private void writeFile(Path path, ByteBuffer data, boolean durable) throws IOException {
        FileChannel ch = GroupShared.createNew(path, groupShared);
        try {
            while (data.hasRemaining()) {
                ch.write(data);
            }
        } catch (IOException e) {
            ch.close();
            throw e;
        }
        if (durable) {
            sync.close(ch, true);
        } else {
            ch.close();
        }
    }
}
