package io.seglog.spark.write;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Writes a task's staged segments back to disk while the task goes on encoding (docs/internals.md,
 * "jvm/"). The sink fsyncs every record before its commit; left to the driver's publish, that fsync
 * waits for the whole batch's bytes after the last row is encoded, with the CPU idle. Here, each time
 * the task has written {@link #SYNC_EVERY} more bytes, the files written since are forced on this
 * task's own sync thread; a finished segment worth renaming is forced, then closed, on that thread;
 * {@link #finish} waits for all of it. The driver still fsyncs after it patches base offsets
 * (tests/oracles/staged.py), and then finds only the patched pages dirty.
 *
 * <p>One thread per task runs the forces in the order asked, so a channel is never forced after the
 * task asked to close it. It is started by the first force asked: a task of small segments (copied by the
 * driver, which forces the copy) asks for none, and closes its files itself (issue 41: a thread started and
 * stopped per task, and a close handed to it, for nothing). Used from the task's thread only (the sync
 * thread sees only its jobs).
 */
final class BackgroundSync implements AutoCloseable {
    static final long SYNC_EVERY = 8L << 20;   // small: the forces left for the task's end stay short

    private ExecutorService thread;   // started by the first force asked
    private final Set<FileChannel> dirty = new LinkedHashSet<>();
    private final List<Future<?>> pending = new ArrayList<>();
    private final List<FileChannel> closing = new ArrayList<>();   // closed by close() if never reached
    private long sinceSync;

    /** The task wrote {@code bytes} more to {@code ch}. */
    void wrote(FileChannel ch, long bytes) {
        dirty.add(ch);
        sinceSync += bytes;
        if (sinceSync >= SYNC_EVERY) {
            List<FileChannel> channels = new ArrayList<>(dirty);
            dirty.clear();
            sinceSync = 0;
            pending.add(thread().submit(() -> {
                for (FileChannel c : channels) {
                    if (c.isOpen()) {
                        c.force(false);
                    }
                }
                return null;
            }));
        }
    }

    private ExecutorService thread() {
        if (thread == null) {
            thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "seglog-staged-sync");
                t.setDaemon(true);
                return t;
            });
        }
        return thread;
    }

    /** A finished segment: forced (if {@code durable}) then closed, after every force asked before. */
    void close(FileChannel ch, boolean durable) throws IOException {
        dirty.remove(ch);
        if (!durable && pending.isEmpty()) {
            ch.close();   // no force outstanding (pending holds every job until finish): none can reach ch
            return;
        }
        closing.add(ch);
        pending.add(thread().submit(() -> {
            try (FileChannel c = ch) {
                if (durable) {
                    c.force(false);
                }
            }
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

    /** Stop the thread (after {@link #finish}, or for a failed task: its files are removed anyway). */
    @Override
    public void close() {
        if (thread != null) thread.shutdownNow();
        for (FileChannel ch : closing) {
            try {
                ch.close();   // a no-op for the ones the thread closed
            } catch (IOException ignored) {
                // a failed task's files go with its staging folder
            }
        }
    }
}
