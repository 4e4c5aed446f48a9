package io.seglog.spark.format;

import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.seglog.spark.SparkLines;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;

/**
 * This JVM's copies of tiered segments (an executor's, or the driver's for planning): a segment read from the
 * remote tier is read by {@link Segment} as a local one, with every check of a local read (CRCs, dense offsets,
 * leader epochs, the committed bound). Keyed by the object's URI and the manifest's SHA-256, so a segment is
 * fetched once per JVM whatever the tasks that read it (while its bytes are held).
 *
 * <ul>
 * <li>{@code .index} and {@code .timeindex}: fetched whole once, checked against the manifest's size and
 *     SHA-256 before use (a damaged index would misplace a seek), kept in a local file (Kafka's remote index
 *     cache does the same).</li>
 * <li>{@code .log}: held in memory in aligned {@link #CHUNK}s fetched as the walks of {@link Segment.Batches}
 *     reach them ({@link CachedLog#channel}): a task fetches the byte ranges it reads, from the offset index's
 *     position for its start. Kafka's remote fetch reads segment data from the remote stream the same way,
 *     without a local copy: writing each chunk to a local file cost more CPU than fetching it. The object's
 *     length is checked against the manifest beside its first reads: shorter or longer is a
 *     {@link RemoteObjectException} naming it, never fewer rows.</li>
 * </ul>
 * Index files live in a temporary folder deleted when the JVM exits. Invariants: a chunk is visible to readers
 * only once its bytes are whole ({@link CachedLog#settle}, under the log's lock), and its buffer is never written
 * while a reader can reach it: a dropped chunk's buffer goes back to the {@link ChunkPool} (to be written by another
 * fetch) only when no channel pins it ({@link Chunk}), so a reader copying from it is unaffected by the drop.
 */
public final class RemoteSegmentCache {
    /** Bytes per ranged read of a remote .log, unless the Hadoop configuration's {@value #CHUNK_KEY} says: large
     *  enough that a request's cost is small beside its bytes (S3's guidance: ranged GETs of 8-16 MB), small
     *  enough that a seek into a segment fetches little it does not read. */
    public static final int CHUNK = 8 << 20;
    public static final String CHUNK_KEY = "seglog.remote.read.chunk.bytes";
    public static final String READ_AHEAD_KEY = "seglog.remote.read.ahead.chunks";
    private static final Map<String, IndexCopy> INDEXES = new ConcurrentHashMap<>();
    private static final Map<String, CachedLog> LOGS = new ConcurrentHashMap<>();
    private static Path dir;
    private static final java.util.concurrent.atomic.LongAdder FETCHED = new java.util.concurrent.atomic.LongAdder();

    private RemoteSegmentCache() {
    }

    /** Bytes fetched from remote tiers by this JVM (tests: a read fetches what it needs, once). */
    public static long fetchedBytes() {
        return FETCHED.sum();
    }

    /** The folder of the index copies, made again when it went (a {@code /tmp} cleaner on a long-running JVM). */
    private static synchronized Path dir() throws IOException {
        if (dir == null) {
            dir = Files.createTempDirectory("seglog-remote-cache-");
            dir.toFile().deleteOnExit();
        } else {
            Files.createDirectories(dir);
        }
        return dir;
    }

    /** The folder of the index copies (tests: a cleaner removes it). */
    public static Path indexDir() throws IOException {
        return dir();
    }

    /** A local copy of an index object as written: its path, size and modification time. */
    private static final class IndexCopy {
        private final Path file;
        private final long size;
        private final java.nio.file.attribute.FileTime written;

        private IndexCopy(Path file, long size, java.nio.file.attribute.FileTime written) {
            this.file = file;
            this.size = size;
            this.written = written;
        }

