package io.seglog.spark.read;

import java.nio.ByteBuffer;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.TimestampType;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The one place that shapes a record into a row of the (pruned) read schema, as Spark's Kafka source's
 * {@code KafkaRecordToRowConverter} does: only the columns asked for are filled (a count copies no
 * key or value), then one generated projection writes the UnsafeRow Spark's operators expect.
 */
final class RowShaper {
    static final int KEY = 0, VALUE = 1, TOPIC = 2, PARTITION = 3, OFFSET = 4, TIMESTAMP = 5, TYPE = 6, HEADERS = 7;

    private final int[] columns;
    private final GenericInternalRow row;
    private final UnsafeProjection projection;
    private UTF8String topic;
    private int partition;

    RowShaper(StructType readSchema) {
        String[] names = readSchema.fieldNames();
        columns = columnIds(readSchema);
        row = new GenericInternalRow(names.length);
        projection = UnsafeProjection.create(readSchema);
    }

    /** Each column of the read schema as one of the source's columns (KEY ... HEADERS): the one mapping both
     *  outputs use. */
    static int[] columnIds(StructType readSchema) {
        String[] names = readSchema.fieldNames();
        int[] ids = new int[names.length];
        for (int i = 0; i < names.length; i++) {
            switch (names[i]) {
                case "key": ids[i] = KEY; break;
                case "value": ids[i] = VALUE; break;
                case "topic": ids[i] = TOPIC; break;
                case "partition": ids[i] = PARTITION; break;
                case "offset": ids[i] = OFFSET; break;
                case "timestamp": ids[i] = TIMESTAMP; break;
                case "timestampType": ids[i] = TYPE; break;
                case "headers": ids[i] = HEADERS; break;
                default: throw new IllegalArgumentException("seglog source: no column '" + names[i] + "'");
            }
        }
        return ids;
    }

    void partition(String topic, int partition) {
        this.topic = UTF8String.fromString(topic);
        this.partition = partition;
    }

    private static byte[] bytes(ByteBuffer b) {
        if (b == null) return null;
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    InternalRow shape(Record r, TimestampType type) {
        for (int i = 0; i < columns.length; i++) {
            switch (columns[i]) {
                case KEY: row.update(i, r.hasKey() ? bytes(r.key()) : null); break;
                case VALUE: row.update(i, r.hasValue() ? bytes(r.value()) : null); break;
                case TOPIC: row.update(i, topic); break;
                case PARTITION: row.setInt(i, partition); break;
                case OFFSET: row.setLong(i, r.offset()); break;
                case TIMESTAMP: row.setLong(i, micros(r, topic, partition)); break;
                case TYPE: row.setInt(i, type.id); break;
                default: row.update(i, headers(r.headers())); break;
            }
        }
        return projection.apply(row);
    }

    /** ms -> Spark's microseconds, exactly: a timestamp past Spark's range fails naming the record, as Spark's
     *  Kafka source fails (DateTimeUtils.fromJavaTimestamp multiplies with Math.multiplyExact), never wraps. */
    static long micros(Record r, Object topic, int partition) {
        return micros(r.timestamp(), r.offset(), topic, partition);
    }

    static long micros(long timestampMs, long offset, Object topic, int partition) {
        try {
            return Math.multiplyExact(timestampMs, 1000L);
        } catch (ArithmeticException e) {
            throw new ArithmeticException("seglog source: " + topic + "-" + partition + " offset " + offset
                + ": timestamp " + timestampMs + " ms is outside Spark's timestamp range (long overflow in microseconds)");
        }
    }

    private static GenericArrayData headers(Header[] headers) {
        Object[] out = new Object[headers.length];
        for (int i = 0; i < headers.length; i++) {
            out[i] = new GenericInternalRow(new Object[] {
                headers[i].key() == null ? null : UTF8String.fromString(headers[i].key()), headers[i].value()});
        }
        return new GenericArrayData(out);
    }
}
