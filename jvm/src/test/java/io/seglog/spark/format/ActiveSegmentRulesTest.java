package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The edges of the rules ActiveSegment ports from the Python core's indexer/segment.py (the differential tests,
 * tests/sink/test_jvm_copy.py, hold the whole bytes to the core's): the roll rule's bounds, the index rule's
 * strict interval, the time index's kept seal slot, and the (0, base) entry a preallocated file never holds.
 */
class ActiveSegmentRulesTest {
    private static final long T = 1_700_000_000_000L;
    private static final AppendRules RULES = new AppendRules(1000, 60_000, 48, 100, 0);   // 6 offset, 4 time slots

    @Test
    void theRollRulesBounds() {
        assertFalse(RULES.rolls(0, 0, T, T, 5000, 10, T, T, 0), "an empty segment takes anything");
        assertFalse(RULES.rolls(600, 0, T, T, 400, 10, T, T, 1), "exactly segment.bytes fits");
        assertTrue(RULES.rolls(600, 0, T, T, 401, 10, T, T, 1), "one byte more rolls");
        assertTrue(RULES.rolls(10, 0, T, T, 10, 10, T, T, 0), "no index room rolls");
        assertFalse(RULES.rolls(10, 5, T, T, 10, 5 + Integer.MAX_VALUE, T, T, 1), "the last relative offset int32 max fits");
        assertTrue(RULES.rolls(10, 5, T, T, 10, 6 + (long) Integer.MAX_VALUE, T, T, 1), "one past int32 rolls");
        assertFalse(RULES.rolls(10, 0, T, T, 10, 1, T + 60_000, T, 1), "segment.ms exactly does not roll");
        assertTrue(RULES.rolls(10, 0, T, T, 10, 1, T + 60_001, T, 1), "past segment.ms rolls");
        assertFalse(RULES.rolls(10, 0, T, 0, 10, 1, -1, T + 10 * 60_000, 1), "a batch without timestamps never rolls a stamped segment");
        assertFalse(RULES.rolls(10, 0, -1, T, 10, 1, -1, T + 60_000, 1), "an unstamped segment's age exactly segment.ms");
        assertTrue(RULES.rolls(10, 0, -1, T, 10, 1, T + 999_999, T + 60_001, 1), "an unstamped segment rolls by its age, not the batch's time");
    }

    /** A segment of `sizes.length` batches of one record each, offsets from `base`, appended through the rules. */
    private static ActiveSegment appended(Path dir, long base, AppendRules rules, long[] sizes, long[] stamps) throws Exception {
        ActiveSegment seg = ActiveSegment.create(dir, base, rules, T);
        long[] positions = new long[sizes.length + 1];
        long[] lasts = new long[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            positions[i + 1] = positions[i] + sizes[i];
            lasts[i] = base + i;
        }
        ByteBuffer data = ByteBuffer.allocate((int) positions[sizes.length]);   // the rules never read the bytes
        seg.append(new CopiedBatches(data, positions, lasts, stamps, stamps), 0, sizes.length);
        return seg;
    }

    private static byte[] entries(long... fields) {
        ByteBuffer b = ByteBuffer.allocate(fields.length / 2 * 12);
        for (int i = 0; i < fields.length; i += 2) b.putLong(fields[i]).putInt((int) fields[i + 1]);
        return b.array();
    }

    @Test
    void anEntryOnceStrictlyMoreThanTheIntervalWasAppended(@TempDir Path dir) throws Exception {
        // 100 bytes since the last entry is not more than index.interval.bytes=100: no entry for batch 1;
        // batch 2 comes after 150 bytes: entry (2, 150) with the time entry of the largest so far, (T+5, 1)
        try (ActiveSegment seg = appended(dir, 0, RULES, new long[] {100, 50, 70}, new long[] {T, T + 5, T + 2})) {
            seg.trim();
        }
        ByteBuffer idx = ByteBuffer.wrap(Files.readAllBytes(dir.resolve(Segment.fileName(0, ".index"))));
        assertEquals(8, idx.capacity());
        assertEquals(2, idx.getInt(0));
        assertEquals(150, idx.getInt(4));
        assertArrayEquals(entries(T + 5, 1), Files.readAllBytes(dir.resolve(Segment.fileName(0, ".timeindex"))));
    }

    @Test
    void theTimeIndexKeepsItsLastSlotForTheSeal(@TempDir Path dir) throws Exception {
        // 4 time slots: 3 entries, then no room; the seal's entry takes the fourth
        AppendRules r = new AppendRules(1 << 20, 604_800_000, 48, 0, 0);
        long[] sizes = new long[4];
        long[] stamps = new long[4];
        for (int i = 0; i < 4; i++) {
            sizes[i] = 100;
            stamps[i] = T + i;
        }
        ActiveSegment seg = appended(dir, 10, r, sizes, stamps);
        assertFalse(seg.fits(100, 14, T + 4, T), "3 time entries of 4 slots: the last is the seal's");
        seg.seal();
        seg.close();
        assertArrayEquals(entries(T + 1, 1, T + 2, 2, T + 3, 3), Files.readAllBytes(dir.resolve(Segment.fileName(10, ".timeindex"))),
                "the seal adds nothing when the last entry holds the largest timestamp");
    }

    @Test
    void theAllZeroEntryIsNeverWrittenWhileTheSegmentIsActive(@TempDir Path dir) throws Exception {
        AppendRules r = new AppendRules(1 << 20, 604_800_000, 4096, 0, 0);
        try (ActiveSegment seg = appended(dir, 0, r, new long[] {100, 100}, new long[] {0, 0})) {
            seg.trim();
            assertEquals(0, Files.size(dir.resolve(Segment.fileName(0, ".timeindex"))), "(0, base) is not an entry yet");
            seg.seal();
        }
        assertArrayEquals(new byte[12], Files.readAllBytes(dir.resolve(Segment.fileName(0, ".timeindex"))),
                "the seal writes (0, base): the segment's largest timestamp, 0, at its base");
    }
}
