package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reader opening an index while its writer trims the preallocated zero tail (a seal) must see the
 * entries, never fault: a read through a map of a page the file lost is a SIGBUS, an InternalError
 * in the JVM, which Spark treats as fatal and exits the driver's JVM (found by the sidecar soak
 * test). Opened over and over while another thread grows the file back to its preallocated size
 * and trims it to its entries.
 */
class IndexTrimRaceTest {
    private static final int ENTRIES = 300;
    private static final long PREALLOCATED = 4L << 20;
    private static final long RUN_NANOS = 2_000_000_000L;

    @Test
    void offsetIndexOpensWhileTrimmed(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("00000000000000001000.index");
        ByteBuffer entries = ByteBuffer.allocate(ENTRIES * OffsetIndexFile.ENTRY);
        for (int i = 0; i < ENTRIES; i++) {
            entries.putInt(10 * i + 9).putInt(4096 * (i + 1));
        }
        race(file, entries.flip(), () -> {
            OffsetIndexFile index = OffsetIndexFile.open(file, 1000);
            assertEquals(ENTRIES, index.entries());
            for (int i = 0; i < index.entries(); i++) {
                assertEquals(4096 * (i + 1), index.positionAt(i));
            }
            assertEquals(ENTRIES - 1, index.floorEntry(1000 + 10 * ENTRIES));
        });
    }

    @Test
    void timeIndexOpensWhileTrimmed(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("00000000000000001000.timeindex");
        ByteBuffer entries = ByteBuffer.allocate(ENTRIES * TimeIndexFile.ENTRY);
        for (int i = 0; i < ENTRIES; i++) {
            entries.putLong(1_700_000_000_000L + i).putInt(10 * i + 9);
        }
        race(file, entries.flip(), () -> {
            TimeIndexFile index = TimeIndexFile.open(file, 1000);
            assertEquals(ENTRIES, index.entries());
            for (int i = 0; i < index.entries(); i++) {
                assertEquals(1_700_000_000_000L + i, index.timestampAt(i));
            }
        });
    }

    @Test
    void offsetIndexOpensWhileEntriesAreDroppedAndTrimmed(@TempDir Path dir) throws Exception {
        // A truncation zeroes entries from the last one backwards, then a seal trims the file: every
        // open sees a whole prefix of the entries, never a zeroed one, never a fault.
        Path file = dir.resolve("00000000000000001000.index");
        ByteBuffer entries = ByteBuffer.allocate(ENTRIES * OffsetIndexFile.ENTRY);
        for (int i = 0; i < ENTRIES; i++) {
            entries.putInt(10 * i + 9).putInt(4096 * (i + 1));
        }
        entries.flip();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ch.write(entries.duplicate(), 0);
        }
        int kept = ENTRIES / 3;
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            ByteBuffer zero = ByteBuffer.allocate(OffsetIndexFile.ENTRY);
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                while (!stop.get()) {
                    for (int i = ENTRIES - 1; i >= kept; i--) {          // truncation: zeroed backwards
                        ch.write(zero.clear(), (long) i * OffsetIndexFile.ENTRY);
                    }
                    ch.truncate((long) kept * OffsetIndexFile.ENTRY);   // then sealed: trimmed
                    ch.write(entries.duplicate(), 0);                     // appended again
                }
            } catch (Throwable t) {
                writerFailure.set(t);
            }
        });
        writer.start();
        int opens = 0;
        try {
            long end = System.nanoTime() + RUN_NANOS;
            while (System.nanoTime() < end) {
                OffsetIndexFile index = OffsetIndexFile.open(file, 1000);
                assertTrue(index.entries() >= kept && index.entries() <= ENTRIES, "entries: " + index.entries());
                for (int i = 0; i < index.entries(); i++) {
                    assertEquals(1000 + 10 * i + 9, index.offsetAt(i));
                    assertEquals(4096 * (i + 1), index.positionAt(i));
                }
                opens++;
            }
        } finally {
            stop.set(true);
            writer.join();
        }
        assertEquals(null, writerFailure.get());
        assertTrue(opens > 100, "opens: " + opens);
    }

    interface Check {
        void run() throws Exception;
    }

    /** Runs {@code check} in a loop while another thread trims the file to its entries and extends it again. */
    private static void race(Path file, ByteBuffer entries, Check check) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ch.write(entries.duplicate(), 0);
        }
        long trimmedSize = entries.remaining();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                while (!stop.get()) {
                    raf.setLength(PREALLOCATED);     // a preallocated index (zero tail)
                    raf.setLength(trimmedSize);      // sealed: trimmed to its entries
                }
            } catch (Throwable t) {
                writerFailure.set(t);
            }
        });
        writer.start();
        int opens = 0;
        try {
            long end = System.nanoTime() + RUN_NANOS;
            while (System.nanoTime() < end) {
                check.run();
                opens++;
            }
        } finally {
            stop.set(true);
            writer.join();
        }
        assertEquals(null, writerFailure.get());
        assertTrue(opens > 100, "opens: " + opens);
        assertTrue(Files.size(file) == trimmedSize || Files.size(file) == PREALLOCATED);
    }
}
