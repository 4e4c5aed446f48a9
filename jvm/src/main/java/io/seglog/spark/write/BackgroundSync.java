package io.seglog.spark.write;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Writes a task's staged segments back to disk while the task goes on encoding (docs/internals.md,
 * "jvm/"). The sink fsyncs every record before its commit; left to the driver's publish, that fsync
 * waits for the whole batch's bytes after the last row is encoded, with the CPU idle. Here, each time
 * the task has written {@link #SYNC_EVERY} more bytes, the files that hold at least {@link #FORCE_MIN}
 * unforced bytes are forced on this task's sync threads; a finished segment worth renaming is forced,
 * then closed, there too; {@link #finish} waits for all of it. The driver still fsyncs after it patches
 * base offsets (tests/oracles/staged.py), and then finds only the patched pages dirty.
 *
 * <p>Why per file and on several threads (issue 41): each fsync of a file that grew is an ext4 journal
 * commit, and a task writing many partitions spreads 8 MiB over as many files. Forcing every file written
 * since the last round made a 32-partition task fsync 8 times as often as a 4-partition one for the same
 * bytes, one after another (no two could share a commit); a file now waits until it holds FORCE_MIN, and
 * the forces of one round, and the closes at the task's end, run on {@link #THREADS} threads at once, so
 * the journal commits them together.
 *
 * <p>The threads are started by the first job asked: a task of small segments (copied by the driver, which
 * forces the copy) asks for none, and closes its files itself (issue 41: threads started and stopped per
 * task, and a close handed to them, for nothing).
 *
 * <p>Invariant: a channel is never forced after the task asked to close it. Each channel's jobs take its
 * {@link Slot}'s lock, and a force finds a closed slot and does nothing (the close forced it, if it was
 * to be durable). Used from the task's thread only (the sync threads see only their jobs).
 */
final class BackgroundSync implements AutoCloseable {
    static final long SYNC_EVERY = 8L << 20;   // small: the forces left for the task's end stay short
    static final long FORCE_MIN = 1L << 20;    // a file's unforced bytes worth an fsync of their own
    static final int THREADS = 8;              // they wait on the disk: the cores are not the bound

    /** One channel's state, shared by its jobs: the lock orders its force and close. */
    private static final class Slot {
        final FileChannel ch;
        long unforced;      // the task's thread only
        boolean closed;     // under the slot's lock

        Slot(FileChannel ch) {
            this.ch = ch;
        }

        synchronized void force() throws IOException {
            if (!closed) {
                ch.force(false);
            }
        }

        synchronized void close(boolean durable) throws IOException {
            if (closed) return;
            closed = true;
            try (FileChannel c = ch) {
                if (durable) {
                    c.force(false);
                }
            }
        }
    }

    private ThreadPoolExecutor threads;   // started by the first job asked (threads())
    private final Map<FileChannel, Slot> open = new LinkedHashMap<>();   // written and not yet closed
    private final List<Future<?>> pending = new ArrayList<>();
    private final List<FileChannel> closing = new ArrayList<>();   // closed by close() if never reached
    private long sinceSync;
    private int forcesAsked;   // forces of files still open (closes not counted): BackgroundSyncTest's bound

    /** The task wrote {@code bytes} more to {@code ch}. */
    void wrote(FileChannel ch, long bytes) {
        open.computeIfAbsent(ch, Slot::new).unforced += bytes;
        sinceSync += bytes;
        if (sinceSync >= SYNC_EVERY) {
            sinceSync = 0;
            for (Slot s : open.values()) {
                if (s.unforced >= FORCE_MIN) {
                    s.unforced = 0;
                    forcesAsked++;
                    pending.add(threads().submit(() -> {
                        s.force();
                        return null;
                    }));
                }
            }
        }
    }

    private ThreadPoolExecutor threads() {
        if (threads == null) {
            threads = new ThreadPoolExecutor(THREADS, THREADS, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
                Thread t = new Thread(r, "seglog-staged-sync");
                t.setDaemon(true);
                return t;
            });
        }
        return threads;
    }

    /** How many forces of open files {@link #wrote} has asked for so far. */
    int forcesAsked() {
        return forcesAsked;
    }

    /** A finished segment: forced (if {@code durable}) then closed, after every force asked before. */
    void close(FileChannel ch, boolean durable) throws IOException {
        Slot s = open.remove(ch);
        if (!durable && pending.isEmpty()) {
            ch.close();   // no job outstanding (pending holds every job until finish): none can reach ch
            return;
        }
        Slot slot = s != null ? s : new Slot(ch);
        closing.add(ch);
        pending.add(threads().submit(() -> {
            slot.close(durable);
            return null;
        }));
    }

    /** Wait for every force and close asked; the first failure is the task's. */
    void finish() throws IOException {
        try {
            for (Future<?> f : pending) {
                f.get();
            }
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException) {
                throw (IOException) cause;
            }
            throw new IOException("seglog: syncing staged segments", cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("seglog: interrupted while syncing staged segments", e);
        } finally {
            pending.clear();
        }
    }

    /** Stop the threads (after {@link #finish}, or for a failed task: its files are removed anyway). */
    @Override
    public void close() {
        if (threads != null) threads.shutdownNow();
        for (FileChannel ch : closing) {
            try {
                ch.close();   // a no-op for the ones the threads closed
            } catch (IOException ignored) {
                // a failed task's files go with its staging folder
            }
        }
    }
}
