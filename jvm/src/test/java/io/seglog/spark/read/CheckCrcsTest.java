package io.seglog.spark.read;

import static io.seglog.spark.TestLogs.batch;
import static io.seglog.spark.TestLogs.commit;
import static io.seglog.spark.TestLogs.marker;
import static io.seglog.spark.TestLogs.partitionDir;
import static io.seglog.spark.TestLogs.segment;
import static io.seglog.spark.TestLogs.txnBatch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.format.CorruptLogException;
import io.seglog.spark.format.Segment;

/**
 * checkCrcs (Kafka's check.crcs): false skips each batch's CRC and nothing else. On healthy logs (random ones, dense
 * with transactions and compacted, and every healthy case of the conformance corpus) a pushed count and a read answer
 * exactly as with CRC checks; a damaged header or length is the same typed error; only a flipped byte inside a record's
 * bytes goes unseen. The pushed count without CRCs reads batch headers, and the bodies of the range's two ends only.
 */
class CheckCrcsTest {
    @TempDir
    Path root;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PushedAggregate COUNT = PushedAggregate.of(new Aggregation(new AggregateFunc[] {new CountStar()},
        new Expression[0]));
    private static final PushedAggregate COUNT_AND_OFFSETS = PushedAggregate.of(new Aggregation(new AggregateFunc[] {
        new CountStar(), new Min(FieldReference.apply("offset")), new Max(FieldReference.apply("offset")),
        new Max(FieldReference.apply("timestamp"))}, new Expression[0]));

    private static ReadOptions options(Path root, String topic, boolean checkCrcs, String isolation, String... more) {
        Map<String, String> o = new HashMap<>(Map.of("path", root.toString(), "topic", topic, "checkCrcs",
            String.valueOf(checkCrcs), "kafka.isolation.level", isolation));
        for (int i = 0; i < more.length; i += 2) o.put(more[i], more[i + 1]);
        return ReadOptions.parse(o).forBatch();
    }

    /** Every record of the read, planned as a batch read plans it, through the row or the columnar reader, as
     *  "offset key value" lines. */
    private static List<String> read(ReadOptions opts, ScanBounds bounds, boolean columnar) {
        List<String> out = new ArrayList<>();
        StructType schema = new StructType().add("key", "binary").add("value", "binary").add("offset", "long");
        for (List<Slice> task : Planner.plan(opts, bounds, 2, DataLoss.untold())) {
            Slice[] slices = task.toArray(new Slice[0]);
            if (!columnar) {
                try (SeglogPartitionReader r = new SeglogPartitionReader(opts, bounds, schema, slices)) {
                    while (r.next()) out.add(line(r.get()));
                }
            } else {
                try (SeglogColumnarPartitionReader r = new SeglogColumnarPartitionReader(opts, bounds, schema, slices)) {
                    while (r.next()) {
                        ColumnarBatch b = r.get();
                        for (int i = 0; i < b.numRows(); i++) out.add(line(b.getRow(i)));
                    }
                }
            }
        }
        return out;
    }

    private static String line(InternalRow r) {
        return r.getLong(2) + " " + (r.isNullAt(0) ? "-" : Arrays.toString(r.getBinary(0))) + " "
            + (r.isNullAt(1) ? "-" : Arrays.toString(r.getBinary(1)));
    }

    private static long[] answer(PushedAggregate agg, ReadOptions opts, ScanBounds bounds) {
        InternalRow[] rows = agg.rows(opts, bounds);
        assertEquals(1, rows.length);
        long[] out = new long[agg.aggregates.size()];
        for (int i = 0; i < out.length; i++) out[i] = rows[0].isNullAt(i) ? Long.MIN_VALUE : rows[0].getLong(i);
        return out;
    }

    // ------------------------------------------------------------------------------------------ random logs

