package io.seglog.spark.read;

import java.util.Iterator;

import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Columnar output: one task's records ({@link TaskRecords}, batch by batch) in batches of at most maxRowsPerBatch
 * rows ({@link VectorShaper}). An uncompressed batch is decoded straight from its bytes ({@link DirectBatch}); a
 * compressed one, one the decoder does not accept, or a read of the headers column goes through Kafka's records
 * of the batch. Either way a record is returned when its offset is in [batchFrom, the slice's end) and the pushed
 * filters keep it: the rule {@link TaskRecords#next} applies to the row output. A count reads no column: each
 * batch is only its row count. The batch returned is reused: Spark consumes it before asking for the next
 * (PartitionReader's contract); its key and value vectors point into the record batches' bytes
 * ({@link BatchBytesVector}), which are held until then.
 */
final class SeglogColumnarPartitionReader implements PartitionReader<ColumnarBatch> {
    private final TaskRecords records;
    private final VectorShaper shaper;
    private final int maxRows;
    private final boolean direct;        // the read schema allows the direct decode (no headers column)
    private final DirectBatch decoded = new DirectBatch();
    private Slice shaping;
    private ColumnarBatch current;
    // the batch in hand: decoded directly (next record `at`), or Kafka's records of it (`kafka`); neither: none
    private boolean inDecoded;
    private int at;
    private Iterator<Record> kafka;

    SeglogColumnarPartitionReader(ReadOptions opts, ScanBounds bounds, StructType readSchema, Slice[] slices) {
        this(opts, bounds, readSchema, slices, RemoteConf.SESSION);
    }

    SeglogColumnarPartitionReader(ReadOptions opts, ScanBounds bounds, StructType readSchema, Slice[] slices,
        java.util.function.Supplier<org.apache.hadoop.conf.Configuration> hadoopConf) {
        this.records = new TaskRecords(opts, bounds, slices, hadoopConf);
        this.maxRows = opts.maxRowsPerBatch;
        this.shaper = new VectorShaper(readSchema, maxRows);
        this.direct = !shaper.readsHeaders();
    }

    @Override
    public boolean next() {
        // Spark consumed the last batch (PartitionReader's contract): the bytes its key and value vectors pointed into
        // may be read into again
        records.releaseHeldBytes();
        shaper.reset();
        int rows = 0;
        while (rows < maxRows) {
            if (!inDecoded && kafka == null && !take()) break;
            rows = inDecoded ? fromDecoded(rows) : fromKafka(rows);
        }
        if (rows == 0) return false;
        current = shaper.batch(rows);
        return true;
    }

    /** Draws the next batch of the task; false when none is left. */
    private boolean take() {
        RecordBatch b = records.nextBatch();
        if (b == null) return false;
        records.holdBatchBytes();        // key and value vectors point into the batch's bytes (BatchBytesVector)
        if (records.slice != shaping) {
            shaping = records.slice;
            shaper.partition(shaping.topic, shaping.partition);
        }
        if (direct && DirectBatch.eligible(b) && decoded.decode(b, records.batchBytes(), b.sizeInBytes())) {
            inDecoded = true;
            at = 0;
        } else {
            kafka = records.batchRecords();
        }
        return true;
    }

    private int fromDecoded(int rows) {
        DirectBatch d = decoded;
        while (at < d.count && rows < maxRows) {
            int i = at++;
            long offset = d.offset(i);
            if (offset < records.batchFrom) continue;
            if (offset >= records.batchEnd) {
                at = d.count;        // offsets rise within a batch: the rest are past the slice
                break;
            }
            long ts = d.timestamp(i);
            if (!records.keeps(offset, ts)) continue;
            shaper.appendDirect(d, i, offset, ts);
            rows++;
        }
        if (at >= d.count) inDecoded = false;
        return rows;
    }

    private int fromKafka(int rows) {
        while (rows < maxRows && kafka.hasNext()) {
            Record r = kafka.next();
            long offset = r.offset();
            if (offset < records.batchFrom) continue;
            if (offset >= records.batchEnd) {
                kafka = null;
                return rows;
            }
            if (!records.keeps(offset, r.timestamp())) continue;
            shaper.append(r, records.batchTimestampType);
            rows++;
        }
        if (!kafka.hasNext()) kafka = null;
        return rows;
    }

    @Override
    public ColumnarBatch get() {
        return current;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return SeglogMetrics.values(records.skipped());
    }

    @Override
    public void close() {
        records.close();
        shaper.close();
    }
}
