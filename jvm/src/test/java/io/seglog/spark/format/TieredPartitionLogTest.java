package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.TestLogs;

/**
 * One log across both tiers (docs/tiered-storage.md §6): segments tiered to a file:// remote tier (their
 * objects and 'copied' records written here as the sidecar's tier job writes them) are read below the local
 * log start with every check of a local read; objects that do not match their manifest are typed errors.
 */
class TieredPartitionLogTest {
    @TempDir
    Path tmp;

    /** Segments 0, 100, 200 (100 offsets each, batches of 10); 0 and 100 tiered, their local copies deleted. */
    private Path tiered() throws IOException {
        try {
            // the counters below are the JVM's: a read-ahead an earlier test left running is not this test's
            assertTrue(RemoteSegmentCache.awaitReadAheads(10_000), "a read-ahead still runs after 10 s");
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
        Path root = tmp.resolve("root");
        Path dir = TestLogs.partitionDir(root, "t", 0);
        TestLogs.indexedSegments(dir, 300, 100, 10);
        Path remote = tmp.resolve("remote").resolve("t-0");
        Files.createDirectories(remote);
        StringBuilder meta = new StringBuilder();
        for (long base : new long[] {0, 100}) {
            StringBuilder files = new StringBuilder();
            for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
                Path local = TestLogs.file(dir, base, suffix);
                byte[] bytes = Files.readAllBytes(local);
                Files.write(remote.resolve(local.getFileName()), bytes);
                files.append(files.length() == 0 ? "" : ",").append('"').append(suffix.substring(1)).append("\":{\"sha256\":\"")
                    .append(RemoteSegmentCache.sha256(bytes)).append("\",\"size\":").append(bytes.length).append('}');
            }
            meta.append(line("{\"at\":1,\"base\":" + base + ",\"files\":{" + files + "},\"last\":" + (base + 99)
                + ",\"max_ts\":" + (TestLogs.T0 + base + 99) + ",\"next\":" + (base + 100) + ",\"op\":\"copied\"}"));
            TestLogs.delete(dir, base);
        }
        writeMeta(root, meta.toString());
        Files.writeString(RemoteLocation.path(root), "{\"version\": 1, \"uri\": \"file://" + tmp.resolve("remote")
            + "\", \"endpoint\": null, \"region\": null}\n");
        TestLogs.logStart(root, Map.of("t-0", 200L));
        return root;
    }

    /** A session's Hadoop configuration with seglog's remote read settings {@code key, value, ...} set. */
    private static java.util.function.Supplier<org.apache.hadoop.conf.Configuration> settings(Object... kv) {
        return () -> {
            org.apache.hadoop.conf.Configuration c = new org.apache.hadoop.conf.Configuration();
            for (int i = 0; i < kv.length; i += 2) c.set((String) kv[i], String.valueOf(kv[i + 1]));
            return c;
        };
    }

    static String line(String json) {
        CRC32C c = new CRC32C();
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        c.update(body);
        return String.format("%08x ", c.getValue()) + json + "\n";
    }

    static void writeMeta(Path root, String text) throws IOException {
        Path meta = RemoteSegmentLog.path(root, "t", 0);
        Files.createDirectories(meta.getParent());
        Files.writeString(meta, text);
    }

    private static List<Long> offsets(PartitionLog log, long from, long bound) {
        List<Long> out = new ArrayList<>();
        for (int i = log.segmentIndexFor(from); i < log.segmentCount(); i++) {
            Segment.Batches it = log.segment(i).batchesHolding(Math.max(from, log.base(i)), bound);
            while (it.hasNext()) {
                FileChannelRecordBatch b = it.next();
                for (Record r : b) if (r.offset() >= from && r.offset() < bound) out.add(r.offset());
            }
        }
        return out;
    }

