package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reader opening an index while its writer trims the preallocated zero tail (a seal), or zeroes
 * entries from the last one backwards and trims below them (a truncation, then a seal), must see a
 * whole prefix of the entries and never fault: a read through a map of a page the file lost is a
 * SIGBUS, an InternalError in the JVM, which Spark treats as fatal and exits the driver's JVM (found
 * by the sidecar soak test). Opened over and over while another thread changes the file.
 */
class IndexTrimRaceTest {
    private static final int ENTRIES = 300;
    private static final long PREALLOCATED = 4L << 20;
    private static final long RUN_NANOS = 2_000_000_000L;

    @Test
    void offsetIndexOpensWhileTrimmed(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("00000000000000001000.index");
        ByteBuffer entries = offsetEntries();
        race(file, entries, extendThenTrim(entries.remaining()), () -> checkOffsetPrefix(file, ENTRIES));
    }

    @Test
    void timeIndexOpensWhileTrimmed(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("00000000000000001000.timeindex");
        ByteBuffer entries = ByteBuffer.allocate(ENTRIES * TimeIndexFile.ENTRY);
        for (int i = 0; i < ENTRIES; i++) {
            entries.putLong(1_700_000_000_000L + i).putInt(10 * i + 9);
        }
        entries.flip();
        race(file, entries, extendThenTrim(entries.remaining()), () -> {
            TimeIndexFile index = TimeIndexFile.open(file, 1000);
            assertEquals(ENTRIES, index.entries());
            for (int i = 0; i < index.entries(); i++) {
                assertEquals(1_700_000_000_000L + i, index.timestampAt(i));
            }
        });
    }

    @Test
    void offsetIndexOpensWhileEntriesAreDroppedAndTrimmed(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("00000000000000001000.index");
        ByteBuffer entries = offsetEntries();
        int kept = ENTRIES / 3;
        ByteBuffer zero = ByteBuffer.allocate(OffsetIndexFile.ENTRY);
        race(file, entries, raf -> {
            FileChannel ch = raf.getChannel();
            for (int i = ENTRIES - 1; i >= kept; i--) {             // truncation: zeroed backwards
                ch.write(zero.clear(), (long) i * OffsetIndexFile.ENTRY);
            }
            ch.truncate((long) kept * OffsetIndexFile.ENTRY);      // then sealed: trimmed
            ch.write(entries.duplicate(), 0);                        // appended again
        }, () -> checkOffsetPrefix(file, kept));
    }

    private static ByteBuffer offsetEntries() {
        ByteBuffer entries = ByteBuffer.allocate(ENTRIES * OffsetIndexFile.ENTRY);
        for (int i = 0; i < ENTRIES; i++) {
            entries.putInt(10 * i + 9).putInt(4096 * (i + 1));
        }
        return entries.flip();
    }

    /** A whole prefix of at least {@code atLeast} entries, each as written. */
    private static void checkOffsetPrefix(Path file, int atLeast) throws Exception {
        OffsetIndexFile index = OffsetIndexFile.open(file, 1000);
        assertTrue(index.entries() >= atLeast && index.entries() <= ENTRIES, "entries: " + index.entries());
        for (int i = 0; i < index.entries(); i++) {
            assertEquals(1000 + 10 * i + 9, index.offsetAt(i));
            assertEquals(4096 * (i + 1), index.positionAt(i));
        }
    }

    /** A preallocated index (zero tail), then sealed: trimmed to its entries. */
    private static Step extendThenTrim(long trimmedSize) {
        return raf -> {
            raf.setLength(PREALLOCATED);
            raf.setLength(trimmedSize);
        };
    }

    interface Step {
        void run(RandomAccessFile raf) throws Exception;
    }

    interface Check {
        void run() throws Exception;
    }

    /** Runs {@code check} in a loop for RUN_NANOS while another thread runs {@code step} in a loop. */
    private static void race(Path file, ByteBuffer entries, Step step, Check check) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ch.write(entries.duplicate(), 0);
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                while (!stop.get()) {
                    step.run(raf);
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
    }
}
