package io.seglog.spark.format;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * This JVM's buffers for the chunks of tiered {@code .log}s ({@link RemoteSegmentCache}), reused from fetch to fetch:
 * a replay's chunks are taken from here and given back when the cache drops them and no reader holds them, so a
 * query allocates no chunk memory once the pool has the buffers it needs (a fresh 8 MiB array per fetch is a G1
 * "humongous" allocation, the heap churn issue 41 measured).
 *
 * <p>Buffers are heap arrays, kept and reused: once the pool holds what a query's reads need, the collector allocates
 * and frees nothing for them. They are not direct (off-heap) buffers on purpose: a chunk's memory stays inside
 * {@code -Xmx}, counted where Spark counts an executor's memory, where direct buffers up to the cache bound (an
 * eighth of the heap by default) would exceed Spark's default {@code memoryOverhead} (a tenth) and get a container
 * killed by YARN or Kubernetes. A Hadoop vectored read fills a heap buffer in one GET as it fills a direct one.
 *
 * <p>Invariants: a buffer is in the pool only when no chunk holds it and no reader can read it (the cache gives a
 * chunk's buffer back only once it is dropped and unpinned: {@link RemoteSegmentCache.Chunk}); a buffer an
 * asynchronous read may still write is never given back (a failed vectored read's buffers are left to the
 * collector). The idle buffers' bytes are at most the {@value #POOL_MAX_KEY} of the configuration that gives one
 * back (its own bound, apart from {@link RemoteSegmentCache#CACHE_MAX_KEY}, which counts the chunks held): past
 * it a buffer given back is left to the collector.
 */
final class ChunkPool {
    /** Bytes of idle chunk buffers a JVM keeps for reuse, unless the Hadoop configuration says: enough for the
     *  chunks in flight of two walks at the default chunk size and read-ahead (two read, two ahead). */
    static final String POOL_MAX_KEY = "seglog.remote.pool.max.bytes";
    static final long POOL_MAX = 64L << 20;
    private static final Map<Integer, ArrayDeque<ByteBuffer>> IDLE = new HashMap<>();   // guarded by IDLE: by capacity
    private static long idleBytes;                                                        // guarded by IDLE
    private static final LongAdder MADE = new LongAdder();
    private static final LongAdder REUSED = new LongAdder();

    private ChunkPool() {
    }

    /** A buffer of {@code capacity} bytes for a chunk of {@code length}: position 0, limit {@code length}. */
    static ByteBuffer take(int capacity, int length) {
        ByteBuffer b;
        synchronized (IDLE) {
            ArrayDeque<ByteBuffer> idle = IDLE.get(capacity);
            b = idle == null ? null : idle.pollLast();      // the buffer given back last: still in the CPU's caches
            if (b != null) idleBytes -= capacity;
        }
        if (b != null) {
            REUSED.increment();
        } else {
            MADE.increment();
            b = allocate(capacity);
        }
        b.clear().limit(length);
        return b;
    }

    private static ByteBuffer allocate(int capacity) {
        return ByteBuffer.allocate(capacity);
    }

    /** Gives back a buffer no chunk holds and no reader or fetch can reach any more; kept while the idle bytes stay
     *  within {@code max}, else left to the collector (buffers of other sizes go first: a chunk size no log uses
     *  now is not kept for one that may never come). */
    static void give(ByteBuffer b, long max) {
        int capacity = b.capacity();
        synchronized (IDLE) {
            for (java.util.Iterator<Map.Entry<Integer, ArrayDeque<ByteBuffer>>> it = IDLE.entrySet().iterator();
                 idleBytes + capacity > max && it.hasNext(); ) {
                Map.Entry<Integer, ArrayDeque<ByteBuffer>> other = it.next();
                if (other.getKey() == capacity) continue;
                idleBytes -= (long) other.getKey() * other.getValue().size();
                it.remove();
            }
            if (idleBytes + capacity > max) return;
            IDLE.computeIfAbsent(capacity, k -> new ArrayDeque<>()).addLast(b);
            idleBytes += capacity;
        }
    }

    /** Chunk buffers allocated by this JVM so far (tests: a replay whose buffers are all pooled makes none). */
    static long made() {
        return MADE.sum();
    }

    /** Chunk buffers taken from the pool instead of allocated. */
    static long reused() {
        return REUSED.sum();
    }

    /** Bytes of the idle buffers kept. */
    static long idleBytes() {
        synchronized (IDLE) {
            return idleBytes;
        }
    }
}
