package io.seglog.spark.read;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.TimestampType;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Records appended to column vectors of the (pruned) read schema: the columnar twin of {@link RowShaper},
 * with the same column mapping ({@link RowShaper#columnIds}) and the same values (held equal by
 * VectorShaperTest and the conformance corpus). A key or a value is not copied: its vector points into the record
 * batch's buffer ({@link BatchBytesVector}; Kafka's record slices it, a decompressed record has its own); a header
 * value is copied once into the vector's byte store.
 *
 * Invariant: the vectors never hold more than the capacity given (maxRowsPerBatch rows), and are reused
 * batch after batch ({@link #reset}), so a task's memory is flat whatever the log holds.
 */
final class VectorShaper {
    private final int[] columns;
    private final ColumnVector[] vectors;      // BatchBytesVector for key and value, OnHeapColumnVector for the rest
    private final ColumnarBatch batch;
    private byte[] topic;
    private String topicName;
    private int partition;

    VectorShaper(StructType readSchema, int capacity) {
        columns = RowShaper.columnIds(readSchema);
        vectors = new ColumnVector[columns.length];
        for (int i = 0; i < columns.length; i++) {
            vectors[i] = columns[i] == RowShaper.KEY || columns[i] == RowShaper.VALUE ? new BatchBytesVector(capacity)
                : new OnHeapColumnVector(capacity, readSchema.fields()[i].dataType());
        }
        batch = new ColumnarBatch(vectors);
    }

    void partition(String topic, int partition) {
        this.topicName = topic;
        this.topic = topic.getBytes(StandardCharsets.UTF_8);
        this.partition = partition;
    }

    /** Empties the vectors for the next batch (their storage is kept). */
    void reset() {
        for (ColumnVector v : vectors) {
            if (v instanceof BatchBytesVector) ((BatchBytesVector) v).reset(); else ((WritableColumnVector) v).reset();
        }
    }

    void append(Record r, TimestampType type) {
        for (int i = 0; i < columns.length; i++) {
            switch (columns[i]) {
                case RowShaper.KEY: bytes((BatchBytesVector) vectors[i], r.hasKey() ? r.key() : null); continue;
                case RowShaper.VALUE: bytes((BatchBytesVector) vectors[i], r.hasValue() ? r.value() : null); continue;
                default: break;
            }
            WritableColumnVector v = (WritableColumnVector) vectors[i];
            switch (columns[i]) {
                case RowShaper.TOPIC: v.appendByteArray(topic, 0, topic.length); break;
                case RowShaper.PARTITION: v.appendInt(partition); break;
                case RowShaper.OFFSET: v.appendLong(r.offset()); break;
                case RowShaper.TIMESTAMP: v.appendLong(RowShaper.micros(r, topicName, partition)); break;
                case RowShaper.TYPE: v.appendInt(type.id); break;
                default: headers(v, r.headers()); break;
            }
        }
    }

    /** Whether the read schema has the headers column (the direct decode leaves headers to Kafka's records). */
    boolean readsHeaders() {
        for (int c : columns) if (c == RowShaper.HEADERS) return true;
        return false;
    }

    /**
     * Record {@code i} of a directly decoded batch ({@link DirectBatch}), the same values {@link #append} gives for
     * Kafka's record of it: keys and values copied from the batch's buffer into the vectors. Not for a read schema
     * with headers ({@link #readsHeaders}).
     */
    void appendDirect(DirectBatch d, int i, long offset, long timestamp) {
        byte[] b = d.bytes();
        for (int c = 0; c < columns.length; c++) {
            switch (columns[c]) {
                case RowShaper.KEY: {
                    BatchBytesVector k = (BatchBytesVector) vectors[c];
                    if (d.keyLen[i] < 0) k.appendNull(); else k.append(b, d.keyPos[i], d.keyLen[i]);
                    continue;
                }
                case RowShaper.VALUE: {
                    BatchBytesVector v = (BatchBytesVector) vectors[c];
                    if (d.valueLen[i] < 0) v.appendNull(); else v.append(b, d.valuePos[i], d.valueLen[i]);
                    continue;
                }
                default: break;
            }
            WritableColumnVector v = (WritableColumnVector) vectors[c];
            switch (columns[c]) {
                case RowShaper.TOPIC: v.appendByteArray(topic, 0, topic.length); break;
                case RowShaper.PARTITION: v.appendInt(partition); break;
                case RowShaper.OFFSET: v.appendLong(offset); break;
                case RowShaper.TIMESTAMP: v.appendLong(RowShaper.micros(timestamp, offset, topicName, partition)); break;
                case RowShaper.TYPE: v.appendInt(d.timestampType.id); break;
                default: throw new IllegalStateException("seglog source: headers are not decoded directly");
            }
        }
    }

    /** The batch of the rows appended since {@link #reset}. */
    ColumnarBatch batch(int rows) {
        batch.setNumRows(rows);
        return batch;
    }

    void close() {
        batch.close();
    }

    /** A key or a value by reference: the batch buffer's array (held by the reader), or a copy of its own when the
     *  buffer has no heap array (a direct one: rare). */
    private static void bytes(BatchBytesVector v, ByteBuffer b) {
        if (b == null) {
            v.appendNull();
        } else if (b.hasArray()) {
            v.append(b.array(), b.arrayOffset() + b.position(), b.remaining());
        } else {
            byte[] own = new byte[b.remaining()];
            b.duplicate().get(own);
            v.append(own, 0, own.length);
        }
    }

    private void headers(WritableColumnVector v, Header[] headers) {
        v.appendArray(headers.length);
        WritableColumnVector structs = v.arrayData();
        WritableColumnVector keys = structs.getChild(0), values = structs.getChild(1);
        for (Header h : headers) {
            structs.appendStruct(false);
            byte[] k = h.key().getBytes(StandardCharsets.UTF_8);   // Kafka's header keys are never null
            keys.appendByteArray(k, 0, k.length);
            byte[] val = h.value();
            if (val == null) values.appendNull(); else values.appendByteArray(val, 0, val.length);
        }
    }
}
