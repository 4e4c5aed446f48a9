package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.common.record.TimestampType;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/**
 * Item 15 of issue 23: a record's timestamp (ms) becomes Spark's microseconds; one past Spark's range
 * fails naming the record, as Spark's Kafka source fails (its DateTimeUtils multiplies exactly), never
 * a wrapped-around time.
 */
class RowShaperTest {
    private static Record record(long offset, long ts) {
        return MemoryRecords.withRecords(offset, Compression.NONE, new SimpleRecord(ts, null, new byte[] {1}))
            .records().iterator().next();
    }

    private static RowShaper shaper() {
        RowShaper s = new RowShaper(new StructType().add("offset", "long").add("timestamp", "timestamp"));
        s.partition("t", 3);
        return s;
    }

    @Test
    void millisecondsBecomeMicroseconds() {
        InternalRow row = shaper().shape(record(5, 1_700_000_000_123L), TimestampType.CREATE_TIME);
        assertEquals(5, row.getLong(0));
        assertEquals(1_700_000_000_123_000L, row.getLong(1));
        assertEquals(-1000, shaper().shape(record(6, -1), TimestampType.CREATE_TIME).getLong(1));   // no timestamp
    }

    @Test
    void aTimestampPastSparksRangeFailsNamingTheRecord() {
        long ts = Long.MAX_VALUE / 100;
        ArithmeticException e = assertThrows(ArithmeticException.class,
            () -> shaper().shape(record(42, ts), TimestampType.CREATE_TIME));
        assertTrue(e.getMessage().contains("t-3") && e.getMessage().contains("offset 42")
            && e.getMessage().contains(String.valueOf(ts)), e.getMessage());
    }
}
