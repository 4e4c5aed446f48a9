package io.seglog.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.SimpleRecord;

/**
 * Real log folders for the JVM reader's tests, in the on-disk format of docs/format.md: segments of
 * Kafka batches (kafka-clients' own encoder), an offset index without entries (a reader then scans from the
 * segment's start, which is always right) and a time index holding only the seal entry (the largest
 * timestamp, the last offset of the first batch holding it; none when the records carry no timestamp), so
 * that a segment below the last is sealed as a roll leaves it, the sink's commit log and the log start
 * checkpoint.
 */
public final class TestLogs {
    public static final long T0 = 1_700_000_000_000L;

    private TestLogs() {}

    /** {@code count} records from {@code base}, one batch, timestamps T0 + offset, leader epoch 0. */
    public static ByteBuffer batch(long base, int count) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            long offset = base + i;
            records[i] = new SimpleRecord(T0 + offset, ("k" + offset).getBytes(StandardCharsets.UTF_8),
                ("value-" + offset).getBytes(StandardCharsets.UTF_8));
        }
        // Partition leader epoch 0, as seglog writes (docs/kafka.md "Leader epochs"; kafka-clients' default, -1,
        // is a producer's batch before a broker stamps it, and a reader reports it as a corrupt batch).
        return MemoryRecords.withRecords(base, Compression.NONE, 0, records).buffer();
    }

    /** A transactional batch of producer {@code pid}. */
    public static ByteBuffer txnBatch(long base, int count, long pid) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            records[i] = new SimpleRecord(T0 + base + i, null, ("txn-" + (base + i)).getBytes(StandardCharsets.UTF_8));
        }
        return MemoryRecords.withTransactionalRecords(base, Compression.NONE, pid, (short) 0, 0, 0, records).buffer();
    }

    /** A commit or abort marker of producer {@code pid} at {@code offset}. */
    public static ByteBuffer marker(long offset, long pid, boolean commit) {
        return MemoryRecords.withEndTransactionMarker(offset, T0 + offset, 0, pid, (short) 0,
            new EndTransactionMarker(commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT, 0)).buffer();
    }

    /** Batches of {@code per} records covering [from, to). */
    public static List<ByteBuffer> batches(long from, long to, int per) {
        List<ByteBuffer> out = new ArrayList<>();
        for (long b = from; b < to; b += per) out.add(batch(b, (int) Math.min(per, to - b)));
        return out;
    }

    public static Path partitionDir(Path root, String topic, int partition) {
        return root.resolve(topic + "-" + partition);
    }

    public static Path file(Path dir, long base, String suffix) {
        return dir.resolve(String.format("%020d%s", base, suffix));
    }

    /** A segment: its index files first (no offset index entries; the time index's seal entry), then its
     *  .log, as a writer creates them. */
    public static Path segment(Path dir, long base, List<ByteBuffer> batches) {
        try {
            Files.createDirectories(dir);
            Files.write(file(dir, base, ".index"), new byte[0]);
            Files.write(file(dir, base, ".timeindex"), sealEntry(base, batches));
            Path log = file(dir, base, ".log");
            try (FileChannel ch = FileChannel.open(log, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                for (ByteBuffer b : batches) {
                    ByteBuffer d = b.duplicate();
                    while (d.hasRemaining()) ch.write(d);
                }
            }
            return log;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Segments of {@code perSegment} offsets covering [0, end), batches of {@code perBatch}, each segment's
     *  offset index holding an entry for every batch but the first (the batch's last offset, where the batch
     *  starts: docs/format.md, "Offset index (`.index`)"), as a writer with index.interval.bytes below one
     *  batch leaves it: every batch start is a place a task may cut. */
    public static void indexedSegments(Path dir, long end, int perSegment, int perBatch) {
        for (long base = 0; base < end; base += perSegment) {
            List<ByteBuffer> written = batches(base, Math.min(end, base + perSegment), perBatch);
            segment(dir, base, written);
            ByteBuffer entries = ByteBuffer.allocate(8 * Math.max(0, written.size() - 1));
            int position = 0;
            for (int i = 0; i < written.size(); i++) {
                ByteBuffer b = written.get(i);
                if (i > 0) {
                    long last = MemoryRecords.readableRecords(b.duplicate()).batches().iterator().next().lastOffset();
                    entries.putInt((int) (last - base)).putInt(position);
                }
                position += b.remaining();
            }
            try {
                Files.write(file(dir, base, ".index"), entries.array());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** The time index's seal entry for {@code batches} (docs/format.md "Time index"): 12 bytes, or none when
     *  no record carries a timestamp. */
    private static byte[] sealEntry(long base, List<ByteBuffer> batches) {
        long largest = RecordBatch.NO_TIMESTAMP;
        long at = -1;
        for (ByteBuffer b : batches) {
            for (RecordBatch batch : MemoryRecords.readableRecords(b.duplicate()).batches()) {
                if (batch.maxTimestamp() > largest) {
                    largest = batch.maxTimestamp();
                    at = batch.lastOffset();
                }
            }
        }
        if (largest < 0) return new byte[0];
        return ByteBuffer.allocate(12).putLong(largest).putInt((int) (at - base)).array();
    }

    /** Appends batches to an existing segment's .log (an append after the commit: not yet visible). */
    public static void append(Path log, List<ByteBuffer> batches) {
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            for (ByteBuffer b : batches) {
                ByteBuffer d = b.duplicate();
                while (d.hasRemaining()) ch.write(d);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Retention's first phase for one segment: its files renamed .deleted, the .log first. */
    public static void delete(Path dir, long base) {
        try {
            for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
                Path f = file(dir, base, suffix);
                if (Files.exists(f)) Files.move(f, f.resolveSibling(f.getFileName() + ".deleted"), StandardCopyOption.ATOMIC_MOVE);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static final Map<Path, Integer> SEQ = new java.util.concurrent.ConcurrentHashMap<>();

    /** The sink's commit: a new commit file holding every partition's committed end. */
    public static void commit(Path root, String topic, Map<Integer, Long> ends) {
        Path dir = root.resolve("_seglog").resolve("commits").resolve(topic);
        try {
            Files.createDirectories(dir);
            int seq = SEQ.merge(dir, 1, Integer::sum) - 1;
            StringBuilder json = new StringBuilder("{\"seq\": " + seq + ", \"writer_id\": \"junit\", \"batch_id\": " + seq
                + ", \"time\": 0, \"end_offsets\": {");
            String sep = "";
            for (Map.Entry<Integer, Long> e : new TreeMap<>(ends).entrySet()) {
                json.append(sep).append('"').append(e.getKey()).append("\": ").append(e.getValue());
                sep = ", ";
            }
            json.append("}, \"writers\": {\"junit\": ").append(seq).append("}}");
            Files.writeString(dir.resolve(String.format("%020d.json", seq)), json.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The log start offset checkpoint (Kafka's text format), "topic-partition" -> offset. */
    public static void logStart(Path root, Map<String, Long> starts) {
        StringBuilder text = new StringBuilder("0\n" + starts.size() + "\n");
        for (Map.Entry<String, Long> e : starts.entrySet()) {
            int dash = e.getKey().lastIndexOf('-');
            text.append(e.getKey(), 0, dash).append(' ').append(e.getKey().substring(dash + 1)).append(' ')
                .append(e.getValue()).append('\n');
        }
        try {
            Files.writeString(root.resolve("log-start-offset-checkpoint"), text.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
