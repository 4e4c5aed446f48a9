package io.seglog.spark.format;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.RecordBatch;

/**
 * One heap buffer a walk reads each record batch into, whole, batch after batch ({@link Segment.Batches#readInto}):
 * Kafka's file batch allocates a new buffer per batch it loads. The batch returned is valid until the next load:
 * its records' keys and values are slices of this buffer, so a caller copies what it keeps before it draws the next
 * batch (the readers shape each record before they advance).
 *
 * <p>A walk that only checks and counts batches (pushed aggregates) reads into a direct buffer ({@link #direct}):
 * a heap buffer's read goes through the JDK's own direct buffer and is copied again, and a count with CRC checks
 * reads every byte of its range. Such a buffer has no {@link #array}.
 */
public final class BatchBuffer {
    private final boolean direct;
    private ByteBuffer buf;
    // Arrays a caller still points into (hold): never loaded into until released; spare ones are reused.
    private final java.util.List<ByteBuffer> held = new java.util.ArrayList<>();
    private final java.util.ArrayDeque<ByteBuffer> spare = new java.util.ArrayDeque<>();
    private boolean currentHeld;

    public BatchBuffer() {
        this(false);
    }

    private BatchBuffer(boolean direct) {
        this.direct = direct;
        this.buf = allocate(1 << 16);
    }

    /** A buffer outside the heap, for walks that read no record's bytes into Spark's rows or vectors. */
    public static BatchBuffer direct() {
        return new BatchBuffer(true);
    }

    private ByteBuffer allocate(int capacity) {
        return direct ? ByteBuffer.allocateDirect(capacity) : ByteBuffer.allocate(capacity);
    }

    /**
     * The bytes last loaded stay as they are until {@link #releaseAllButCurrent}: the next load reads into another
     * array (a spare one, else a new one). For a columnar batch whose vectors point into the batches' bytes
     * (read.BatchBytesVector) rather than copy them.
     */
    public void hold() {
        if (!currentHeld) {
            held.add(buf);
            currentHeld = true;
        }
    }

    /** The arrays held so far may be loaded into again, but the current one (its batch may still be in use). */
    public void releaseAllButCurrent() {
        for (ByteBuffer b : held) if (b != buf) spare.add(b);
        held.clear();
        if (currentHeld) held.add(buf);
    }

    /** The v2 batch of {@code size} bytes at {@code position}, read into this buffer (not checked yet). */
    RecordBatch load(FileChannel channel, int position, int size) {
        if (currentHeld) {
            buf = spare.isEmpty() ? allocate(Math.max(size, buf.capacity())) : spare.poll();
            currentHeld = false;
        }
        if (buf.capacity() < size) buf = allocate(Math.max(size, buf.capacity() * 2));
        buf.clear().limit(size);
        try {
            while (buf.hasRemaining()) {
                if (channel.read(buf, position + (long) buf.position()) < 0) {
                    throw new EOFException("expected to read " + size + " bytes, but reached the end of the file after "
                        + buf.position());
                }
            }
        } catch (IOException e) {
            // as Kafka's FileChannelRecordBatch words a batch it cannot load
            throw new KafkaException("Failed to load record batch at position " + position, e);
        }
        buf.flip();
        RecordBatch batch = MemoryRecords.readableRecords(buf).firstBatch();
        if (batch == null) {   // the length read with the header disagrees with the bytes read now
            throw new KafkaException("Failed to load record batch at position " + position + ": " + size
                + " bytes read do not hold the batch its header describes");
        }
        return batch;
    }

    /** The buffer's bytes (the batch last loaded starts at 0). */
    public byte[] array() {
        if (direct) throw new IllegalStateException("a direct batch buffer has no array");
        return buf.array();
    }
}
