package io.seglog.spark.write;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One step of the driver's commit run for the partitions of one topic at once (issue 41: a small micro-batch's
 * commit was the sum of its partitions' roll backs and publishes, each mostly waiting on an fsync). Each partition's
 * step touches only its own folder, under its own lock, which the step takes itself; nothing of one is visible
 * before the commit that follows the whole step, so the order among partitions never mattered.
 *
 * <p>Invariant: {@link #run} returns, or throws, only after every step it started has ended, so nothing of this
 * write still runs when the caller commits, or rolls back after a failure. The first failure (in partition order)
 * is thrown as it was raised (its class is what crosses to Python), later ones added to it as suppressed.
 */
final class PartitionWork {
    /** Bounded: a topic of many partitions queues its steps; a driver's commit never starts unbounded threads. Not
     *  the core count: the steps mostly wait on fsyncs, and fsyncs waiting at once share the journal's commits and the
     *  disk's cache flushes (a 32-partition publish on 2 threads was 0.13 s of fsyncs one after another; on 8 threads,
     *  4 partitions' chains of fsyncs each, issue 41): 32, so a 32-partition write's steps, and a 1e6-row write's
     *  staged segments' patches, wait on their fsyncs all at once. Idle threads time out. */
    static final int THREADS = 32;
    private static final ExecutorService POOL = pool();

    private PartitionWork() {}

    /** One partition's step. */
    interface Step<T> {
        T run(int partition);
    }

    /** {@code step} for each of {@code partitions}; the results in their order. One partition runs in the caller. */
    static <T> List<T> run(List<Integer> partitions, Step<T> step) {
        return run(partitions, step, null);
    }

    /**
     * {@link #run(List, Step)}, with {@code beside} (null: none) run in the caller meanwhile, once every step is
     * submitted (each step then runs in the pool). Its failure is thrown as a step's would be, after the steps' own,
     * and only once every step has ended (the class invariant).
     */
    static <T> List<T> run(List<Integer> partitions, Step<T> step, Runnable beside) {
        List<T> out = new ArrayList<>(partitions.size());
        if (partitions.size() == 1 && beside == null) {
            out.add(step.run(partitions.get(0)));
            return out;
        }
        List<Future<T>> futures = new ArrayList<>(partitions.size());
        Throwable failure = null;
        for (int p : partitions) {
            try {
                futures.add(POOL.submit(() -> step.run(p)));
            } catch (RuntimeException e) {   // rejected (the pool never shuts down): stop submitting, wait below
                failure = e;
                break;
            }
        }
        Throwable besideFailure = null;
        if (beside != null && failure == null) {
            try {
                beside.run();
            } catch (RuntimeException | Error e) {
                besideFailure = e;
            }
        }
        boolean interrupted = false;
        for (Future<T> f : futures) {
            while (true) {
                try {
                    T r = f.get();
                    if (failure == null) out.add(r);
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;      // every started step is waited for: see the class comment
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause() == null ? e : e.getCause();
                    if (failure == null) failure = cause; else failure.addSuppressed(cause);
                    break;
                }
            }
        }
        if (besideFailure != null) {
            if (failure == null) failure = besideFailure; else failure.addSuppressed(besideFailure);
        }
        if (interrupted) Thread.currentThread().interrupt();
        if (failure instanceof RuntimeException) throw (RuntimeException) failure;
        if (failure instanceof Error) throw (Error) failure;
        if (failure != null) throw new SeglogWriteException("seglog write: " + failure, failure);
        return out;
    }

    private static ExecutorService pool() {
        AtomicInteger n = new AtomicInteger();
        ClassLoader loader = PartitionWork.class.getClassLoader();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(THREADS, THREADS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "seglog-commit-" + n.incrementAndGet());
            t.setDaemon(true);   // never keeps a driver alive
            t.setContextClassLoader(loader);
            return t;
        });
        pool.allowCoreThreadTimeOut(true);   // an idle driver holds no threads
        return pool;
    }
}