        public Path file() { return file; }
        public long size() { return size; }
        public java.nio.file.attribute.FileTime written() { return written; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof IndexCopy)) return false;
            IndexCopy that = (IndexCopy) o;
            return java.util.Objects.equals(file, that.file)
                    && size == that.size
                    && java.util.Objects.equals(written, that.written);
        }

        @Override public int hashCode() { return java.util.Objects.hash(file, size, written); }

        @Override public String toString() { return "IndexCopy[file=" + file + ", size=" + size + ", written=" + written + "]"; }

        /** Whether the file is still the one written (not removed, truncated or rewritten since). */
        boolean intact() {
            try {
                java.nio.file.attribute.BasicFileAttributes a = Files.readAttributes(file,
                    java.nio.file.attribute.BasicFileAttributes.class);
                return a.isRegularFile() && a.size() == size && a.lastModifiedTime().equals(written);
            } catch (IOException e) {
                return false;
            }
        }
    
    }

    /** The local copy of an index object, fetched whole and checked against {@code facts} on first use, and fetched
     *  again whenever the copy is gone or changed (a {@code /tmp} cleaner, a damaged disk), as Kafka's remote index
     *  cache does: a local copy is a cache, never the only truth. */
    public static Path index(RemoteTier tier, String objectUri, RemoteSegmentLog.FileFacts facts, String suffix) {
        String key = objectUri + "#" + facts.sha256();
        IndexCopy have = INDEXES.get(key);
        if (have != null && have.intact()) return have.file();
        synchronized (INDEXES) {
            have = INDEXES.get(key);
            if (have != null && have.intact()) return have.file();
            IndexCopy stale = INDEXES.remove(key);
            byte[] bytes = fetchWhole(tier, objectUri, facts);
            try {
                if (stale != null) Files.deleteIfExists(stale.file());
                // a file of its own per object (two objects may hold the same bytes): no copy replaces another's
                Path file = Files.createTempFile(dir(), facts.sha256().substring(0, 16) + "-", suffix);
                Files.write(file, bytes);
                file.toFile().deleteOnExit();
                INDEXES.put(key, new IndexCopy(file, bytes.length, Files.getLastModifiedTime(file)));
                return file;
            } catch (IOException e) {
                throw new StorageException("cannot write the local copy of " + objectUri + ": " + e, e);
            }
        }
    }

    /** Opens the local copy of an index object ({@link #index}); a copy removed between the check and the open is
     *  fetched again, once. */
    public static FileChannel openIndex(RemoteTier tier, String objectUri, RemoteSegmentLog.FileFacts facts, String suffix) {
        for (int attempt = 0; ; attempt++) {
            Path copy = index(tier, objectUri, facts, suffix);
            try {
                return FileChannel.open(copy, java.nio.file.StandardOpenOption.READ);
            } catch (java.nio.file.NoSuchFileException e) {
                if (attempt > 0) throw new StorageException("the local copy " + copy + " of " + objectUri
                    + " goes as soon as it is written (a cleaner of its folder?): " + e, e);
            } catch (IOException e) {
                throw new StorageException("cannot read the local copy " + copy + " of " + objectUri + ": " + e, e);
            }
        }
    }

    /** An index object, read whole in one GET of the manifest's size (no HEAD: the SHA-256 below judges the
     *  bytes, and an object that ends sooner is reported as shorter than its manifest). */
    private static byte[] fetchWhole(RemoteTier tier, String objectUri, RemoteSegmentLog.FileFacts facts) {
        FileSystem fs = tier.fileSystem();
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(objectUri);
        byte[] bytes = new byte[Math.toIntExact(facts.size())];
        try (FSDataInputStream in = openKnownLength(fs, p, objectUri, facts.size(), "whole-file")) {
            in.readFully(0, bytes);
        } catch (FileNotFoundException e) {
            throw gone(objectUri, e);
        } catch (EOFException e) {
            throw new RemoteObjectException(objectUri + ": the object ends before the " + facts.size()
                + " bytes its manifest records", e);
        } catch (IOException e) {
            throw new StorageException("cannot read " + objectUri + ": " + e, e);
        }
        FETCHED.add(bytes.length);
        String sha = sha256(bytes);
        if (!sha.equals(facts.sha256())) {
            throw new RemoteObjectException(objectUri + ": SHA-256 " + sha + " but its manifest records " + facts.sha256()
                + ": the object was changed or damaged after it was tiered");
        }
        return bytes;
    }

    /** Opens an object whose length is known (Hadoop's standard openFile options: S3A then sends no HEAD). The
     *  length goes as a string: opt(String, long) came in Hadoop 3.3.5, and Spark 3.5 ships 3.3.4 (SparkLines). */
    static FSDataInputStream openKnownLength(FileSystem fs, org.apache.hadoop.fs.Path p, String objectUri,
                                                     long length, String policy) throws IOException {
        try {
            return fs.openFile(p).opt("fs.option.openfile.length", Long.toString(length)).opt("fs.option.openfile.read.policy", policy)
                .build().get();
        } catch (java.util.concurrent.ExecutionException e) {
            throw failureOf(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while opening " + objectUri, e);
        }
    }

    /** What an asynchronous open or read failed with, as the IOException a synchronous one would throw. */
    private static IOException failureOf(java.util.concurrent.ExecutionException e) {
        Throwable cause = e.getCause() != null ? e.getCause() : e;
        return cause instanceof IOException ? (IOException) cause : new IOException(cause);
    }

    private static FileStatus status(FileSystem fs, org.apache.hadoop.fs.Path p, String objectUri) {
        try {
            return fs.getFileStatus(p);
        } catch (FileNotFoundException e) {
            throw gone(objectUri, e);
        } catch (IOException e) {
            throw new StorageException("cannot reach " + objectUri + ": " + e, e);
        }
    }

    private static RemoteObjectGoneException gone(String objectUri, Throwable cause) {
        return new RemoteObjectGoneException(objectUri + ": a tiered segment's object is missing (remote retention "
            + "beside this read, or the object was removed by hand)", cause);
    }

    private static RemoteObjectException sizeMismatch(String objectUri, long length, long recorded) {
        return new RemoteObjectException(objectUri + ": the object is " + length + " bytes but its manifest records "
            + recorded + (length < recorded ? ": it is shorter, records of the segment are lost" : ": it was changed after it was tiered"));
    }

    static String sha256(byte[] bytes) {
        try {
            // lower-case hex, as Python's hexdigest() (java.util.HexFormat is Java 17; the 3.5 jars are Java 11)
            StringBuilder hex = new StringBuilder(64);
            for (byte b : MessageDigest.getInstance("SHA-256").digest(bytes)) hex.append(String.format("%02x", b & 0xff));
            return hex.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The bound on the bytes of tiered .logs this JVM holds in memory ({@link ChunkPool}'s heap
     *  buffers), unless the Hadoop configuration's {@value #CACHE_MAX_KEY} says: an eighth of the heap (at least
     *  {@link #CACHE_MIN}). Past it, the chunks read least recently are dropped, whether a segment holding them is
     *  open or not: a later read that needs one fetches it again. Reads in flight are never dropped: chunks fetched
     *  ahead of a walk and not read yet, and the two chunks each open segment reads from (pinned: a dropped one's
     *  buffer stays until its channel moves on); so what a JVM holds exceeds the bound by at most, per open tiered
     *  segment, two chunks and its read-ahead. Idle buffers kept for reuse are not counted here: they have a bound
     *  of their own ({@link ChunkPool#POOL_MAX_KEY}). */
    public static final String CACHE_MAX_KEY = "seglog.remote.cache.max.bytes";
    static final long CACHE_MIN = 128L << 20;
    private static final java.util.concurrent.atomic.AtomicLong CACHED = new java.util.concurrent.atomic.AtomicLong();
    private static final java.util.concurrent.atomic.AtomicLong TICKS = new java.util.concurrent.atomic.AtomicLong();
    private static final java.util.concurrent.atomic.LongAdder EVICTED = new java.util.concurrent.atomic.LongAdder();

    static long defaultCacheMax() {
        return Math.max(CACHE_MIN, Runtime.getRuntime().maxMemory() / 8);
    }

    /** Bytes of tiered .logs held in this JVM's memory. */
    public static long cachedBytes() {
        return CACHED.get();
    }

    /** Chunks dropped by the bound so far (tests). */
    public static long evictions() {
        return EVICTED.sum();
    }

    /**
     * The in-memory copy of a remote {@code .log} of {@code facts.size()} bytes, filled as it is read, held for the
     * caller until {@link CachedLog#release}. Nothing is fetched here (the object's length is checked at its
     * first fetch).
     */
    public static CachedLog acquire(RemoteTier tier, String objectUri, RemoteSegmentLog.FileFacts facts) {
        String key = objectUri + "#" + facts.sha256();
        synchronized (LOGS) {
            CachedLog have = LOGS.get(key);
            if (have == null) {
                have = new CachedLog(tier, new org.apache.hadoop.fs.Path(objectUri), objectUri, facts.size());
                LOGS.put(key, have);
            }
            have.refs++;
            return have;
        }
    }

    private static final class Held {
        private final CachedLog log;
        private final int chunk;
        private final long tick;

        private Held(CachedLog log, int chunk, long tick) {
            this.log = log;
            this.chunk = chunk;
            this.tick = tick;
        }

        public CachedLog log() { return log; }
        public int chunk() { return chunk; }
        public long tick() { return tick; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Held)) return false;
            Held that = (Held) o;
            return java.util.Objects.equals(log, that.log)
                    && chunk == that.chunk
                    && tick == that.tick;
        }

        @Override public int hashCode() { return java.util.Objects.hash(log, chunk, tick); }

        @Override public String toString() { return "Held[log=" + log + ", chunk=" + chunk + ", tick=" + tick + "]"; }
    }

    /**
     * One fetched chunk of a tiered .log: bytes {@code [0, length)} of a buffer from the {@link ChunkPool}.
     *
     * <p>Invariants (all under the owning log's lock): a chunk is made whole, then published, and never written
     * after; its buffer goes back to the pool exactly once, when it is both dropped (no longer held by the cache)
     * and unpinned (no channel reads from it): a channel pins each chunk it reads from ({@link
     * CachedLog.ChunkChannel}: the two read last), so a drop while a channel copies from the chunk only marks it,
     * and the channel's last unpin gives the buffer back.
     */
    static final class Chunk {
        private final ByteBuffer buf;
        final int length;
        private int pins;                 // guarded by the log: channels reading from it
        private boolean dropped;          // guarded by the log: no longer held by the cache

        Chunk(ByteBuffer buf, int length) {
            this.buf = buf;
            this.length = length;
        }

        /** Copies {@code len} bytes from {@code off} into {@code dst}; the caller pins the chunk. */
        void copyTo(ByteBuffer dst, int off, int len) {
            ByteBuffer src = buf.duplicate();        // its own position: other channels copy from the same chunk
            src.limit(off + len).position(off);
            dst.put(src);
        }
    }

    /** Drops the chunks used least recently until the bytes held are within the bound; forgets copies that no
     *  segment holds and that hold no chunk. Lock order: LOGS, then a log (a log's lock is never held when LOGS
     *  is taken). */
    private static void evictPast(long max) {
        if (CACHED.get() <= max) return;
        synchronized (LOGS) {
            List<Held> held = new ArrayList<>();
            for (CachedLog l : LOGS.values()) l.heldChunks(held);
            held.sort(Comparator.comparingLong(Held::tick));
            for (Held h : held) {
                if (CACHED.get() <= max) break;
                if (h.log().drop(h.chunk(), h.tick())) EVICTED.increment();
            }
            LOGS.values().removeIf(l -> l.refs == 0 && l.forgetIfEmpty());
        }
    }

    /** Chunks fetched ahead of a walk, per log: a walk reads forward, so while it checks and decodes one chunk the
     *  next ones arrive, fetched in parallel (a few ranged GETs at a time: fs.s3a.vectored.active.ranged.reads). */
    static final int READ_AHEAD = 2;

    private static int setting(org.apache.hadoop.conf.Configuration conf, String key, int otherwise, int min) {
        int v = conf.getInt(key, otherwise);
        if (v < min) throw new IllegalArgumentException(key + " = " + v + ": must be at least " + min);
        return v;
    }
    /** Read-ahead fetchers running (tests wait for none: a fetch left running by one read is not the next one's). */
    private static final java.util.concurrent.atomic.AtomicInteger AHEAD_RUNNING = new java.util.concurrent.atomic.AtomicInteger();

    /** Waits, up to {@code timeoutMs}, until no read-ahead fetcher runs; true when none does (tests: a fetch ahead
     *  that outlives the read that started it counts in {@link #fetchedBytes} after that read returned). */
    public static boolean awaitReadAheads(long timeoutMs) throws InterruptedException {
        long end = System.nanoTime() + timeoutMs * 1_000_000;
        while (AHEAD_RUNNING.get() > 0) {
            if (System.nanoTime() > end) return false;
            Thread.sleep(2);
        }
        return true;
    }

    /** Daemon threads for read-ahead (a few per JVM: each serves one log's stream at a time). */
    private static final java.util.concurrent.ExecutorService AHEAD = java.util.concurrent.Executors.newFixedThreadPool(4, r -> {
        Thread t = new Thread(r, "seglog-remote-read-ahead");
        t.setDaemon(true);
        return t;
    });

    /** HEADs sent for a tiered .log's length (tests: a read of objects as long as their manifests sends none). */
    private static final java.util.concurrent.atomic.LongAdder LENGTH_ASKED = new java.util.concurrent.atomic.LongAdder();

    /** HEADs this JVM sent for a tiered .log's real length (only when a fetch found it differs from the manifest). */
    public static long lengthsAsked() {
        return LENGTH_ASKED.sum();
    }

    /**
     * A remote .log's bytes in memory, chunk by chunk: {@link #channel} reads them as a file, fetching the chunks
     * a read reaches that are absent; its {@link ChunkChannel#readAheadOf} starts fetching the {@link #READ_AHEAD}
     * chunks after a walk's position in the background.
     *
     * <p>Invariants: a chunk is published ({@code chunks[c]}) only whole, and its buffer is never written after
     * while a reader can reach it ({@link Chunk}: given back to the pool only dropped and unpinned); a chunk is
     * fetched by one thread at a time ({@code fetching}), the others wait for it; each fetch opens its own stream
     * and closes it when it ends ({@link #open}). A read-ahead that fails leaves its chunk absent, so the walk that
     * needs it fetches it itself and reports the failure, typed, naming the object; the buffers it took are left to
     * the collector (a read of its vectored ranges may still be writing them), never given back.
     */
    public static final class CachedLog {
        private final RemoteTier tier;
        private final org.apache.hadoop.fs.Path remote;
        public final String objectUri;
        public final long size;
        int refs;                                        // guarded by LOGS: open segments holding this copy
        private final long cacheMax;
        private final long poolMax;                      // idle buffers kept for reuse (ChunkPool)
        private final int chunk;                         // bytes per ranged read
        private final int readAhead;                     // chunks fetched ahead of a walk
        private final Chunk[] chunks;                    // guarded by this: the chunks held (null: absent)
        private final long[] used;                       // guarded by this: each held chunk's last use (TICKS)
        private final BitSet read = new BitSet();        // guarded by this: held chunks a walk has read
        private final BitSet fetching = new BitSet();    // guarded by this
        private volatile RuntimeException lengthError;   // a fetch found the object's length is not the manifest's
        private final BitSet wanted = new BitSet();      // guarded by this: chunks asked of the read-ahead, not yet
                                                         // claimed by it or by a walk
        private boolean aheadRunning;                    // guarded by this: one read-ahead fetcher per log

        CachedLog(RemoteTier tier, org.apache.hadoop.fs.Path remote, String objectUri, long size) {
            org.apache.hadoop.conf.Configuration conf = tier.sessionConf();
            long max = conf.getLong(CACHE_MAX_KEY, defaultCacheMax());
            if (max < 0) throw new IllegalArgumentException(CACHE_MAX_KEY + " = " + max + ": must be at least 0");
            this.cacheMax = max;
            long pool = conf.getLong(ChunkPool.POOL_MAX_KEY, ChunkPool.POOL_MAX);
            if (pool < 0) throw new IllegalArgumentException(ChunkPool.POOL_MAX_KEY + " = " + pool + ": must be at least 0");
            this.poolMax = pool;
            this.tier = tier;
            this.remote = remote;
            this.objectUri = objectUri;
            this.size = size;
            this.chunk = setting(conf, CHUNK_KEY, CHUNK, 1024);
            this.readAhead = setting(conf, READ_AHEAD_KEY, READ_AHEAD, 0);
            int n = Math.toIntExact((size + chunk - 1) / chunk);
            this.chunks = new Chunk[n];
            this.used = new long[n];
        }

        /** A new read-only channel over the bytes (each open segment has its own: closing it closes nothing else). */
        ChunkChannel channel() {
            return new ChunkChannel();
        }

        /** Chunk c, pinned for the caller (who unpins it, {@link #unpin}): held, or fetched now (by this thread, or
         *  waited for when another fetches it). */
        private Chunk chunkAt(int c) {
            synchronized (this) {
                while (chunks[c] == null && fetching.get(c)) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new StorageException("interrupted while " + objectUri + " was fetched", e);
                    }
                }
                if (chunks[c] != null) {
                    used[c] = TICKS.incrementAndGet();
                    read.set(c);
                    chunks[c].pins++;
                    return chunks[c];
                }
                fetching.set(c);        // absent, and no one fetches it (a failed fetch leaves it so): this thread
                wanted.clear(c);        // the walk's own fetch answers a read-ahead's ask not yet served
            }
            Chunk got = null;
            try {
                got = fetch(c);
                return got;                 // pinned by settle: read even if the bound drops it at once
            } finally {
                settle(c, got, true);
            }
        }

        /** A channel no longer reads from chunk {@code k}: its buffer goes back to the pool if the cache dropped it
         *  and no other channel reads from it. */
        private void unpin(Chunk k) {
            synchronized (this) {
                if (--k.pins > 0 || !k.dropped) return;
            }
            ChunkPool.give(k.buf, poolMax);
        }

        /** Ends chunk c's fetch: publishes it when it succeeded ({@code byWalk}: fetched by the walk that reads it,
         *  and pinned for that walk before the bound can drop it; else fetched ahead of one); then applies the
         *  bound. */
        private void settle(int c, Chunk got, boolean byWalk) {
            synchronized (this) {
                fetching.clear(c);
                if (got != null) {
                    chunks[c] = got;
                    used[c] = TICKS.incrementAndGet();
                    read.set(c, byWalk);
                    if (byWalk) got.pins++;
                    CACHED.addAndGet(got.length);
                    FETCHED.add(got.length);
                }
                notifyAll();
            }
            if (got != null && CACHED.get() > cacheMax) evictPast(cacheMax);
        }

        /** The chunks the bound may drop (called under LOGS): every held chunk of a copy no segment holds; of one in
         *  use, those a walk has read. A chunk fetched ahead and not read yet is in flight: dropping it would make the
         *  walk that asked for it fetch it again. */
        private synchronized void heldChunks(List<Held> into) {
            for (int c = 0; c < chunks.length; c++) {
                if (chunks[c] != null && (refs == 0 || read.get(c))) into.add(new Held(this, c, used[c]));
            }
        }

        /** Drops chunk c if it was not used since {@code tick}; true when dropped. Its buffer goes back to the pool
         *  now if no channel reads from it, else at the last one's {@link #unpin}. */
        private boolean drop(int c, long tick) {
            Chunk k;
            synchronized (this) {
                k = chunks[c];
                if (k == null || used[c] != tick) return false;
                CACHED.addAndGet(-k.length);
                chunks[c] = null;
                read.clear(c);
                k.dropped = true;
                if (k.pins > 0) return true;
            }
            ChunkPool.give(k.buf, poolMax);
            return true;
        }

        /** True when no chunk is held or fetched (its stream is closed then: the copy is forgotten). */
        private synchronized boolean forgetIfEmpty() {
            if (aheadRunning || !fetching.isEmpty()) return false;
            for (Chunk k : chunks) if (k != null) return false;
            return true;
        }

        /** The holder's segment is closed: the copy's chunks stay for later reads, within the bound. */
        public void release() {
            synchronized (LOGS) {
                if (refs > 0) refs--;
            }
            evictPast(cacheMax);
        }

        /** Starts fetching the chunks from byte {@code pos} on, none from byte {@code limit} on, in the background (a
         *  walk about to reach them). */
        public void prefetch(long pos, long limit) {
            if (pos < size && limit > pos) readAhead((int) (pos / chunk), (int) ((limit - 1) / chunk) + 1);
        }

        /** Widens the read-ahead window to [from, min(from + READ_AHEAD, until)) and starts its one fetcher if none
         *  runs: one per log, so the object's stream is read in order. */
        private void readAhead(int from, int until) {
            int to = (int) Math.min(Math.min(chunks.length, until), (long) from + readAhead);
            synchronized (this) {
                if (from >= to) return;
                int c = from;
                while (c < to && (chunks[c] != null || fetching.get(c))) c++;
                if (c == to) return;                 // the window is held or on its way (a walk asks at every batch)
                wanted.clear(0, from);               // a walk that moved on no longer wants what it passed
                for (; c < to; c++) if (chunks[c] == null && !fetching.get(c)) wanted.set(c);
                if (aheadRunning) return;
                aheadRunning = true;
                AHEAD_RUNNING.incrementAndGet();
            }
            AHEAD.execute(this::runAhead);
        }

        /** The read-ahead fetcher: claims the window's absent chunks and fetches them as one vectored read
         *  (Hadoop's readVectored where it has it, SparkLines.readRanges: S3A issues the ranges as parallel ranged GETs, as S3's guidance for throughput
         *  asks), publishing each as it arrives; again while walks widen the window, until nothing new is asked for
         *  or a fetch fails. */
        private void runAhead() {
            while (true) {
                List<Integer> claimed = new ArrayList<>();
                synchronized (this) {
                    for (int c = wanted.nextSetBit(0); c >= 0; c = wanted.nextSetBit(c + 1)) {
                        if (chunks[c] != null || fetching.get(c)) continue;
                        fetching.set(c);
                        claimed.add(c);
                    }
                    // each asked-for chunk once: one the bound drops before a walk reads it is the walk's to fetch
                    // (else a copy no one holds could be fetched and dropped over and over), and one a walk fetched
                    // itself before this fetcher ran is not fetched again (the walk read it; a tight bound dropped it)
                    wanted.clear();
                    if (claimed.isEmpty()) {
                        aheadRunning = false;
                        AHEAD_RUNNING.decrementAndGet();
                        return;
                    }
                }
                int done = 0;
                // the stream (and any connection it holds) lives while its ranges arrive, no longer
                List<ByteBuffer> taken = java.util.Collections.synchronizedList(new ArrayList<>());
                try {
                    // the last chunk has a GET of its own, after the others: it asks for a byte past the end (fetch)
                    int ranged = claimed.get(claimed.size() - 1) == chunks.length - 1 ? claimed.size() - 1 : claimed.size();
                    if (ranged > 0) {
                        try (FSDataInputStream in = open(size)) {
                            long[] offsets = new long[ranged];
                            int[] lengths = new int[ranged];
                            for (int i = 0; i < ranged; i++) {
                                offsets[i] = (long) claimed.get(i) * chunk;
                                lengths[i] = chunkLength(claimed.get(i));
                            }
                            // S3A may call allocate on its own threads (a merged range's parts)
                            List<ByteBuffer> got = SparkLines.readRanges(in, offsets, lengths, n -> {
                                ByteBuffer b = ChunkPool.take(chunk, n);
                                taken.add(b);
                                return b;
                            });
                            for (; done < ranged; done++) {
                                int c = claimed.get(done);
                                settle(c, whole(c, got.get(done), taken), false);
                            }
                        }
                    }
                    if (ranged < claimed.size()) {
                        settle(chunks.length - 1, fetch(chunks.length - 1), false);
                        done++;
                    }
                } catch (Exception e) {     // a read-ahead's failure: the walk that needs a chunk fetches it itself and reports
                    // the buffers taken and not settled stay out of the pool: a range's read may still write one
                    if (e instanceof InterruptedException) Thread.currentThread().interrupt();
                    for (int i = done; i < claimed.size(); i++) settle(claimed.get(i), null, false);
                    synchronized (this) {
                        aheadRunning = false;
                        AHEAD_RUNNING.decrementAndGet();
                    }
                    return;
                }
            }
        }

        private int chunkLength(int c) {
            return (int) Math.min(chunk, size - (long) c * chunk);
        }

        /** A chunk fetched by a vectored read, in the pool's buffer it was read into ({@code taken}: the buffers the
         *  read's allocate gave; a connector that answers with a buffer of its own has its bytes copied into one). */
        private Chunk whole(int c, ByteBuffer bytes, List<ByteBuffer> taken) {
            long from = (long) c * chunk;
            int len = chunkLength(c);
            if (bytes.remaining() != len) {
                throw new RemoteObjectException(objectUri + ": a read at position " + from + " returned " + bytes.remaining()
                    + " bytes, not " + len + ": the object is shorter than its manifest records");
            }
            boolean ours = bytes.position() == 0;
            if (ours) {
                ours = false;
                synchronized (taken) {
                    for (ByteBuffer b : taken) ours |= b == bytes;  // identity: the very buffer the pool gave
                }
            }
            if (ours) return new Chunk(bytes, len);
            ByteBuffer copy = ChunkPool.take(chunk, len);
            copy.put(bytes).flip();
            return new Chunk(copy, len);
        }

        /** A new stream on the object for one fetch, opened as {@code declared} bytes long (no HEAD before the first
         *  GET); the caller closes it when that fetch ends. Invariant: no stream outlives the fetch that opened it,
         *  so a JVM holds a pooled connection (S3A's {@code fs.s3a.connection.maximum}) only while it reads, never
         *  one per cached segment: a read of more segments than the pool has connections finishes. */
        private FSDataInputStream open(long declared, String policy) throws IOException {
            return openKnownLength(tier.fileSystem(), remote, objectUri, declared, policy);
        }

        private FSDataInputStream open(long declared) throws IOException {
            return open(declared, "vector, random");
        }

        /** Fails a read when a fetch found the object's length is not the manifest's (a check no walk skips: the
         *  fetch of the last chunk makes it, see {@link #fetch}). */
        private void requireLength() {
            RuntimeException e = lengthError;
            if (e != null) throw e;
        }

        /** The object's length disagrees with the manifest's (a fetch read fewer or more bytes than it records): its
         *  real length is asked for (a HEAD, only now) to name it, and every later read of this copy fails too. */
        private RuntimeException lengthMismatch(long readTo, Throwable cause) {
            LENGTH_ASKED.increment();
            long length = status(tier.fileSystem(), remote, objectUri).getLen();
            RuntimeException e = length != size ? sizeMismatch(objectUri, length, size)
                : new RemoteObjectException(objectUri + ": the object ends before position " + readTo
                    + " though its manifest records " + size + " bytes: records of the segment are lost", cause);
            if (length != size) lengthError = e;
            return e;
        }

        /**
         * Chunk c's bytes in one GET. The last chunk's GET also asks for one byte past the manifest's end (the stream
         * declared a byte longer, read sequentially so S3A asks for the whole range at once): the object's length is
         * checked by the fetch that reads its end, with no HEAD. Shorter (fewer bytes, or none at all) or longer (a
         * byte there) is a {@link RemoteObjectException} naming the object, never fewer rows. Invariant: a walk that
         * reads a tiered .log's last byte has had its length checked; one that stops before it reads only batches
         * whose bytes are all there (each checked by its CRC), and a mismatch found by any fetch fails every later
         * read of the copy ({@link #requireLength}).
         */
        private Chunk fetch(int c) {
            long from = (long) c * chunk;
            int len = chunkLength(c);
            boolean last = c == chunks.length - 1;
            ByteBuffer buf = ChunkPool.take(chunk, len);
            boolean filled = false;
            boolean reusable = true;            // false while a read of it may go on after a failure (vectored)
            // closed when the chunk is read: its connection goes back
            try (FSDataInputStream in = last ? open(size + 1, "sequential") : open(size)) {
                if (!last) {
                    reusable = false;
                    readRange(in, from, buf);
                    reusable = true;
                } else {
                    in.seek(from);
                    if (!readToLimit(in, buf) || in.read() >= 0) throw lengthMismatch(from + len, null);
                    buf.flip();
                }
                filled = true;
                return new Chunk(buf, len);
            } catch (FileNotFoundException e) {
                throw gone(objectUri, e);
            } catch (EOFException e) {
                throw lengthMismatch(from + len, e);      // the object's own length says it best
            } catch (IOException e) {
                throw new StorageException("cannot read " + objectUri + " at position " + from + ": " + e, e);
            } finally {
                if (!filled && reusable) ChunkPool.give(buf, poolMax);
            }
        }

        /** Bytes {@code [from, from + buf.remaining())} into {@code buf} (flipped to them after) in one GET: a vectored
         *  read of one range where Hadoop has it (S3A asks for the whole range in one GET, where its positioned
         *  reads may take several), else a positioned read into the pool's buffer ({@link ChunkPool#take}). */
        private void readRange(FSDataInputStream in, long from, ByteBuffer buf) throws IOException {
            int len = buf.remaining();
            ByteBuffer got;
            try {
                got = SparkLines.readRanges(in, new long[] {from}, new int[] {len}, n -> buf).get(0);
            } catch (java.util.concurrent.ExecutionException e) {
                throw failureOf(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while " + objectUri + " was read at position " + from, e);
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException(e);
            }
            if (got.remaining() != len) throw new EOFException("a read of " + len + " bytes returned " + got.remaining());
            if (got != buf) buf.put(got).flip();       // a connector's buffer of its own: its bytes into the pool's
        }

        /** Reads {@code in} on into {@code buf} to its limit; false when the stream ends first. */
        private boolean readToLimit(FSDataInputStream in, ByteBuffer buf) throws IOException {
            byte[] into = buf.hasArray() ? buf.array() : new byte[Math.min(buf.remaining(), SparkLines.BOUNCE)];
            while (buf.hasRemaining()) {
                int at = buf.hasArray() ? buf.arrayOffset() + buf.position() : 0;
                int n = in.read(into, at, buf.hasArray() ? buf.remaining() : Math.min(into.length, buf.remaining()));
                if (n < 0) return false;
                if (buf.hasArray()) buf.position(buf.position() + n);
                else buf.put(into, 0, n);
            }
            return true;
        }

        /**
         * The bytes as a read-only {@link FileChannel} for Kafka's {@code FileRecords} ({@link ChannelRecords}): its
         * positional reads are all a walk uses. A read fetches the chunks it reaches that are absent; its failure is
         * the walk's, typed, naming the object.
         */
        final class ChunkChannel extends FileChannel {
            private long position;
            // The two chunks read last, pinned by this channel whatever the bound drops: a walk reads batch after
            // batch from one chunk (a batch across a boundary from two), so it fetches each chunk at most once
            // however small the bound (in flight: two chunks per open segment), and copies from them without the
            // log's lock: a pinned chunk's buffer is not given back to the pool, so no fetch writes it meanwhile.
            private int pinned = -1;
            private Chunk pinnedChunk;
            private int before = -1;
            private Chunk beforeChunk;

            @Override
            public synchronized int read(ByteBuffer dst, long pos) throws IOException {
                if (pos < 0) throw new IllegalArgumentException("negative position " + pos);
                if (!isOpen()) throw new ClosedChannelException();
                if (pos >= size) return -1;
                int n = (int) Math.min(dst.remaining(), size - pos);
                int done = 0;
                while (done < n) {
                    long at = pos + done;
                    int c = (int) (at / chunk);
                    Chunk k = chunkOf(c);
                    int off = (int) (at - (long) c * chunk);
                    int len = Math.min(n - done, k.length - off);
                    k.copyTo(dst, off, len);
                    done += len;
                }
                requireLength();
                return n;
            }

            /** Starts fetching, in the background, the {@link #READ_AHEAD} chunks after the one holding byte {@code pos}
             *  (a walk there reads on; its own chunk is fetched by its read, if absent), but none this walk holds or
             *  has read (a walk reads forward, so a chunk it left is not fetched again), and none from byte
             *  {@code limit} on (where the walk ends: another task's bytes). */
            synchronized void readAheadOf(long pos, long limit) {
                if (pos < size && limit > 0) {
                    readAhead((int) Math.max(pos / chunk + 1, Math.max(pinned, before) + 1L), (int) ((limit - 1) / chunk) + 1);
                }
            }

            private Chunk chunkOf(int c) {
                if (c == pinned) return pinnedChunk;
                if (c != before) {
                    Chunk k = chunkAt(c);             // pinned for this channel
                    if (beforeChunk != null) unpin(beforeChunk);
                    beforeChunk = k;
                    before = c;
                }
                int p = pinned;                       // c becomes the chunk read last, the other the one before
                Chunk b = pinnedChunk;
                pinned = before;
                pinnedChunk = beforeChunk;
                before = p;
                beforeChunk = b;
                return pinnedChunk;
            }

            @Override
            public int read(ByteBuffer dst) throws IOException {
                int n = read(dst, position);
                if (n > 0) position += n;
                return n;
            }

            @Override
            public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
                long total = 0;
                for (int i = offset; i < offset + length; i++) {
                    int n = read(dsts[i]);
                    if (n < 0) return total == 0 ? -1 : total;
                    total += n;
                    if (dsts[i].hasRemaining()) break;
                }
                return total;
            }

            @Override
            public long position() {
                return position;
            }

            @Override
            public FileChannel position(long newPosition) {
                if (newPosition < 0) throw new IllegalArgumentException("negative position " + newPosition);
                position = newPosition;
                return this;
            }

            @Override
            public long size() {
                return size;
            }

            @Override
            public int write(ByteBuffer src) {
                throw new NonWritableChannelException();
            }

            @Override
            public long write(ByteBuffer[] srcs, int offset, int length) {
                throw new NonWritableChannelException();
            }

            @Override
            public int write(ByteBuffer src, long pos) {
                throw new NonWritableChannelException();
            }

            @Override
            public FileChannel truncate(long to) {
                throw new NonWritableChannelException();
            }

            @Override
            public void force(boolean metaData) {
                // read-only: nothing to force
            }

            @Override
            public long transferTo(long pos, long count, WritableByteChannel target) throws IOException {
                ByteBuffer b = ByteBuffer.allocate((int) Math.min(count, Math.max(0, size - pos)));
                int n = read(b, pos);
                if (n <= 0) return 0;
                b.flip();
                long written = 0;
                while (b.hasRemaining()) written += target.write(b);
                return written;
            }

            @Override
            public long transferFrom(ReadableByteChannel src, long pos, long count) {
                throw new NonWritableChannelException();
            }

            @Override
            public MappedByteBuffer map(MapMode mode, long pos, long length) throws IOException {
                throw new IOException(objectUri + ": a tiered segment's bytes are not a file to map");
            }

            @Override
            public java.nio.channels.FileLock lock(long pos, long length, boolean shared) throws IOException {
                throw new IOException(objectUri + ": a tiered segment's bytes cannot be locked");
            }

            @Override
            public java.nio.channels.FileLock tryLock(long pos, long length, boolean shared) throws IOException {
                throw new IOException(objectUri + ": a tiered segment's bytes cannot be locked");
            }

            @Override
            protected void implCloseChannel() {
                synchronized (this) {
                    // the copy's chunks stay, shared (release() hands the segment's hold back); the pins go
                    if (pinnedChunk != null) unpin(pinnedChunk);
                    if (beforeChunk != null) unpin(beforeChunk);
                    pinnedChunk = beforeChunk = null;
                    pinned = before = -1;
                }
            }
        }
    }
}
