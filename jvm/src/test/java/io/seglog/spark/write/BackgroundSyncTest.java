package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    /** Writes {@code total} bytes round-robin over {@code files} files in 256 KiB writes; the forces asked. */
    private int forcesFor(int files, long total) throws IOException {
        byte[] chunk = new byte[256 << 10];
        FileChannel[] chs = new FileChannel[files];
        for (int i = 0; i < files; i++) chs[i] = open(files + "-" + i + ".log");
        try (BackgroundSync sync = new BackgroundSync()) {
            for (long i = 0; i < total / chunk.length; i++) {
                FileChannel ch = chs[(int) (i % files)];
                ch.write(ByteBuffer.wrap(chunk));
                sync.wrote(ch, chunk.length);
            }
            for (FileChannel ch : chs) sync.close(ch, true);
            sync.finish();
            for (FileChannel ch : chs) assertFalse(ch.isOpen());
            return sync.forcesAsked();
        }
    }

    /** Issue 41: a task spreading its bytes over 32 files asked for a force of every file each SYNC_EVERY (8 times
     *  the fsyncs of 4 files for the same bytes); a file is forced while open only once it holds FORCE_MIN bytes. */
    @Test
    void manyFilesCostNoMoreForcesPerByteThanFew() throws IOException {
        long total = 4 * BackgroundSync.SYNC_EVERY;
        int few = forcesFor(4, total);
        int many = forcesFor(32, total);
        assertTrue(few > 0, "the background forces ran");
        assertTrue(many <= total / BackgroundSync.FORCE_MIN, "32 files: " + many + " forces for " + total + " bytes");
        assertTrue(few <= total / BackgroundSync.FORCE_MIN, "4 files: " + few + " forces for " + total + " bytes");
    }

    /** A channel is never forced after its close was asked, with forces and closes on several threads: every
     *  file closed while forces of it may still be queued, and none fails. */
    @Test
    void closesRacingForcesNeverFail() throws IOException {
        byte[] chunk = new byte[512 << 10];
        try (BackgroundSync sync = new BackgroundSync()) {
            FileChannel[] chs = new FileChannel[64];
            for (int i = 0; i < chs.length; i++) {
                chs[i] = open("r" + i + ".log");
                for (int k = 0; k < 4; k++) {   // 2 MiB each: forced as the rounds pass, then closed at once
                    chs[i].write(ByteBuffer.wrap(chunk));
                    sync.wrote(chs[i], chunk.length);
                }
                sync.close(chs[i], i % 2 == 0);
            }
            sync.finish();
            for (int i = 0; i < chs.length; i++) {
                assertFalse(chs[i].isOpen());
                assertEquals(4L * chunk.length, Files.size(dir.resolve("r" + i + ".log")));
            }
        }
    }
}
