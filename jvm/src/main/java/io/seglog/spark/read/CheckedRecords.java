package io.seglog.spark.read;

import java.util.Iterator;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.record.Record;

import io.seglog.spark.format.CorruptLogException;

/**
 * Kafka's records of one batch, with a record that does not parse reported as corruption naming the segment and the
 * batch's position (Kafka's iterator throws its own InvalidRecordException or a codec's error, naming neither). With
 * CRC checks a batch whose checksum held parses; without them (checkCrcs=false) a damaged record inside the body is
 * first met here, and must still be a typed error, never fewer rows.
 */
final class CheckedRecords implements Iterator<Record> {
    private final Iterator<Record> records;
    private final String where;
    private final int position;

    CheckedRecords(Iterator<Record> records, String where, int position) {
        this.records = records;
        this.where = where;
        this.position = position;
    }

    @Override
    public boolean hasNext() {
        try {
            return records.hasNext();
        } catch (KafkaException | IllegalArgumentException | IndexOutOfBoundsException e) {
            throw corrupt(e);
        }
    }

    @Override
    public Record next() {
        try {
            return records.next();
        } catch (KafkaException | IllegalArgumentException | IndexOutOfBoundsException e) {
            throw corrupt(e);
        }
    }

    private CorruptLogException corrupt(RuntimeException e) {
        return new CorruptLogException(where + ": a corrupt batch at position " + position + ": its records do not parse: "
            + e.getMessage(), e);
    }
}
