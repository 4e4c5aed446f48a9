package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The task's sync thread: every channel it was given is closed (finished or aborted), the bytes
 *  written while it forced are all there, and a failed force is the task's failure. */
class BackgroundSyncTest {
    @TempDir
    Path dir;

    private FileChannel open(String name) throws IOException {
        return FileChannel.open(dir.resolve(name), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    }

    @Test
    void forcesWhileWritingThenClosesEveryFile() throws IOException {
        byte[] chunk = new byte[1 << 20];
        Arrays.fill(chunk, (byte) 7);
        FileChannel a = open("a.log");
        FileChannel b = open("b.log");
        long chunks = 2 * BackgroundSync.SYNC_EVERY / chunk.length + 3;   // several background forces
        try (BackgroundSync sync = new BackgroundSync()) {
            for (long i = 0; i < chunks; i++) {
                FileChannel ch = i % 2 == 0 ? a : b;
                ch.write(ByteBuffer.wrap(chunk));
                sync.wrote(ch, chunk.length);
            }
            sync.close(a, true);
            sync.close(b, false);
            sync.finish();
        }
        assertFalse(a.isOpen());
        assertFalse(b.isOpen());
        assertArrayEquals(new long[] {(chunks + 1) / 2 * chunk.length, chunks / 2 * chunk.length},
                new long[] {Files.size(dir.resolve("a.log")), Files.size(dir.resolve("b.log"))});
    }

    @Test
    void anAbortedTaskLeavesNoFileOpen() throws IOException {
        FileChannel a = open("a.log");
        FileChannel b = open("b.log");
        BackgroundSync sync = new BackgroundSync();
        sync.wrote(a, 10);
        sync.close(a, true);
        sync.close(b, true);
        sync.close();   // without finish(): the task failed
        assertFalse(a.isOpen());
        assertFalse(b.isOpen());
    }

    /** Issue 41: a task of small segments (copied, and forced, by the driver) asks for no force, so it starts no
     *  sync thread and closes its files itself, at once. */
    @Test
    void aTaskThatForcesNothingStartsNoThread() throws IOException {
        java.util.Set<Thread> before = syncThreads();
        FileChannel a = open("a.log");
        a.write(ByteBuffer.wrap(new byte[100]));
        try (BackgroundSync sync = new BackgroundSync()) {
            sync.wrote(a, 100);
            sync.close(a, false);
            assertFalse(a.isOpen());
            sync.finish();
            java.util.Set<Thread> started = syncThreads();
            started.removeAll(before);
            assertEquals(java.util.Set.of(), started);
        }
    }

    private static java.util.Set<Thread> syncThreads() {
        java.util.Set<Thread> out = new java.util.HashSet<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) if (t.getName().equals("seglog-staged-sync")) out.add(t);
        return out;
    }

    @Test
    void aFailedForceFailsTheTask() throws IOException {
        FileChannel a = open("a.log");
        a.close();   // forcing it now fails
        try (BackgroundSync sync = new BackgroundSync()) {
            sync.close(a, true);
            assertThrows(IOException.class, sync::finish);
        }
    }
}
