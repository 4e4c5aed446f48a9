package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** Every bad option refused naming it, before anything is written; the good ones parsed once. */
class WriteOptionsTest {
    private static Map<String, String> opts(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("path", "/data/log");
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    private static void refused(String says, String... kv) {
        SeglogWriteException e = assertThrows(SeglogWriteException.class, () -> WriteOptions.parse(opts(kv)));
        assertTrue(e.getMessage().contains(says), e.getMessage());
    }

    @Test
    void goodOptions() {
        WriteOptions o = WriteOptions.parse(opts("Topic", "events", "PARTITIONS", "8", "segment.bytes", "4096",
                "txnAppId", "app", "txnVersion", "7", "checkpointLocation", "/ckpt"));
        assertEquals("events", o.topic);
        assertEquals(8, o.partitions);
        assertEquals(Map.of("segment.bytes", 4096L), o.config);
        assertEquals("app", o.writer);
        assertEquals(7L, o.txnVersion);
        WriteOptions plain = WriteOptions.parse(opts("topic", "events"));
        assertEquals("@append", plain.writer);                               // seglog's namespace (WriterIds)
        assertNull(plain.txnVersion);
        assertEquals("@append.w1", WriteOptions.parse(opts("topic", "t", "writerId", "w1")).writer);
        assertEquals(1L << 20, plain.renameMinBytes);                      // the core's RENAME_MIN_BYTES
        assertEquals(0L, WriteOptions.parse(opts("topic", "t", "renameMinBytes", "0")).renameMinBytes);
        assertEquals(4096L, WriteOptions.parse(opts("topic", "t", "RENAMEMINBYTES", " 4096")).renameMinBytes);
    }

    @Test
    void badOptionsAreNamed() {
        refused("no log root", "path", "");
        refused("unknown option 'partition'", "topic", "t", "partition", "1");
        refused("option 'topic' = 'a/b'", "topic", "a/b");
        refused("option 'partitions' = 'x'", "topic", "t", "partitions", "x");
        refused("option 'partitions' = '0'", "topic", "t", "partitions", "0");
        refused("'segment.bytes' = -5 is out of range", "topic", "t", "segment.bytes", "-5");
        refused("option 'txnVersion' needs option 'txnAppId'", "topic", "t", "txnVersion", "1");
        refused("option 'txnAppId' needs option 'txnVersion'", "topic", "t", "txnAppId", "a");
        refused("option 'txnVersion' = '-1'", "topic", "t", "txnAppId", "a", "txnVersion", "-1");
        refused("option 'txnVersion' = '1.5'", "topic", "t", "txnAppId", "a", "txnVersion", "1.5");
        refused("options 'writerId' = 'w' and 'txnAppId' = 'a' differ", "topic", "t", "writerId", "w", "txnAppId", "a",
                "txnVersion", "1");
        refused("option 'writerId' = 'a b'", "topic", "t", "writerId", "a b");
        refused("option 'renameMinBytes' = '-1'; allowed: an integer >= 0", "topic", "t", "renameMinBytes", "-1");
        refused("option 'renameMinBytes' = '1MB'", "topic", "t", "renameMinBytes", "1MB");
        refused("option 'foreachBatchId' = '-2'", "topic", "t", "foreachBatchId", "-2");
        refused("options 'foreachBatchId' and 'txnAppId' exclude each other", "topic", "t", "foreachBatchId", "1",
                "txnAppId", "a", "txnVersion", "1");
        refused("option 'lockTimeoutMs' = 'soon'", "topic", "t", "lockTimeoutMs", "soon");
        refused("unknown option 'foreachBatchLookup'", "topic", "t", "foreachBatchId", "1", "foreachBatchLookup", "thread");
        for (String name : new String[] {"append", "default", "seglog-import", ".", ".."}) {
            refused("option 'txnAppId' = '" + name + "'; reserved", "topic", "t", "txnAppId", name, "txnVersion", "1");
            refused("option 'writerId' = '" + name + "'; reserved", "topic", "t", "writerId", name);
        }
        refused("option 'txnAppId' = '@append'; allowed", "topic", "t", "txnAppId", "@append", "txnVersion", "1");
    }

    @Test
    void aStreamOrForeachBatchWriterIdIsTheUsersNameNotAPlainAppendsCounter() {
        Map<String, String> given = opts("topic", "t", "writerId", "w");
        assertEquals("w", WriteOptions.parse(given).forStream(given, "query-1", 3).writer);
        assertEquals("query-1", WriteOptions.parse(opts("topic", "t")).forStream(opts("topic", "t"), "query-1", 3).writer);
    }

    @Test
    void aForeachBatchCallIsThatBatchOfItsQuery() {
        WriteOptions o = WriteOptions.parse(opts("topic", "t", "foreachBatchId", "4"));
        assertEquals(4L, o.foreachBatchId);
        WriteOptions call = o.forForeachBatch("query-1");
        assertEquals("query-1", call.writer);          // the calling query's id
        assertEquals(4L, call.txnVersion);             // the batch id is the version: a re-delivery is skipped
        WriteOptions named = WriteOptions.parse(opts("topic", "t", "foreachBatchId", "4", "writerId", "w")).forForeachBatch(null);
        assertEquals("w", named.writer);
        assertEquals(4L, named.txnVersion);
    }

    @Test
    void partitionsAndQuarantineApplyToTheTopicsRowsName() {
        // no topic option: the request applies to each topic the rows name (TopicRequest)
        WriteOptions o = WriteOptions.parse(opts("partitions", "2", "message.timestamp.out.of.range.policy", "quarantine",
                "quarantine.topic", "late", "message.timestamp.before.max.ms", "1000"));
        assertEquals(2, o.partitions);
        assertEquals("quarantine", o.config.get("message.timestamp.out.of.range.policy"));
        assertEquals(600_000L, o.lockTimeoutMs);
        assertNull(WriteOptions.parse(opts("topic", "t", "lockTimeoutMs", "none")).lockTimeoutMs);
    }
}