    /** Records at {@code offsets} in one batch based at {@code base} (a compacted batch: its base may be no record's). */
    private static ByteBuffer sparse(long base, long last, List<Long> offsets) {
        MemoryRecordsBuilder b = MemoryRecords.builder(ByteBuffer.allocate(8192), RecordBatch.CURRENT_MAGIC_VALUE,
            Compression.NONE, TimestampType.CREATE_TIME, base, RecordBatch.NO_TIMESTAMP, 0);
        for (long o : offsets) b.appendWithOffset(o, 1_700_000_000_000L + (o * 13) % 50, ("k" + o).getBytes(StandardCharsets.UTF_8),
            ("v" + o).getBytes(StandardCharsets.UTF_8));
        if (offsets.isEmpty() || offsets.get(offsets.size() - 1) < last) {
            // keep the batch's last offset, as Kafka's cleaner does: rebuilt with the last offset delta set
            MemoryRecords m = b.build();
            ByteBuffer buf = m.buffer();
            buf.putInt(23, (int) (last - base));
            return resealed(buf);
        }
        return b.build().buffer();
    }

    /** The batch's CRC made to match its bytes again (a header field changed on purpose). */
    private static ByteBuffer resealed(ByteBuffer buf) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(buf.duplicate().position(21));
        buf.putInt(17, (int) crc.getValue());
        return buf;
    }

    /** A random dense log of topic {@code topic}: plain and transactional batches, commit and abort markers, maybe a
     *  transaction left open, over two or three segments. Returns its end. */
    private long denseLog(Random rnd, String topic) {
        List<ByteBuffer> all = new ArrayList<>();
        List<Long> bases = new ArrayList<>();
        long next = 0;
        List<Long> open = new ArrayList<>();
        int n = 4 + rnd.nextInt(20);
        for (int i = 0; i < n; i++) {
            bases.add(next);
            int kind = rnd.nextInt(4);
            if (kind == 0) {
                long pid = 1 + rnd.nextInt(3);
                int c = 1 + rnd.nextInt(6);
                all.add(txnBatch(next, c, pid));
                if (!open.contains(pid)) open.add(pid);
                next += c;
            } else if (kind == 1 && !open.isEmpty()) {
                long pid = open.remove(rnd.nextInt(open.size()));
                all.add(marker(next, pid, rnd.nextBoolean()));
                next += 1;
            } else {
                int c = 1 + rnd.nextInt(12);
                all.add(batch(next, c));
                next += c;
            }
        }
        if (rnd.nextBoolean()) {   // close every transaction, or leave some open (read_committed stops there)
            for (long pid : open) {
                bases.add(next);
                all.add(marker(next, pid, rnd.nextBoolean()));
                next += 1;
            }
        }
        writeSegments(rnd, topic, all, bases);
        commit(root, topic, Map.of(0, next));
        return next;
    }

    /** A random compacted log: batches whose records are a random subset of their offsets (some emptied, kept for
     *  their last offset). Returns its end. */
    private long compactedLog(Random rnd, String topic) throws IOException {
        Files.createDirectories(root);
        Files.writeString(root.resolve("cleaner-offset-checkpoint"), "0\n1\n" + topic + " 0 0\n");
        List<ByteBuffer> all = new ArrayList<>();
        List<Long> bases = new ArrayList<>();
        long next = 0;
        int n = 3 + rnd.nextInt(15);
        for (int i = 0; i < n; i++) {
            long base = next + (i > 0 && rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(3) : 0), last = base + rnd.nextInt(10);   // a gap too
            List<Long> kept = new ArrayList<>();
            for (long o = base; o <= last; o++) if (rnd.nextInt(3) > 0) kept.add(o);
            if (kept.isEmpty()) kept.add(last);
            bases.add(i == 0 ? 0 : next);        // a segment may begin below its first batch, never after the last one's end
            all.add(sparse(base, last, kept));
            next = last + 1;
        }
        writeSegments(rnd, topic, all, bases);
        commit(root, topic, Map.of(0, next));
        return next;
    }

    private void writeSegments(Random rnd, String topic, List<ByteBuffer> all, List<Long> bases) {
        int cut = 1 + rnd.nextInt(all.size());
        segment(partitionDir(root, topic, 0), 0, all.subList(0, cut));
        if (cut < all.size()) segment(partitionDir(root, topic, 0), bases.get(cut), all.subList(cut, all.size()));
    }

    /** For random ranges and both isolation levels: the pushed count and MIN/MAX(offset), MAX(timestamp) without CRC
     *  checks equal those with them and a full read's count (brute force); reads without them equal reads with them. */
    private void agreesWithoutCrcs(String topic, long end, Random rnd) {
        for (String iso : new String[] {"read_uncommitted", "read_committed"}) {
            ReadOptions with = options(root, topic, true, iso, "maxRowsPerBatch", "5");
            ReadOptions without = options(root, topic, false, iso, "maxRowsPerBatch", "5");
            List<String> all = read(with, ScanBounds.NONE, false);
            assertEquals(all, read(without, ScanBounds.NONE, false), topic + " " + iso + " rows");
            assertEquals(all, read(without, ScanBounds.NONE, true), topic + " " + iso + " columnar");
            assertEquals(all.size(), answer(COUNT, without, ScanBounds.NONE)[0], topic + " " + iso + " count()");
            for (int round = 0; round < 15; round++) {
                long lo = rnd.nextInt((int) end + 1), hi = lo + rnd.nextInt((int) end + 2 - (int) lo);
                ScanBounds bounds = new ScanBounds();
                bounds.offsetMin = lo;
                bounds.offsetMax = hi - 1;
                String what = topic + " " + iso + " [" + lo + ", " + hi + ")";
                long brute = read(with, bounds, false).size();
                assertEquals(brute, answer(COUNT, without, bounds)[0], what);
                assertEquals(Arrays.toString(answer(COUNT_AND_OFFSETS, with, bounds)),
                    Arrays.toString(answer(COUNT_AND_OFFSETS, without, bounds)), what);
            }
        }
    }

    @Test
    void randomLogsCountAndReadAlikeWithoutCrcs() throws IOException {
        for (int seed = 0; seed < 12; seed++) {
            Random rnd = new Random(seed * 7919L);
            agreesWithoutCrcs("d" + seed, denseLog(rnd, "d" + seed), rnd);
            agreesWithoutCrcs("c" + seed, compactedLog(rnd, "c" + seed), rnd);
        }
    }

    // ------------------------------------------------------------------------------------------ what is read

    @Test
    void thePushedCountWithoutCrcsReadsHeadersAndTheRangesEndsOnly() throws IOException {
        List<ByteBuffer> dense = new ArrayList<>();
        for (long b = 0; b < 400; b += 10) dense.add(batch(b, 10));
        segment(partitionDir(root, "d", 0), 0, dense.subList(0, 20));
        segment(partitionDir(root, "d", 0), 200, dense.subList(20, 40));
        commit(root, "d", Map.of(0, 400L));
        Random rnd = new Random(28);
        long c = compactedLog(rnd, "g");
        ScanBounds middle = new ScanBounds();
        middle.offsetMin = 15L;
        middle.offsetMax = 384L;

        long before = Segment.batchBodiesRead();
        assertEquals(370L, answer(COUNT, options(root, "d", false, "read_uncommitted"), middle)[0]);
        assertEquals(400L, answer(COUNT, options(root, "d", false, "read_committed"), ScanBounds.NONE)[0]);
        assertEquals(0, Segment.batchBodiesRead() - before, "a dense log's count is its headers' arithmetic");

        before = Segment.batchBodiesRead();
        assertEquals(370L, answer(COUNT, options(root, "d", true, "read_uncommitted"), middle)[0]);
        assertTrue(Segment.batchBodiesRead() - before >= 38, "with CRC checks every batch walked is read whole");

        ScanBounds cut = new ScanBounds();
        cut.offsetMin = 1L;
        cut.offsetMax = c - 2;
        long want = read(options(root, "g", true, "read_uncommitted"), cut, false).size();
        before = Segment.batchBodiesRead();
        assertEquals(want, answer(COUNT, options(root, "g", false, "read_uncommitted"), cut)[0]);
        assertTrue(Segment.batchBodiesRead() - before <= 2, "a compacted log's count decodes the range's two ends only, read "
            + (Segment.batchBodiesRead() - before));
    }

    // ------------------------------------------------------------------------------------------ damage

    /** A random bit of a dense log's batch header flipped in a field the structure shows (base offset, length, leader
     *  epoch, magic, last offset delta, record count): without CRC checks, a count and a read are a typed error. */
    @Test
    void aDamagedHeaderOrLengthIsStillATypedError() throws IOException {
        int[][] fields = {{0, 8}, {8, 4}, {12, 4}, {16, 1}, {23, 4}, {57, 4}};
        Random rnd = new Random(11);
        for (int round = 0; round < 40; round++) {
            String topic = "h" + round;
            List<ByteBuffer> batches = new ArrayList<>();
            for (long b = 0; b < 60; b += 6) batches.add(batch(b, 6));
            int victim = rnd.nextInt(batches.size());
            int[] f = fields[rnd.nextInt(fields.length)];
            int at = f[0] + rnd.nextInt(f[1]);
            int position = 0;
            for (int i = 0; i < victim; i++) position += batches.get(i).remaining();
            Path log = segment(partitionDir(root, topic, 0), 0, batches);   // healthy indexes, then the flip
            byte[] bytes = Files.readAllBytes(log);
            bytes[position + at] ^= (byte) (1 << rnd.nextInt(8));
            Files.write(log, bytes);
            commit(root, topic, Map.of(0, 60L));
            String what = topic + ": batch " + victim + " byte " + at;
            ReadOptions without = options(root, topic, false, "read_uncommitted");
            RuntimeException counted = assertThrows(RuntimeException.class, () -> answer(COUNT, without, ScanBounds.NONE), what);
            assertTypedNamingTheLog(counted, what);
            for (boolean columnar : new boolean[] {false, true}) {
                RuntimeException read = assertThrows(RuntimeException.class, () -> read(without, ScanBounds.NONE, columnar), what);
                assertTypedNamingTheLog(read, what);
            }
        }
    }

    private static void assertTypedNamingTheLog(RuntimeException e, String what) {
        if (!e.getClass().getName().startsWith("io.seglog.spark.")) {
            java.io.StringWriter w = new java.io.StringWriter();
            e.printStackTrace(new java.io.PrintWriter(w));
            fail(what + ": not a typed error: " + w);
        }
        assertNotNull(e.getMessage(), what);
        assertTrue(e.getMessage().contains("00000000000000000000.log"), what + ": " + e.getMessage());
    }

    @Test
    void aRecordLengthDamagedInsideABodyIsReportedNotReadAsOtherRecords() throws IOException {
        Path log = segment(partitionDir(root, "r", 0), 0, List.of(batch(0, 5), batch(5, 5)));
        byte[] bytes = Files.readAllBytes(log);
        bytes[61] += 2;                                        // the first record's length varint: one byte longer
        Files.write(log, bytes);
        commit(root, "r", Map.of(0, 10L));
        for (boolean columnar : new boolean[] {false, true}) {
            CorruptLogException e = assertThrows(CorruptLogException.class,
                () -> read(options(root, "r", false, "read_uncommitted"), ScanBounds.NONE, columnar));
            assertTrue(e.getMessage().contains("position 0"), e.getMessage());
        }
        // the count of a range inside the log reads no body: it is the headers' answer
        assertEquals(10L, answer(COUNT, options(root, "r", false, "read_uncommitted"), ScanBounds.NONE)[0]);
    }

    // ------------------------------------------------------------------------------------------ the corpus

    static List<Path> corpus() throws IOException {
        Path dir = Paths.get(System.getProperty("seglog.conformance.corpus", "../tests/conformance/corpus")).toAbsolutePath();
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> Files.isRegularFile(p.resolve("expected.json"))).sorted().collect(Collectors.toList());
        }
    }

    private static Object outcome(java.util.function.Supplier<Object> s) {
        try {
            return s.get();
        } catch (RuntimeException e) {
            return e;
        }
    }

    /**
     * Every case of the conformance corpus, both isolation levels: with CRC checks (the default) a case whose read
     * is a fault fails count() and both outputs' reads; without them, the same fault with the same words, but for
     * the flipped body byte (only its CRC shows it), whose count is the committed records'. A healthy case reads
     * and counts alike either way.
     */
    @Test
    void theCorpusReadsAlikeWithoutCrcsButForAFlippedBodyByte() throws IOException {
        for (Path c : corpus()) {
            JsonNode exp = JSON.readTree(c.resolve("expected.json").toFile());
            String topic = exp.get("topic").asText();
            boolean fault = exp.get("verdict").get("read").get("status").asText().equals("fault");
            for (String iso : new String[] {"read_uncommitted", "read_committed"}) {
                String what = c.getFileName() + " " + iso;
                ReadOptions with = options(c, topic, true, iso), without = options(c, topic, false, iso);
                Object count = outcome(() -> answer(COUNT, with, ScanBounds.NONE)[0]);
                Object rows = outcome(() -> read(with, ScanBounds.NONE, false));
                Object columnar = outcome(() -> read(with, ScanBounds.NONE, true));
                if (fault) {
                    for (Object o : new Object[] {count, rows, columnar}) {
                        assertTrue(o instanceof RuntimeException, what + ": the default reported nothing: " + o);
                    }
                } else {
                    assertTrue(rows instanceof List, what + ": " + rows);
                    assertEquals((long) ((List<?>) rows).size(), count, what);
                    assertEquals(rows, columnar, what);
                }
                Object countWithout = outcome(() -> answer(COUNT, without, ScanBounds.NONE)[0]);
                Object rowsWithout = outcome(() -> read(without, ScanBounds.NONE, false));
                Object columnarWithout = outcome(() -> read(without, ScanBounds.NONE, true));
                if (c.getFileName().toString().equals("flipped-body-byte")) {
                    assertEquals(exp.get("committed_end").asLong(), countWithout, what);
                    continue;
                }
                assertSame(count, countWithout, what + " count()");
                assertSame(rows, rowsWithout, what + " rows");
                assertSame(columnar, columnarWithout, what + " columnar");
            }
        }
    }

    /** The same answer, or the same typed error in the same words. */
    private static void assertSame(Object want, Object got, String what) {
        if (want instanceof RuntimeException) {
            if (!(got instanceof RuntimeException)) fail(what + ": expected " + want + ", got " + got);
            assertEquals(want.getClass(), got.getClass(), what);
            assertEquals(((RuntimeException) want).getMessage(), ((RuntimeException) got).getMessage(), what);
        } else {
            assertEquals(want, got, what);
        }
    }

    @Test
    void aBadValueIsRefusedByName() {
        SeglogConfigException e = assertThrows(SeglogConfigException.class,
            () -> ReadOptions.parse(Map.of("path", "/x", "topic", "t", "checkCrcs", "sometimes")));
        assertTrue(e.getMessage().contains("'checkCrcs'") && e.getMessage().contains("'sometimes'"), e.getMessage());
        assertEquals(true, ReadOptions.parse(Map.of("path", "/x", "topic", "t")).checkCrcs);
        assertEquals(false, ReadOptions.parse(Map.of("path", "/x", "topic", "t", "CHECKCRCS", "False")).checkCrcs);
    }
}