    @Test
    void tieredSegmentsAreReadBelowTheLocalLogStart() throws IOException {
        Path root = tiered();
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(0, log.logStartOffset());
            assertEquals(200, log.localLogStartOffset());
            assertEquals(2, log.remoteSegmentCount());
            assertEquals(3, log.segmentCount());
            assertEquals(300, log.logEndOffset());
            assertTrue(log.segment(0).remote() && !log.segment(2).remote());
            assertTrue(log.segment(1).where().startsWith("file://") && log.segment(1).where().endsWith("00000000000000000100.log"));
            List<Long> want = new ArrayList<>();
            for (long o = 37; o < 300; o++) want.add(o);
            assertEquals(want, offsets(log, 37, 300));
            // Lookups by timestamp across the boundary (timestamps T0 + offset).
            assertEquals(150, log.offsetForTimestamp(TestLogs.T0 + 150, 300));
            assertEquals(250, log.offsetForTimestamp(TestLogs.T0 + 250, 300));
            assertEquals(0, log.offsetForTimestamp(TestLogs.T0 - 5, 300));
            // Planning sizes and cuts from the indexes alone; a cut is a batch start.
            assertEquals(log.byteSize(0, 100) + log.byteSize(100, 300), log.byteSize(0, 300));
            long cut = log.splitOffset(0, 300, log.byteSize(0, 150));
            assertTrue(cut > 0 && cut < 300 && cut % 10 == 0, "cut " + cut);
        }
    }

    @Test
    void aTieredSegmentIsFetchedOncePerJvm() throws IOException {
        Path root = tiered();
        long before = RemoteSegmentCache.fetchedBytes();
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            offsets(log, 0, 200);
        }
        long first = RemoteSegmentCache.fetchedBytes() - before;
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            offsets(log, 0, 200);
        }
        assertTrue(first > 0);
        assertEquals(first, RemoteSegmentCache.fetchedBytes() - before, "the second read fetched again");
    }

    @Test
    void aWholeReadOfTheRemoteTierFetchesItsLogsAndNoIndex() throws IOException {
        Path root = tiered();
        long logs = Files.size(tmp.resolve("remote/t-0/00000000000000000000.log"))
            + Files.size(tmp.resolve("remote/t-0/00000000000000000100.log"));
        long before = RemoteSegmentCache.fetchedBytes();
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            log.byteSize(0, 300);                                    // planning the whole range (it fits one task)
            assertEquals(before, RemoteSegmentCache.fetchedBytes(), "planning a whole read fetched bytes");
            assertEquals(200, offsets(log, 0, 200).size());
        }
        assertEquals(logs, RemoteSegmentCache.fetchedBytes() - before, "a read from the start fetched more than the .logs");
    }

    /** Small chunks and read-ahead, four readers of the same tiered segments at once: each reads every offset, and
     *  every byte of the .logs is fetched once (a chunk is fetched by one thread; the others wait for it). */
    @Test
    void concurrentReadersWithReadAheadFetchEachChunkOnce() throws Exception {
        Path root = tiered();
        long logs = Files.size(tmp.resolve("remote/t-0/00000000000000000000.log"))
            + Files.size(tmp.resolve("remote/t-0/00000000000000000100.log"));
        java.util.function.Supplier<org.apache.hadoop.conf.Configuration> conf = settings(RemoteSegmentCache.CHUNK_KEY, 1024, RemoteSegmentCache.READ_AHEAD_KEY, 3);
        long before = RemoteSegmentCache.fetchedBytes();
        List<Long> want = new ArrayList<>();
        for (long o = 0; o < 200; o++) want.add(o);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
        try {
            List<java.util.concurrent.Future<List<Long>>> reads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                reads.add(pool.submit(() -> {
                    try (PartitionLog log = PartitionLog.open(root, "t", 0, 200, OffsetGaps.at(root), SegmentListings.NONE, conf)) {
                        return offsets(log, 0, 200);
                    }
                }));
            }
            for (java.util.concurrent.Future<List<Long>> r : reads) assertEquals(want, r.get());
        } finally {
            pool.shutdownNow();
        }
        assertTrue(logs > 3 * 1024, "the segments span several chunks");
        assertEquals(logs, RemoteSegmentCache.fetchedBytes() - before, "a chunk was fetched twice, or bytes beyond the .logs");
    }

    /** Past the bound, the chunks read least recently are dropped, in an open segment or not: a walk still fetches
     *  each chunk once (it keeps the chunks it reads from, and chunks fetched ahead of it stay until it reads them),
     *  what the JVM holds is within the bound once the segments are closed, and a later read fetches a dropped
     *  chunk again, whole and right. A bound of 0 holds nothing and still reads everything, each chunk once. */
    @Test
    void chunksPastTheBoundAreDroppedAndFetchedAgainWhenRead() throws IOException {
        Path root = tiered();
        readsWithinTheBound(root, Files.size(tmp.resolve("remote/t-0/00000000000000000000.log")) / 2);
    }

    @Test
    void aBoundOfZeroHoldsNothingAndStillReadsEachChunkOnce() throws IOException {
        readsWithinTheBound(tiered(), 0);
    }

    private long logBytes() throws IOException {
        return Files.size(tmp.resolve("remote/t-0/00000000000000000000.log"))
            + Files.size(tmp.resolve("remote/t-0/00000000000000000100.log"));
    }

    private void readsWithinTheBound(Path root, long bound) throws IOException {
        List<Long> want = new ArrayList<>();
        for (long o = 0; o < 200; o++) want.add(o);
        java.util.function.Supplier<org.apache.hadoop.conf.Configuration> conf = settings(RemoteSegmentCache.CACHE_MAX_KEY,
            bound, RemoteSegmentCache.CHUNK_KEY, 1024, RemoteSegmentCache.READ_AHEAD_KEY, 2);
        long evictedBefore = RemoteSegmentCache.evictions();
        long logs = logBytes();
        long before = RemoteSegmentCache.fetchedBytes();
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200, OffsetGaps.at(root), SegmentListings.NONE, conf)) {
            assertEquals(want, offsets(log, 0, 200));
        }
        assertEquals(logs, RemoteSegmentCache.fetchedBytes() - before, "a chunk was fetched twice in one read");
        assertTrue(RemoteSegmentCache.evictions() > evictedBefore, "past the bound, nothing was dropped");
        assertTrue(RemoteSegmentCache.cachedBytes() <= bound, RemoteSegmentCache.cachedBytes() + " bytes held past " + bound);
        long fetched = RemoteSegmentCache.fetchedBytes();
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200, OffsetGaps.at(root), SegmentListings.NONE, conf)) {
            assertEquals(want, offsets(log, 0, 200));
        }
        assertTrue(RemoteSegmentCache.fetchedBytes() > fetched, "a dropped chunk was not fetched again");
        assertTrue(RemoteSegmentCache.cachedBytes() <= bound);
    }

    /** Issue 41: chunk buffers are reused, not allocated per fetch. With a bound of 0 every chunk is dropped once
     *  read and its buffer goes back to the pool, so a second replay of the same segments takes every buffer from
     *  the pool (without read-ahead the need is exact); with read-ahead, replays after the first make at most the
     *  few buffers a read holds at once (two per open segment, the read-ahead and one fetch) in all, not one per
     *  chunk fetched. */
    @Test
    void aSecondReplayWithABoundOfZeroAllocatesNoChunkBuffer() throws IOException {
        Path root = tiered();
        List<Long> want = new ArrayList<>();
        for (long o = 0; o < 200; o++) want.add(o);
        long chunks = (Files.size(tmp.resolve("remote/t-0/00000000000000000000.log")) + 1023) / 1024
            + (Files.size(tmp.resolve("remote/t-0/00000000000000000100.log")) + 1023) / 1024;
        int replays = 5;
        assertTrue(replays * chunks > 3 * (2 * 2 + 2 + 1), chunks + " chunks: too few to tell reuse from allocation");
        for (int ahead : new int[] {0, 2}) {
            java.util.function.Supplier<org.apache.hadoop.conf.Configuration> conf = settings(RemoteSegmentCache.CACHE_MAX_KEY, 0,
                RemoteSegmentCache.CHUNK_KEY, 1024, RemoteSegmentCache.READ_AHEAD_KEY, ahead);
            replay(root, conf, want);                                 // the pool gets the buffers a replay needs
            long made = ChunkPool.made();
            long reused = ChunkPool.reused();
            for (int i = 0; i < replays; i++) replay(root, conf, want);
            long madeAgain = ChunkPool.made() - made;
            if (ahead == 0) {
                assertEquals(0, madeAgain, "a replay after the first allocated chunk buffers");
            } else {
                assertTrue(madeAgain <= 2 * 2 + ahead + 1, madeAgain + " chunk buffers allocated by " + replays + " replays of "
                    + chunks + " chunks");
            }
            assertTrue(ChunkPool.reused() - reused >= replays * chunks - madeAgain, "the replays' fetches did not reuse the pool's buffers");
        }
    }

    private void replay(Path root, java.util.function.Supplier<org.apache.hadoop.conf.Configuration> conf, List<Long> want)
            throws IOException {
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200, OffsetGaps.at(root), SegmentListings.NONE, conf)) {
            assertEquals(want, offsets(log, 0, 200));
        }
        try {
            assertTrue(RemoteSegmentCache.awaitReadAheads(10_000), "a read-ahead still runs after 10 s");
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A chunk the bound drops while a walk still reads from it (the walk pins the two chunks it read last) keeps its
     *  buffer until the walk moves on: another walk's fetches meanwhile take other buffers, and the first walk's
     *  bytes stay right (every offset, every CRC). */
    @Test
    void aChunkDroppedWhileAWalkReadsFromItIsNotReused() throws IOException {
        Path root = tiered();
        java.util.function.Supplier<org.apache.hadoop.conf.Configuration> conf = settings(RemoteSegmentCache.CACHE_MAX_KEY, 0,
            RemoteSegmentCache.CHUNK_KEY, 1024, RemoteSegmentCache.READ_AHEAD_KEY, 0);
        long evicted = RemoteSegmentCache.evictions();
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200, OffsetGaps.at(root), SegmentListings.NONE, conf)) {
            List<Long> first = new ArrayList<>();
            Segment.Batches walk = log.segment(0).batchesHolding(0, 100);
            for (int i = 0; i < 5; i++) {
                for (Record r : walk.next()) first.add(r.offset());
            }
            assertTrue(RemoteSegmentCache.evictions() > evicted, "the bound of 0 dropped nothing the walk read");
            // the second walk fetches every chunk of segment 100 while the first one's chunks are dropped but pinned
            List<Long> second = offsets(log, 100, 200);
            while (walk.hasNext()) {
                for (Record r : walk.next()) first.add(r.offset());
            }
            List<Long> want = new ArrayList<>();
            for (long o = 0; o < 100; o++) want.add(o);
            assertEquals(want, first);
            want.clear();
            for (long o = 100; o < 200; o++) want.add(o);
            assertEquals(want, second);
        }
    }

    @Test
    void aBadReadSettingIsRefusedByName() throws IOException {
        Path root = tiered();
        java.util.function.Supplier<org.apache.hadoop.conf.Configuration> conf = settings(RemoteSegmentCache.CHUNK_KEY, 10);
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200, OffsetGaps.at(root), SegmentListings.NONE, conf)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> offsets(log, 0, 200));
            assertTrue(e.getMessage().contains(RemoteSegmentCache.CHUNK_KEY + " = 10"), e.getMessage());
        }
    }

    /** The rule of PartitionLog.splitOffset, every segment's index read (before tiered segments wholly inside
     *  the room had theirs fetched only when their cut is the answer): the reference for the deferral. */
    private static long referenceSplit(PartitionLog log, long start, long end, long target) {
        int first = log.segmentIndexFor(start);
        long before = -(start <= log.base(first) ? 0 : log.segment(first).floorPosition(start));
        long within = -1;
        for (int i = first; i < log.segmentCount() && log.base(i) < end; i++) {
            Segment seg = log.segment(i);
            OffsetIndexFile oi = seg.offsetIndex();
            for (int k = 0; k < oi.entries(); k++) {
                long off = oi.offsetAt(k);
                long past = before + oi.positionAt(k);
                if (!(start < off && off < end) || past <= 0) continue;
                long cut = seg.remote() ? (k == 0 ? seg.base : oi.offsetAt(k - 1) + 1) : seg.baseOffsetAt(oi.positionAt(k), off);
                if (cut <= start) continue;
                if (past > target) return within >= 0 ? within : cut;
                within = cut;
            }
            before += seg.size();
        }
        return within;
    }

    /** Task cuts of a tiered log follow the one rule, though tiered segments wholly inside a task's room have
     *  their indexes fetched only when their cut is the answer; sizes are the same log's all local. */
    @Test
    void cutsOfATieredLogFollowTheRuleWithoutReadingEveryIndex() throws IOException {
        Path root = tiered();
        Path local = tmp.resolve("local");
        TestLogs.indexedSegments(TestLogs.partitionDir(local, "t", 0), 300, 100, 10);
        try (PartitionLog tieredLog = PartitionLog.open(root, "t", 0, 200);
             PartitionLog reference = PartitionLog.open(root, "t", 0, 200);
             PartitionLog localLog = PartitionLog.open(local, "t", 0, 0)) {
            long total = localLog.byteSize(0, 300);
            assertEquals(total, tieredLog.byteSize(0, 300));
            int checked = 0;
            for (long start : new long[] {0, 5, 37, 99, 100, 150, 199, 200, 250}) {
                for (long end : new long[] {start + 1, start + 11, 100, 101, 200, 210, 300}) {
                    if (end <= start || end > 300) continue;
                    for (long target : new long[] {1, 100, total / 7, total / 3, total / 2, total - 1, total, total * 2}) {
                        long cut = tieredLog.splitOffset(start, end, target);
                        assertEquals(referenceSplit(reference, start, end, target), cut,
                            "splitOffset(" + start + ", " + end + ", " + target + ")");
                        assertTrue(cut == -1 || (start < cut && cut < end && cut % 10 == 0), "cut " + cut + " is no batch start");
                        assertEquals(localLog.byteSize(start, end), tieredLog.byteSize(start, end));
                        checked++;
                    }
                }
            }
            assertTrue(checked > 300, "checked " + checked);
        }
    }

    @Test
    void aTimestampLookupOnTheLocalTierFetchesNothingRemote() throws IOException {
        Path root = tiered();
        long before = RemoteSegmentCache.fetchedBytes();
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(250, log.offsetForTimestamp(TestLogs.T0 + 250, 300));
        }
        assertEquals(before, RemoteSegmentCache.fetchedBytes());
    }

    @Test
    void aRemoteObjectShorterThanItsManifestIsNamed() throws IOException {
        Path root = tiered();
        Path victim = tmp.resolve("remote/t-0/00000000000000000100.log");
        byte[] bytes = Files.readAllBytes(victim);
        Files.write(victim, java.util.Arrays.copyOf(bytes, bytes.length - 20));
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            RemoteObjectException e = assertThrows(RemoteObjectException.class, () -> offsets(log, 100, 200));
            assertTrue(e.getMessage().contains("00000000000000000100.log: the object is " + (bytes.length - 20)
                + " bytes but its manifest records " + bytes.length), e.getMessage());
        }
    }

    /** An object longer than its manifest (bytes appended after it was tiered) is named by the read that reaches its
     *  end, whether one chunk holds the .log or several do (the last chunk's GET asks for a byte past the end). */
    @Test
    void aRemoteObjectLongerThanItsManifestIsNamed() throws IOException {
        Path root = tiered();
        Path victim = tmp.resolve("remote/t-0/00000000000000000100.log");
        byte[] bytes = Files.readAllBytes(victim);
        Files.write(victim, java.util.Arrays.copyOf(bytes, bytes.length + 7));
        for (int chunk : new int[] {RemoteSegmentCache.CHUNK, 1024}) {
            try (PartitionLog log = PartitionLog.open(root, "t", 0, 200, OffsetGaps.at(root), SegmentListings.NONE,
                    settings(RemoteSegmentCache.CHUNK_KEY, chunk, RemoteSegmentCache.READ_AHEAD_KEY, 0, RemoteSegmentCache.CACHE_MAX_KEY, 0))) {
                RemoteObjectException e = assertThrows(RemoteObjectException.class, () -> offsets(log, 100, 200));
                assertTrue(e.getMessage().contains("00000000000000000100.log: the object is " + (bytes.length + 7)
                    + " bytes but its manifest records " + bytes.length + ": it was changed after it was tiered"), e.getMessage());
            }
        }
    }

    /** A read of tiered .logs as long as their manifests asks for no object's length (no HEAD per segment: the GET of
     *  each .log's last chunk checks it), with and without read-ahead, in one chunk or several. */
    @Test
    void aWholeReadOfTieredSegmentsAsksForNoLength() throws IOException {
        Path root = tiered();
        List<Long> want = new ArrayList<>();
        for (long o = 0; o < 200; o++) want.add(o);
        long before = RemoteSegmentCache.lengthsAsked();
        for (int ahead : new int[] {0, 3}) {
            for (int chunk : new int[] {RemoteSegmentCache.CHUNK, 1024}) {
                try (PartitionLog log = PartitionLog.open(root, "t", 0, 200, OffsetGaps.at(root), SegmentListings.NONE,
                        settings(RemoteSegmentCache.CHUNK_KEY, chunk, RemoteSegmentCache.READ_AHEAD_KEY, ahead,
                            RemoteSegmentCache.CACHE_MAX_KEY, 0))) {
                    assertEquals(want, offsets(log, 0, 200));
                }
            }
        }
        assertEquals(before, RemoteSegmentCache.lengthsAsked());
    }

    @Test
    void aFlippedByteInATieredLogIsACorruptBatchNamingTheObject() throws IOException {
        Path root = tiered();
        Path victim = tmp.resolve("remote/t-0/00000000000000000000.log");
        byte[] bytes = Files.readAllBytes(victim);
        bytes[bytes.length / 2] ^= 1;
        Files.write(victim, bytes);
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            RemoteObjectException e = assertThrows(RemoteObjectException.class, () -> offsets(log, 0, 200));
            assertTrue(e.getMessage().startsWith("file://") && e.getMessage().contains("00000000000000000000.log: "), e.getMessage());
        }
    }

    @Test
    void aChangedIndexIsRefusedByItsChecksum() throws IOException {
        Path root = tiered();
        Path victim = tmp.resolve("remote/t-0/00000000000000000000.index");
        byte[] bytes = Files.readAllBytes(victim);
        bytes[3] ^= 1;
        Files.write(victim, bytes);
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            RemoteObjectException e = assertThrows(RemoteObjectException.class, () -> offsets(log, 37, 200));
            assertTrue(e.getMessage().contains("00000000000000000000.index: SHA-256"), e.getMessage());
        }
    }

    /** Issue 36 item 17: the local copies of tiered indexes are a cache: removed (a /tmp cleaner on a long-running
     *  driver) or damaged, they are fetched again, as Kafka's remote index cache does; seeks go on working. */
    @Test
    void indexCopiesRemovedOrDamagedAreFetchedAgain() throws IOException {
        Path root = tiered();
        List<Long> want = new ArrayList<>();
        for (long o = 37; o < 200; o++) want.add(o);
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(want, offsets(log, 37, 200));           // a seek: the offset index of segment 0 is fetched
            assertEquals(150, log.offsetForTimestamp(TestLogs.T0 + 150, 300));
        }
        Path dir = RemoteSegmentCache.indexDir();
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) Files.delete(f);
        }
        Files.delete(dir);                                       // the cleaner takes the folder too
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(want, offsets(log, 37, 200));
            assertEquals(150, log.offsetForTimestamp(TestLogs.T0 + 150, 300));
        }
        try (java.util.stream.Stream<Path> files = Files.list(RemoteSegmentCache.indexDir())) {
            List<Path> copies = files.toList();
            assertFalse(copies.isEmpty(), "no index was fetched again");
            for (Path f : copies) Files.write(f, new byte[] {1, 2, 3});     // damaged: shorter than the object
        }
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(want, offsets(log, 37, 200));
            assertEquals(150, log.offsetForTimestamp(TestLogs.T0 + 150, 300));
        }
    }

    /** Issue 36 item 14: a prefix whose owner object names another root is refused before any segment is read;
     *  the owner's own root reads it, and an unowned prefix is read as before. */
    @Test
    void aPrefixOwnedByAnotherRootIsRefused() throws IOException {
        Path root = tiered();
        List<Long> want = new ArrayList<>();
        for (long o = 0; o < 200; o++) want.add(o);
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(want, offsets(log, 0, 200));            // unowned: as before
        }
        Files.writeString(tmp.resolve("remote").resolve(RemoteOwner.OWNER_KEY),
            "{\"version\": 1, \"root_id\": \"" + "a".repeat(32) + "\", \"root\": \"/elsewhere\"}");
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            RemotePrefixOwnedException e = assertThrows(RemotePrefixOwnedException.class, () -> offsets(log, 0, 200));
            assertTrue(e.getMessage().contains("/elsewhere") && e.getMessage().contains(root.toString()), e.getMessage());
        }
        Files.writeString(root.resolve("_seglog").resolve("root-id"), "a".repeat(32) + "\n");
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(want, offsets(log, 0, 200));            // the owner reads its own
        }
    }

    @Test
    void aMissingObjectIsAGoneSegmentNamingIt() throws IOException {
        Path root = tiered();
        Files.delete(tmp.resolve("remote/t-0/00000000000000000100.log"));
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            RemoteObjectGoneException e = assertThrows(RemoteObjectGoneException.class, () -> offsets(log, 100, 200));
            assertTrue(e.getMessage().contains("00000000000000000100.log: a tiered segment's object is missing"));
        }
    }

    @Test
    void aDeletingSegmentIsGoneAndTheLogStartMoves() throws IOException {
        Path root = tiered();
        Path meta = RemoteSegmentLog.path(root, "t", 0);
        Files.writeString(meta, Files.readString(meta) + line("{\"at\":2,\"base\":0,\"op\":\"deleting\"}"));
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(100, log.logStartOffset());
            assertEquals(1, log.remoteSegmentCount());
        }
    }

    @Test
    void offsetsOnNeitherTierAreReported() throws IOException {
        Path root = tiered();
        Path meta = RemoteSegmentLog.path(root, "t", 0);
        Files.writeString(meta, Files.readString(meta) + line("{\"at\":2,\"base\":100,\"op\":\"deleting\"}"));
        CorruptLogException e = assertThrows(CorruptLogException.class, () -> PartitionLog.open(root, "t", 0, 200));
        assertTrue(e.getMessage().contains("the remote tier ends at offset 100 and the local tier starts at 200"), e.getMessage());
    }

    @Test
    void tieredSegmentsWithoutARecordedLocationAreNotReadableNotLost() throws IOException {
        Path root = tiered();
        Files.delete(RemoteLocation.path(root));
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(0, log.logStartOffset());          // never taken for records deleted by retention
            assertThrows(RemoteTierNotReadableException.class, () -> log.segment(0));
        }
    }

    @Test
    void aLocalCopyOfATieredSegmentIsReadLocally() throws IOException {
        Path root = tmp.resolve("root");
        Path dir = TestLogs.partitionDir(root, "t", 0);
        TestLogs.indexedSegments(dir, 300, 100, 10);
        // Segment 0 tiered, its local copy still there (local retention has not passed): one log, read locally.
        writeMeta(root, line("{\"at\":1,\"base\":0,\"files\":{\"index\":{\"sha256\":\"x\",\"size\":1},\"log\":{\"sha256\":\"x\","
            + "\"size\":1},\"timeindex\":{\"sha256\":\"x\",\"size\":1}},\"last\":99,\"max_ts\":1,\"next\":100,\"op\":\"copied\"}"));
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 0)) {
            assertEquals(0, log.remoteSegmentCount());
            assertEquals(3, log.segmentCount());
            assertFalse(log.segment(0).remote());
        }
    }

    @Test
    void theMetadataLogIgnoresATornTailAndReportsDamageByLine() throws IOException {
        Path root = tmp.resolve("root");
        String a = line("{\"op\":\"deleted\",\"base\":0}");
        writeMeta(root, a + a + "0000");
        RemoteSegmentLog.State s = RemoteSegmentLog.read(root, "t", 0);
        assertTrue(s.torn);
        assertEquals(-1, s.start());
        writeMeta(root, a + "00000000 {\"op\":\"deleted\",\"base\":1}\n");         // a whole last line, bad CRC: torn
        assertTrue(RemoteSegmentLog.read(root, "t", 0).torn);
        writeMeta(root, "00000000 {\"op\":\"deleted\",\"base\":1}\n" + a);
        CorruptLogException e = assertThrows(CorruptLogException.class, () -> RemoteSegmentLog.read(root, "t", 0));
        assertTrue(e.getMessage().contains("t-0.meta: line 1 is damaged"), e.getMessage());
    }

    /** gs://, abfs(s):// and hdfs:// locations are read through Hadoop's FileSystem for the scheme (the user's
     *  connector); none of S3's settings apply; without the connector, a typed error naming the tier, never a
     *  log without those records. */
    @Test
    void otherHadoopSchemesAreReachedThroughTheirConnector() throws IOException {
        Path root = tiered();
        for (String uri : new String[] {"gs://bucket/x", "abfss://c@acct.dfs.core.windows.net/x", "hdfs://nn:8020/x"}) {
            Files.writeString(RemoteLocation.path(root), "{\"version\": 1, \"uri\": \"" + uri + "\"}");
            RemoteLocation loc = RemoteLocation.load(root);
            assertFalse(loc.isS3(), uri);
            assertEquals(uri + "/t-0/00000000000000000100.log", loc.objectUri("t", 0, 100, ".log"));
            assertTrue(RemoteTier.configure(loc, new org.apache.hadoop.conf.Configuration(false)).getValByRegex("fs\\.s3a.*").isEmpty());
        }
        Files.writeString(RemoteLocation.path(root), "{\"version\": 1, \"uri\": \"gs://bucket/x\"}");
        try (PartitionLog log = PartitionLog.open(root, "t", 0, 200)) {
            assertEquals(0, log.logStartOffset());
            RemoteTierNotReadableException e = assertThrows(RemoteTierNotReadableException.class, () -> offsets(log, 0, 200));
            assertTrue(e.getMessage().contains("gs://bucket/x cannot be reached through Hadoop's FileSystem"), e.getMessage());
        }
    }

    @Test
    void theRecordedLocationIsCheckedAndMappedToS3a() throws IOException {
        Path root = tmp.resolve("root");
        Files.createDirectories(RemoteLocation.path(root).getParent());
        Files.writeString(RemoteLocation.path(root), "{\"version\": 1, \"uri\": \"s3://b/p/\", \"endpoint\": \"http://127.0.0.1:9000\", \"region\": null}");
        RemoteLocation loc = RemoteLocation.load(root);
        assertEquals("s3a://b/p", loc.hadoopUri());
        assertEquals("s3a://b/p/t-3/00000000000000000007.log", loc.objectUri("t", 3, 7, ".log"));
        org.apache.hadoop.conf.Configuration c = RemoteTier.configure(loc, new org.apache.hadoop.conf.Configuration(false));
        assertEquals("http://127.0.0.1:9000", c.get("fs.s3a.bucket.b.endpoint"));
        assertEquals("true", c.get("fs.s3a.bucket.b.path.style.access"));
        org.apache.hadoop.conf.Configuration mine = new org.apache.hadoop.conf.Configuration(false);
        mine.set("fs.s3a.bucket.b.endpoint", "http://elsewhere:1");        // the user's own setting wins
        assertEquals("http://elsewhere:1", RemoteTier.configure(loc, mine).get("fs.s3a.bucket.b.endpoint"));
        for (String bad : new String[] {"{\"version\": 2, \"uri\": \"file:///x\"}", "{\"version\": 1, \"uri\": \"ftp://b/x\"}",
                                        "{\"version\": 1, \"uri\": \"gs:///x\"}", "{\"version\": 1, \"uri\": \"file://host/x\"}", "{\"version\": 1, \"uri\": \"s3://b\", \"key\": 1}"}) {
            Files.writeString(RemoteLocation.path(root), bad);
            TopicConfigException e = assertThrows(TopicConfigException.class, () -> RemoteLocation.load(root), bad);
            assertTrue(e.getMessage().contains("remote.json"), e.getMessage());
        }
    }
}
