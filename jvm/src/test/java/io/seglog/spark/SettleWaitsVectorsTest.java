package io.seglog.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Field;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * The waits both readers share, against tests/conformance/settle_waits.json (the Python runner is
 * tests/conformance/test_settle_waits.py): the planner's and a partition's listing waits, a segment's wait for
 * its index, the listing memo's mtime granularity.
 */
class SettleWaitsVectorsTest {
    private static final JsonNode V = ConformanceVectors.read("settle_waits.json");

    private static Object field(String cls, String name) throws Exception {
        Field f = Class.forName(cls).getDeclaredField(name);
        f.setAccessible(true);
        return f.get(null);
    }

    private static long[] longs(JsonNode a) {
        long[] out = new long[a.size()];
        for (int i = 0; i < out.length; i++) out[i] = a.get(i).asLong();
        return out;
    }

    @Test
    void listingWaits() throws Exception {
        long[] want = longs(V.get("listing_settle_waits_ms"));
        assertArrayEquals(want, (long[]) field("io.seglog.spark.read.Planner", "SETTLE_WAITS_MS"));
        assertArrayEquals(want, (long[]) field("io.seglog.spark.format.PartitionLog", "SETTLE_WAITS_MS"));
    }

    @Test
    void indexWaits() throws Exception {
        assertArrayEquals(longs(V.get("index_settle_waits_ms")),
                (long[]) field("io.seglog.spark.format.Segment", "INDEX_SETTLE_WAITS_MS"));
    }

    @Test
    void mtimeGranularity() throws Exception {
        assertEquals(V.get("mtime_granularity_ms").asLong(),
                (long) field("io.seglog.spark.format.SegmentListings", "GRANULARITY_MS"));
    }
}
