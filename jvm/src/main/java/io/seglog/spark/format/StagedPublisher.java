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
 * Publishing staged segments at a partition's log end by rename: indexer/staged.py's rename path and
 * Log.adopt_segments, step for step, so that the folder the JVM leaves is the one the Python core leaves
 * for the same staged segments (tests/sink/test_jvm_formats.py compares them byte for byte). The caller
 * holds the partition's lock and has rolled the partition back to its committed end.
 *
 * <ol>
 * <li>Each staged batch's base offset (log end + its relative base) and partition leader epoch (the
 *   partition's write epoch: 0 in seglog's folders) are patched in place, one write per batch: both fields
 *   are outside the CRC (docs/format.md "Record batches"). The {@code .log} is forced, and the indexes unless
 *   the stager already forced them: a sealed segment is trusted once renamed in.</li>
 * <li>The active segment is sealed (its seal entry, both indexes trimmed; no fsync: step 4 makes it
 *   durable), or, empty, removed ({@code .log} first, so no reader lists a segment without its indexes).</li>
 * <li>Each staged segment's {@code .index}, {@code .timeindex} and, last, {@code .log} are renamed to
 *   {@code <B>.*} (a segment exists when its {@code .log} does); the last becomes the active segment.</li>
 * <li>The segment sealed in step 2 is forced (the core's flush of rolled segments) and the folder fsynced:
 *   everything is durable before the commit that makes it visible.</li>
 * </ol>
 * Nothing here is visible before the commit (readers stop at the committed end, docs/spec.md §4); a crash
 * part way leaves records past the committed end, which the next delivery rolls back.
 *
 * <p>Not here (the core's copy path): staged segments below the core's rename_min_bytes are copied onto the
 * active segment by the Python publisher, so micro-batches leave no tiny segments; this publisher renames
 * every non-empty one in, and the sidecar's merge job (docs/spec.md §3.10) joins small sealed segments.
 */
public final class StagedPublisher {
    private static final int META = 36;
    private static final int OFFSET_ENTRY = 8;
    private static final int TIME_ENTRY = 12;

    private StagedPublisher() {}

    /** What a publish did: the log end before and after, and the base offsets of the segments renamed in. */
    public record Result(long start, long end, List<Long> bases) {}

    /**
     * Put {@code staged} (in order) at the end of {@code <root>/<topic>-<partition>}; {@code codec} is the
     * topic's codec id, which every staged batch must carry (the stager compresses with it).
     */
    public static Result publish(Path root, String topic, int partition, List<StagedSegment> staged, int codec) {
        Path dir = TopicLayout.partitionDir(root, topic, partition);
        try {
            GroupShared.createDirectories(dir);
            return publishIn(root, dir, topic, partition, staged, codec);
        } catch (IOException e) {
            throw new StorageException(dir + ": publishing staged segments failed: " + e, e);
        }
    }

    private static Result publishIn(Path root, Path dir, String topic, int partition, List<StagedSegment> staged, int codec)
            throws IOException {
        List<StagedSegment> run = new ArrayList<>();
        for (StagedSegment s : staged) if (s.records() > 0) run.add(s);
        long[] bases = PartitionLog.listBases(dir, null);
        boolean dense = !OffsetGaps.at(root).mayHaveGaps(topic, partition);
        int epochs = LeaderEpochs.maxLeaderEpoch(dir);
        long active = bases.length == 0 ? -1 : bases[bases.length - 1];
        long start;
        int epoch;
        if (active < 0) {
            // a new partition: the core's writable open starts it at the checkpointed log start
            start = LogStartCheckpoint.readFile(root.resolve("log-start-offset-checkpoint")).getOrDefault(topic + "-" + partition, 0L);
            epoch = LeaderEpochs.SEGLOG_LEADER_EPOCH;
        } else {
            try (Segment seg = Segment.open(dir, active, dense, epochs)) {
                start = seg.nextOffset();
                if (seg.wholeBatchesEnd() != seg.size()) {
                    throw new CorruptLogException(seg.path() + ": bytes after the last whole batch at position "
                            + seg.wholeBatchesEnd() + ": roll the partition back to its committed end first");
                }
            }
            epoch = writeEpoch(dir, bases, dense, epochs);
        }
        if (run.isEmpty()) return new Result(start, start, List.of());
        long base = start;
        for (StagedSegment s : run) {
            checkCodec(s, codec);
            patch(s, base, epoch);
            base += s.records();
        }
        Path sealed = null;
        if (active >= 0) {
            Path log = dir.resolve(Segment.fileName(active, ".log"));
            if (Files.size(log) > 0) {
                sealActive(dir, active, dense, epochs);
                sealed = log;
            } else {
                for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
                    Files.deleteIfExists(dir.resolve(Segment.fileName(active, suffix)));
                }
            }
        }
        List<Long> adopted = new ArrayList<>();
        base = start;
        for (StagedSegment s : run) {
            for (String suffix : new String[] {".index", ".timeindex", ".log"}) {
                Files.move(Path.of(s.stem() + suffix), dir.resolve(Segment.fileName(base, suffix)),
                        StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            }
            adopted.add(base);
            base += s.records();
        }
        if (sealed != null) {
            for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
                FileSync.file(dir.resolve(Segment.fileName(active, suffix)));
            }
        }
        FileSync.directory(dir);
        return new Result(start, base, adopted);
    }

    private static void checkCodec(StagedSegment s, int codec) throws IOException {
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
        ByteBuffer meta = ByteBuffer.wrap(Files.readAllBytes(Path.of(s.stem() + ".batches")));
        if (meta.capacity() != s.batches() * META) {
            throw new CorruptLogException(s.stem() + ".batches: " + meta.capacity() / META + " batches, the writer reported " + s.batches());
        }
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
            ch.force(true);   // the real offsets durable before the rename
        }
        if (!s.durable()) {
            FileSync.file(Path.of(s.stem() + ".index"));
            FileSync.file(Path.of(s.stem() + ".timeindex"));
        }
    }

    /**
     * Seal the active segment as a roll does (the core's LogSegment.seal with durable=False): the seal entry
     * (its largest timestamp, the last offset of the first batch holding it) unless the last time index entry
     * already holds that timestamp, then both indexes trimmed to their entries (trimming last: a crash before
     * it leaves an inactive segment, which the sidecar seals again).
     */
    private static void sealActive(Path dir, long base, boolean dense, int epochs) throws IOException {
        long maxTs;
        long offsetOfMax;
        int timeEntries;
        int offsetEntries;
        long lastEntryTs;
        try (Segment seg = Segment.open(dir, base, dense, epochs)) {
            OffsetIndexFile oi = seg.offsetIndex();
            TimeIndexFile ti = seg.timeIndex();
            offsetEntries = oi.entries();
            timeEntries = ti.entries();
            lastEntryTs = timeEntries > 0 ? ti.timestampAt(timeEntries - 1) : -1;
            // what the time index covers: up to the last offset index entry's batch (indexer/segment.py
            // _time_index_covered); the one entry never written to a preallocated file, (0, base), is the
            // first batch's when that batch ends at the base with timestamp 0
            maxTs = -1;
            offsetOfMax = base - 1;
            if (timeEntries > 0) {
                maxTs = lastEntryTs;
                offsetOfMax = ti.offsetAt(timeEntries - 1);
            } else if (offsetEntries > 0) {
                Segment.Batches first = seg.batchesFrom(0, base, -1, Long.MAX_VALUE);
                if (first.hasNext()) {
                    FileChannelRecordBatch b = first.next();
                    if (b.maxTimestamp() == 0 && b.lastOffset() == base) {
                        maxTs = 0;
                        offsetOfMax = base;
                    }
                }
            }
            // the batches from the last offset index entry's on: one counts with a strictly larger timestamp
            Segment.Batches tail = offsetEntries == 0 ? seg.batchesFrom(0, base, -1, Long.MAX_VALUE)
                    : seg.batchesFrom(oi.positionAt(offsetEntries - 1), -1, oi.offsetAt(offsetEntries - 1), Long.MAX_VALUE);
            while (tail.hasNext()) {
                FileChannelRecordBatch b = tail.next();
                if (b.maxTimestamp() > maxTs) {
                    maxTs = b.maxTimestamp();
                    offsetOfMax = b.lastOffset();
                }
            }
        }
        Path timeIndex = dir.resolve(Segment.fileName(base, ".timeindex"));
        Path offsetIndex = dir.resolve(Segment.fileName(base, ".index"));
        if (maxTs >= 0 && !(timeEntries > 0 && lastEntryTs == maxTs)) {
            if (timeEntries > 0 && maxTs < lastEntryTs) {
                throw new CorruptLogException(timeIndex + ": seal with largest timestamp " + maxTs + " below the last entry's " + lastEntryTs);
            }
            try (FileChannel ch = FileChannel.open(timeIndex, StandardOpenOption.WRITE)) {
                long at = (long) timeEntries * TIME_ENTRY;
                if (ch.size() < at + TIME_ENTRY) {
                    // a trimmed or full file grows by two zero slots first: a crash before the entry is
                    // written leaves zeros that count as nothing (docs/format.md "Time index")
                    ch.write(ByteBuffer.allocate(2 * TIME_ENTRY), at);
                    ch.force(false);
                }
                ByteBuffer entry = ByteBuffer.allocate(TIME_ENTRY).putLong(maxTs).putInt((int) (offsetOfMax - base)).flip();
                while (entry.hasRemaining()) ch.write(entry, at + entry.position());
            }
            timeEntries++;
        } else if (maxTs < 0 && timeEntries > 0) {
            throw new CorruptLogException(timeIndex + ": seal with no largest timestamp but entries up to timestamp " + lastEntryTs);
        }
        try (FileChannel ch = FileChannel.open(timeIndex, StandardOpenOption.WRITE)) {
            ch.truncate((long) timeEntries * TIME_ENTRY);
        }
        try (FileChannel ch = FileChannel.open(offsetIndex, StandardOpenOption.WRITE)) {
            ch.truncate((long) offsetEntries * OFFSET_ENTRY);
        }
    }
}
