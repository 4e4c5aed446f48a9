package io.seglog.spark.read;

import java.util.Iterator;

import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;

import io.seglog.spark.format.BatchBounds;
import io.seglog.spark.format.CorruptLogException;

/**
 * Kafka's records of one batch, with a record that does not parse reported as corruption naming the segment and the
 * batch's position (Kafka's iterator throws its own InvalidRecordException or a codec's error, naming neither). With
 * CRC checks a batch whose checksum held parses; without them (checkCrcs=false) a damaged record inside the body is
 * first met here, and must still be a typed error, never fewer rows.
 *
 * <p>{@link #of} is the one way in: Kafka's {@code iterator()} of a compressed batch reads every record before it
 * returns, so its faults (a NegativeArraySizeException, an invalid record structure) and its allocations come before
 * any wrapper could be in place. The count is checked and a compressed batch inflated under the ceiling there
 * ({@link BatchBounds}), and whatever the iterator's creation throws is reported naming the file and position.
 */
final class CheckedRecords implements Iterator<Record> {
    private final Iterator<Record> records;
    private final String where;
    private final int position;

    /** The records of {@code b}, at {@code position} of the segment {@code where} names. */
    static Iterator<Record> of(RecordBatch b, String where, int position) {
        try {
            if (b.magic() >= RecordBatch.MAGIC_VALUE_V2) {
                String bad = BatchBounds.countProblem(b);
                if (bad == null && b.compressionType() != CompressionType.NONE) {
                    b = BatchBounds.inflate(b);
                    bad = BatchBounds.countProblem(b);
                }
                if (bad != null) throw new IllegalStateException(bad);
            }
            return new CheckedRecords(b.iterator(), where, position);
        } catch (CorruptLogException e) {
            throw e;
        } catch (java.io.IOException | RuntimeException e) {
            throw new CheckedRecords(null, where, position).corrupt(e);
        }
    }

    private CheckedRecords(Iterator<Record> records, String where, int position) {
        this.records = records;
        this.where = where;
        this.position = position;
    }

    @Override
    public boolean hasNext() {
        try {
            return records.hasNext();
        } catch (CorruptLogException e) {
            throw e;
        } catch (RuntimeException e) {
            throw corrupt(e);
        }
    }

    @Override
    public Record next() {
        try {
            return records.next();
        } catch (CorruptLogException e) {
            throw e;
        } catch (RuntimeException e) {
            throw corrupt(e);
        }
    }

    private CorruptLogException corrupt(Exception e) {
        return new CorruptLogException(where + ": a corrupt batch at position " + position + ": its records do not parse: "
            + (e.getMessage() != null ? e.getMessage() : e.toString()), e);
    }
}
