package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.seglog.spark.TestLogs;
import io.seglog.spark.format.RemoteLocation;
import io.seglog.spark.format.RemoteSegmentCache;
import io.seglog.spark.format.RemoteSegmentLog;

/**
 * Issue 41: the order of a tiered read's fetches. A walk's own fetch (the chunk it waits for) has the remote tier to
 * itself: the read-ahead (the next chunks of its segment, the first chunks of the next segments) is asked only once
 * the walk holds its chunk. Before, a task's first chunk arrived beside five other 8 MiB GETs of the same JVM, and
 * its walk started decoding only when they were all in. Seen here through a remote tier whose every stream (a GET)
 * is recorded and held back a while: the walk's first stream is alone.
 */
class TieredReadOrderTest {
    @TempDir
    Path tmp;

    /** Segments 0, 100, 200 (100 offsets each, batches of 10); 0 and 100 tiered under {@code remote}, their local
     *  copies deleted; the location is {@code test://<authority><remote>} read through {@link RecordingFileSystem}. */
    private Path tiered(String authority) throws Exception {
        Path root = tmp.resolve("root");
        Path dir = TestLogs.partitionDir(root, "t", 0);
        TestLogs.indexedSegments(dir, 300, 100, 10);
        Path remote = tmp.resolve("remote");
        Files.createDirectories(remote.resolve("t-0"));
        StringBuilder meta = new StringBuilder();
        for (long base : new long[] {0, 100}) {
            StringBuilder files = new StringBuilder();
            for (String suffix : new String[] {".log", ".index", ".timeindex"}) {
                Path local = TestLogs.file(dir, base, suffix);
                byte[] bytes = Files.readAllBytes(local);
                Files.write(remote.resolve("t-0").resolve(local.getFileName()), bytes);
                StringBuilder hex = new StringBuilder();
                for (byte x : MessageDigest.getInstance("SHA-256").digest(bytes)) hex.append(String.format("%02x", x & 0xff));
                files.append(files.length() == 0 ? "" : ",").append('"').append(suffix.substring(1)).append("\":{\"sha256\":\"")
                    .append(hex).append("\",\"size\":").append(bytes.length).append('}');
            }
            String json = "{\"at\":1,\"base\":" + base + ",\"files\":{" + files + "},\"last\":" + (base + 99)
                + ",\"max_ts\":" + (TestLogs.T0 + base + 99) + ",\"next\":" + (base + 100) + ",\"op\":\"copied\"}";
            CRC32C c = new CRC32C();
            c.update(json.getBytes(StandardCharsets.UTF_8));
            meta.append(String.format("%08x ", c.getValue())).append(json).append('\n');
            TestLogs.delete(dir, base);
        }
        Path metaFile = RemoteSegmentLog.path(root, "t", 0);
        Files.createDirectories(metaFile.getParent());
        Files.writeString(metaFile, meta.toString());
        // gs:// is a scheme seglog reaches through the session's connector: here the recording one
        Files.writeString(RemoteLocation.path(root), "{\"version\": 1, \"uri\": \"gs://" + authority + remote + "\"}\n");
        TestLogs.logStart(root, Map.of("t-0", 200L));
        return root;
    }

    @Test
    void aWalksOwnFetchIsAloneAndTheReadAheadFollowsIt() throws Exception {
        assertTrue(RemoteSegmentCache.awaitReadAheads(10_000));
        String authority = "order-" + System.nanoTime();     // a FileSystem and cached copies of this test's own
        Path root = tiered(authority);
        java.util.function.Supplier<org.apache.hadoop.conf.Configuration> conf = () -> {
            org.apache.hadoop.conf.Configuration c = new org.apache.hadoop.conf.Configuration();
            c.set("fs.gs.impl", RecordingFileSystem.class.getName());
            c.set("fs.gs.impl.disable.cache", "true");
            c.setLong(RecordingFileSystem.DELAY_KEY, 100);
            c.setInt(RemoteSegmentCache.CHUNK_KEY, 1024);
            c.setInt(RemoteSegmentCache.READ_AHEAD_KEY, 2);
            return c;
        };
        RecordingFileSystem.STREAMS.clear();
        ReadOptions opts = ReadOptions.parse(Map.of("path", root.toString(), "topic", "t"));
        List<Long> got = new ArrayList<>();
        try (RecordCursor cursor = new RecordCursor(opts, new Slice("t", 0, 0, 200), conf)) {
            while (cursor.next()) got.add(cursor.record.offset());
        }
        assertTrue(RemoteSegmentCache.awaitReadAheads(10_000));
        List<Long> want = new ArrayList<>();
        for (long o = 0; o < 200; o++) want.add(o);
        assertEquals(want, got);

        List<RecordingFileSystem.Stream> logs = RecordingFileSystem.streams(".log");
        RecordingFileSystem.Stream walk = logs.get(0);
        assertEquals("00000000000000000000.log@0", walk.name + "@" + walk.firstRead, "the first fetch is not the walk's: " + logs);
        for (RecordingFileSystem.Stream other : logs.subList(1, logs.size())) {
            assertTrue(!walk.overlaps(other), "a fetch ran beside the walk's first one: " + other + " beside " + walk);
        }
        // the read-ahead still runs: segment 100's chunks and segment 0's later ones come from its threads
        assertTrue(logs.stream().anyMatch(s -> s.thread.startsWith("seglog-remote-read-ahead")
            && s.name.equals("00000000000000000100.log")), "no read-ahead of the next segment: " + logs);
        assertTrue(logs.stream().anyMatch(s -> s.thread.startsWith("seglog-remote-read-ahead")
            && s.name.equals("00000000000000000000.log")), "no read-ahead within the segment: " + logs);
    }
}
