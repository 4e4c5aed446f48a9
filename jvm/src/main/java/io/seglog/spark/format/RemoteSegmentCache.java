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
 * Index files live in a temporary folder deleted when the JVM exits. Invariant: a chunk is visible to readers
 * only once its bytes are whole ({@link CachedLog#settle}, under the log's lock), and a chunk's array is never
 * written after that: a dropped chunk is only unreferenced, so a reader copying from it is unaffected.
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
    private static FSDataInputStream openKnownLength(FileSystem fs, org.apache.hadoop.fs.Path p, String objectUri,
                                                     long length, String policy) throws IOException {
        try {
            return fs.openFile(p).opt("fs.option.openfile.length", Long.toString(length)).opt("fs.option.openfile.read.policy", policy)
                .build().get();
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (cause instanceof IOException) throw (IOException) cause;
            throw new IOException(cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while opening " + objectUri, e);
        }
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

    /** The bound on the bytes of tiered .logs this JVM holds in memory, unless the Hadoop configuration's
     *  {@value #CACHE_MAX_KEY} says: an eighth of the heap (at least {@link #CACHE_MIN}). Past it, the chunks read
     *  least recently are dropped, whether a segment holding them is open or not: a later read that needs one
     *  fetches it again. Reads in flight are never dropped: chunks fetched ahead of a walk and not read yet, and
     *  the two chunks each open segment reads from; so what a JVM holds exceeds the bound by at most, per open
     *  tiered segment, two chunks and its read-ahead. */
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
     * <p>Invariants: a chunk is published ({@code chunks[c]}) only whole, and its array is never written after;
     * a chunk is fetched by one thread at a time ({@code fetching}), the others wait for it; each fetch opens its
     * own stream and closes it when it ends ({@link #open}). A read-ahead that fails leaves its chunk absent, so
     * the walk that needs it fetches it itself and reports the failure, typed, naming the object.
     */
    public static final class CachedLog {
        private final RemoteTier tier;
        private final org.apache.hadoop.fs.Path remote;
        public final String objectUri;
        public final long size;
        int refs;                                        // guarded by LOGS: open segments holding this copy
        private final long cacheMax;
        private final int chunk;                         // bytes per ranged read
        private final int readAhead;                     // chunks fetched ahead of a walk
        private final byte[][] chunks;                   // guarded by this: the chunks held (null: absent)
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
            this.tier = tier;
            this.remote = remote;
            this.objectUri = objectUri;
            this.size = size;
            this.chunk = setting(conf, CHUNK_KEY, CHUNK, 1024);
            this.readAhead = setting(conf, READ_AHEAD_KEY, READ_AHEAD, 0);
            int n = Math.toIntExact((size + chunk - 1) / chunk);
            this.chunks = new byte[n][];
            this.used = new long[n];
        }

        /** A new read-only channel over the bytes (each open segment has its own: closing it closes nothing else). */
        ChunkChannel channel() {
            return new ChunkChannel();
        }

        /** Chunk c's bytes: held, or fetched now (by this thread, or waited for when another fetches it). */
        private byte[] chunkAt(int c) {
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
                    return chunks[c];
                }
                fetching.set(c);        // absent, and no one fetches it (a failed fetch leaves it so): this thread
                wanted.clear(c);        // the walk's own fetch answers a read-ahead's ask not yet served
            }
            byte[] bytes = null;
            try {
                bytes = fetch(c);
                return bytes;               // this thread's own copy: used even if the bound drops it at once
            } finally {
                settle(c, bytes, true);
            }
        }

        /** Ends chunk c's fetch: publishes its bytes when it succeeded ({@code byWalk}: fetched by the walk that reads
         *  it, else ahead of one); then applies the bound. */
        private void settle(int c, byte[] bytes, boolean byWalk) {
            synchronized (this) {
                fetching.clear(c);
                if (bytes != null) {
                    chunks[c] = bytes;
                    used[c] = TICKS.incrementAndGet();
                    read.set(c, byWalk);
                    CACHED.addAndGet(bytes.length);
                    FETCHED.add(bytes.length);
                }
                notifyAll();
            }
            if (bytes != null && CACHED.get() > cacheMax) evictPast(cacheMax);
        }

        /** The chunks the bound may drop (called under LOGS): every held chunk of a copy no segment holds; of one in
         *  use, those a walk has read. A chunk fetched ahead and not read yet is in flight: dropping it would make the
         *  walk that asked for it fetch it again. */
        private synchronized void heldChunks(List<Held> into) {
            for (int c = 0; c < chunks.length; c++) {
                if (chunks[c] != null && (refs == 0 || read.get(c))) into.add(new Held(this, c, used[c]));
            }
        }

        /** Drops chunk c if it was not used since {@code tick}; true when dropped. */
        private synchronized boolean drop(int c, long tick) {
            if (chunks[c] == null || used[c] != tick) return false;
            CACHED.addAndGet(-chunks[c].length);
            chunks[c] = null;
            read.clear(c);
            return true;
        }

        /** True when no chunk is held or fetched (its stream is closed then: the copy is forgotten). */
        private synchronized boolean forgetIfEmpty() {
            if (aheadRunning || !fetching.isEmpty()) return false;
            for (byte[] b : chunks) if (b != null) return false;
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
                            List<ByteBuffer> got = SparkLines.readRanges(in, offsets, lengths);
                            for (; done < ranged; done++) {
                                int c = claimed.get(done);
                                settle(c, whole(c, got.get(done)), false);
                            }
                        }
                    }
                    if (ranged < claimed.size()) {
                        settle(chunks.length - 1, fetch(chunks.length - 1), false);
                        done++;
                    }
                } catch (Exception e) {     // a read-ahead's failure: the walk that needs a chunk fetches it itself and reports
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

        /** A fetched chunk's bytes as one array of its whole length (readVectored's heap buffers are whole arrays). */
        private byte[] whole(int c, ByteBuffer bytes) {
            long from = (long) c * chunk;
            int len = chunkLength(c);
            if (bytes.remaining() != len) {
                throw new RemoteObjectException(objectUri + ": a read at position " + from + " returned " + bytes.remaining()
                    + " bytes, not " + len + ": the object is shorter than its manifest records");
            }
            if (bytes.hasArray() && bytes.arrayOffset() == 0 && bytes.position() == 0 && bytes.array().length == len) {
                return bytes.array();
            }
            byte[] out = new byte[len];
            bytes.get(out);
            return out;
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
        private byte[] fetch(int c) {
            long from = (long) c * chunk;
            int len = chunkLength(c);
            boolean last = c == chunks.length - 1;
            byte[] buf = new byte[len];
            // closed when the chunk is read: its connection goes back
            try (FSDataInputStream in = last ? open(size + 1, "sequential") : open(size)) {
                if (!last) {
                    in.readFully(from, buf, 0, len);
                    return buf;
                }
                in.seek(from);
                int got = 0;
                while (got < len) {
                    int n = in.read(buf, got, len - got);
                    if (n < 0) break;
                    got += n;
                }
                if (got < len || in.read() >= 0) throw lengthMismatch(from + len, null);
                return buf;
            } catch (FileNotFoundException e) {
                throw gone(objectUri, e);
            } catch (EOFException e) {
                throw lengthMismatch(from + len, e);      // the object's own length says it best
            } catch (IOException e) {
                throw new StorageException("cannot read " + objectUri + " at position " + from + ": " + e, e);
            }
        }

        /**
         * The bytes as a read-only {@link FileChannel} for Kafka's {@code FileRecords} ({@link ChannelRecords}): its
         * positional reads are all a walk uses. A read fetches the chunks it reaches that are absent; its failure is
         * the walk's, typed, naming the object.
         */
        final class ChunkChannel extends FileChannel {
            private long position;
            // The two chunks read last, held by this channel whatever the bound drops: a walk reads batch after batch
            // from one chunk (a batch across a boundary from two), so it fetches each chunk at most once however
            // small the bound (in flight: two chunks per open segment), and reads them without the log's lock.
            private int pinned = -1;
            private byte[] pinnedBytes;
            private int before = -1;
            private byte[] beforeBytes;

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
                    byte[] bytes = bytesOf(c);
                    int off = (int) (at - (long) c * chunk);
                    int len = Math.min(n - done, bytes.length - off);
                    dst.put(bytes, off, len);
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

            private byte[] bytesOf(int c) {
                if (c == pinned) return pinnedBytes;
                if (c != before) {
                    beforeBytes = chunkAt(c);
                    before = c;
                }
                int p = pinned;                       // c becomes the chunk read last, the other the one before
                byte[] b = pinnedBytes;
                pinned = before;
                pinnedBytes = beforeBytes;
                before = p;
                beforeBytes = b;
                return pinnedBytes;
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
                    pinnedBytes = beforeBytes = null;   // the copy's chunks stay, shared: release() gives them back
                    pinned = before = -1;
                }
            }
        }
    }
}
