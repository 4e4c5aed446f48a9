package io.seglog.spark.format;

import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileRange;
import org.apache.hadoop.fs.FileSystem;

/**
 * This JVM's local copies of tiered segments (an executor's, or the driver's for planning): a segment read
 * from the remote tier is read by {@link Segment} as a local one, with every check of a local read (CRCs,
 * dense offsets, leader epochs, the committed bound). Keyed by the object's URI and the manifest's SHA-256,
 * so a segment is fetched once per JVM whatever the tasks that read it.
 *
 * <ul>
 * <li>{@code .index} and {@code .timeindex}: fetched whole once, checked against the manifest's size and
 *     SHA-256 before use (a damaged index would misplace a seek).</li>
 * <li>{@code .log}: a sparse local file of the manifest's size, filled at the same positions in aligned
 *     {@link #CHUNK}s as the walks of {@link Segment.Batches} reach them ({@link CachedLog#ensure}): a task
 *     fetches the byte ranges it reads, from the offset index's position for its start. The object's length
 *     is checked against the manifest when first opened: shorter or longer is a {@link RemoteObjectException}
 *     naming it, never fewer rows.</li>
 * </ul>
 * Files live in a temporary folder deleted when the JVM exits. Invariant: a chunk is marked present only
 * after its bytes are written whole, under the log's lock.
 */
public final class RemoteSegmentCache {
    /** Bytes per ranged read of a remote .log, unless the Hadoop configuration's {@value #CHUNK_KEY} says: large
     *  enough that a request's cost is small beside its bytes (S3's guidance: ranged GETs of 8-16 MB), small
     *  enough that a seek into a segment fetches little it does not read. */
    public static final int CHUNK = 8 << 20;
    public static final String CHUNK_KEY = "seglog.remote.read.chunk.bytes";
    public static final String READ_AHEAD_KEY = "seglog.remote.read.ahead.chunks";
    private static final Map<String, Path> INDEXES = new ConcurrentHashMap<>();
    private static final Map<String, CachedLog> LOGS = new ConcurrentHashMap<>();
    private static Path dir;
    private static final java.util.concurrent.atomic.LongAdder FETCHED = new java.util.concurrent.atomic.LongAdder();

    private RemoteSegmentCache() {
    }

    /** Bytes fetched from remote tiers by this JVM (tests: a read fetches what it needs, once). */
    public static long fetchedBytes() {
        return FETCHED.sum();
    }

    private static synchronized Path dir() throws IOException {
        if (dir == null) {
            dir = Files.createTempDirectory("seglog-remote-cache-");
            dir.toFile().deleteOnExit();
        }
        return dir;
    }

    /** The local copy of an index object, fetched whole and checked against {@code facts} on first use. */
    public static Path index(RemoteTier tier, String objectUri, RemoteSegmentLog.FileFacts facts, String suffix) {
        String key = objectUri + "#" + facts.sha256();
        Path have = INDEXES.get(key);
        if (have != null) return have;
        synchronized (INDEXES) {
            have = INDEXES.get(key);
            if (have != null) return have;
            byte[] bytes = fetchWhole(tier, objectUri, facts);
            try {
                Path file = dir().resolve(facts.sha256() + suffix);
                Files.write(file, bytes);
                file.toFile().deleteOnExit();
                INDEXES.put(key, file);
                return file;
            } catch (IOException e) {
                throw new StorageException("cannot write the local copy of " + objectUri + ": " + e, e);
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

    /** Opens an object whose length is known (Hadoop's standard openFile options: S3A then sends no HEAD). */
    private static FSDataInputStream openKnownLength(FileSystem fs, org.apache.hadoop.fs.Path p, String objectUri,
                                                     long length, String policy) throws IOException {
        try {
            return fs.openFile(p).opt("fs.option.openfile.length", length).opt("fs.option.openfile.read.policy", policy)
                .build().get();
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (cause instanceof IOException io) throw io;
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
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The bound on this JVM's local copies of tiered .logs (bytes fetched into them), unless the Hadoop
     *  configuration's {@value #CACHE_MAX_KEY} says: past it, the copies no open segment uses are deleted, least
     *  recently used first. A copy in use is never deleted, so the bound can be passed while readers hold
     *  more than it. */
    public static final long CACHE_MAX = 4L << 30;
    public static final String CACHE_MAX_KEY = "seglog.remote.cache.max.bytes";
    private static final java.util.concurrent.atomic.AtomicLong CACHED = new java.util.concurrent.atomic.AtomicLong();
    private static final java.util.concurrent.atomic.AtomicLong TICKS = new java.util.concurrent.atomic.AtomicLong();
    private static final java.util.concurrent.atomic.AtomicLong FILES = new java.util.concurrent.atomic.AtomicLong();
    private static final java.util.concurrent.atomic.LongAdder EVICTED = new java.util.concurrent.atomic.LongAdder();

    /** Bytes held in this JVM's local copies of tiered .logs. */
    public static long cachedBytes() {
        return CACHED.get();
    }

    /** Local copies deleted by the bound so far (tests). */
    public static long evictions() {
        return EVICTED.sum();
    }

    /**
     * The local copy of a remote {@code .log} of {@code facts.size()} bytes, filled as it is read, held for the
     * caller until {@link CachedLog#release}. Nothing is fetched here (the object's length is checked at its
     * first fetch).
     */
    public static CachedLog acquire(RemoteTier tier, String objectUri, RemoteSegmentLog.FileFacts facts) {
        String key = objectUri + "#" + facts.sha256();
        synchronized (LOGS) {
            CachedLog have = LOGS.get(key);
            if (have == null) {
                try {
                    // one file per copy (two objects with the same bytes are two copies: either may be deleted alone)
                    Path file = dir().resolve(facts.sha256() + "-" + FILES.incrementAndGet() + Segment.LOG);
                    try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(file.toFile(), "rw")) {
                        raf.setLength(facts.size());            // sparse: holes until their chunks are fetched
                    }
                    file.toFile().deleteOnExit();
                    have = new CachedLog(tier, new org.apache.hadoop.fs.Path(objectUri), objectUri, file, facts.size(), key);
                } catch (IOException e) {
                    throw new StorageException("cannot make the local copy of " + objectUri + ": " + e, e);
                }
                LOGS.put(key, have);
            }
            have.refs++;
            have.lastUsed = TICKS.incrementAndGet();
            return have;
        }
    }

    /** Deletes copies no segment holds, least recently used first, until the cached bytes are within the bound. */
    private static void evictPast(long max) {
        if (CACHED.get() <= max) return;
        synchronized (LOGS) {
            List<CachedLog> idle = new ArrayList<>();
            for (CachedLog l : LOGS.values()) if (l.refs == 0) idle.add(l);
            idle.sort(java.util.Comparator.comparingLong(l -> l.lastUsed));
            for (CachedLog l : idle) {
                if (CACHED.get() <= max) return;
                if (l.deleteIfIdle()) {
                    LOGS.remove(l.key);
                    EVICTED.increment();
                }
            }
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
    /** Daemon threads for read-ahead (a few per JVM: each serves one log's stream at a time). */
    private static final java.util.concurrent.ExecutorService AHEAD = java.util.concurrent.Executors.newFixedThreadPool(4, r -> {
        Thread t = new Thread(r, "seglog-remote-read-ahead");
        t.setDaemon(true);
        return t;
    });

    /** Daemon threads for the objects' length checks (a HEAD each, beside the first GETs). */
    private static final java.util.concurrent.ExecutorService CHECKS = java.util.concurrent.Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "seglog-remote-length-check");
        t.setDaemon(true);
        return t;
    });

    /**
     * A remote .log's local sparse copy; {@link #ensure} fills the byte ranges a walk reaches, and starts fetching
     * the {@link #READ_AHEAD} chunks after them in the background.
     *
     * <p>Invariants: a chunk is marked present only after its bytes are written whole; a chunk is fetched by one
     * thread at a time ({@code fetching}), the others wait for it; the object's stream is read by one thread
     * at a time ({@code streamLock}). A read-ahead that fails leaves its chunk absent, so the walk that needs
     * it fetches it itself and reports the failure, typed, naming the object.
     */
    public static final class CachedLog {
        private final RemoteTier tier;
        private final org.apache.hadoop.fs.Path remote;
        public final String objectUri;
        public final Path file;
        public final long size;
        final String key;
        int refs;                                        // guarded by LOGS: open segments holding this copy
        long lastUsed;                                   // guarded by LOGS
        private long cached;                             // guarded by this: bytes stored in the copy
        private boolean deleted;                         // guarded by this
        private final long cacheMax;
        private final int chunk;                         // bytes per ranged read
        private final int readAhead;                     // chunks fetched ahead of a walk
        private final BitSet present = new BitSet();     // guarded by this
        private final BitSet fetching = new BitSet();    // guarded by this
        private final Object streamLock = new Object();
        private FSDataInputStream in;                    // guarded by streamLock
        private FileChannel writer;                      // guarded by this (opened on first store)
        private volatile java.util.concurrent.CompletableFuture<Void> lengthCheck;   // started with the stream
        private volatile boolean lengthChecked;          // the object's length is the manifest's
        private int aheadFrom;                           // guarded by this: the read-ahead window [aheadFrom, aheadTo)
        private int aheadTo;                             // guarded by this
        private boolean aheadRunning;                    // guarded by this: one read-ahead fetcher per log
        private volatile FileChannel reader;      // the local copy, for length prefixes (positional reads: thread-safe)

        CachedLog(RemoteTier tier, org.apache.hadoop.fs.Path remote, String objectUri, Path file, long size, String key) {
            this.key = key;
            org.apache.hadoop.conf.Configuration conf = tier.sessionConf();
            long max = conf.getLong(CACHE_MAX_KEY, CACHE_MAX);
            if (max < 0) throw new IllegalArgumentException(CACHE_MAX_KEY + " = " + max + ": must be at least 0");
            this.cacheMax = max;
            this.tier = tier;
            this.remote = remote;
            this.objectUri = objectUri;
            this.file = file;
            this.size = size;
            this.chunk = setting(conf, CHUNK_KEY, CHUNK, 1024);
            this.readAhead = setting(conf, READ_AHEAD_KEY, READ_AHEAD, 0);
        }

        /** Makes bytes [from, to) (clipped to the size) present in the local copy. */
        public void ensure(long from, long to) {
            to = Math.min(to, size);
            if (from >= to) return;
            int last = (int) ((to - 1) / chunk);
            readAhead(last + 1);                 // first: the chunks after these arrive while these are fetched
            for (int c = (int) (from / chunk); c <= last; c++) {
                if (claim(c, true)) fetchClaimed(c, true);
            }
            requireLength();
        }

        /** True when the caller must fetch chunk c (now marked fetching); false when it is present. A walk
         *  ({@code wait}) waits for a chunk another thread is fetching; a read-ahead passes it by. */
        private synchronized boolean claim(int c, boolean wait) {
            while (!present.get(c) && fetching.get(c)) {
                if (!wait) return false;
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new StorageException("interrupted while " + objectUri + " was fetched", e);
                }
            }
            if (present.get(c)) return false;
            fetching.set(c);
            return true;
        }

        private synchronized void settle(int c, boolean ok) {
            fetching.clear(c);
            if (ok) present.set(c);
            notifyAll();
        }

        /** Fetches a claimed chunk; false when it failed (a read-ahead's failure is not reported: the walk that
         *  needs the chunk fetches it itself and reports what went wrong). */
        private boolean fetchClaimed(int c, boolean report) {
            boolean ok = false;
            try {
                fetch(c);
                ok = true;
            } catch (RuntimeException e) {
                if (report) throw e;
            } finally {
                settle(c, ok);
            }
            return ok;
        }

        /** The holder's segment is closed: the copy may be deleted once no one holds it (the cache bound). */
        public void release() {
            synchronized (LOGS) {
                if (refs > 0) refs--;
            }
            evictPast(cacheMax);
        }

        /** Deletes the copy when nothing fetches into it (called under LOGS, with no holder); true when deleted. */
        private synchronized boolean deleteIfIdle() {
            if (deleted || aheadRunning || !fetching.isEmpty()) return false;
            synchronized (streamLock) {
                closeStream();
            }
            closeQuietly(reader);
            closeQuietly(writer);
            reader = null;
            writer = null;
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                return false;        // kept (and still counted): the next eviction tries again
            }
            deleted = true;
            present.clear();
            CACHED.addAndGet(-cached);
            cached = 0;
            return true;
        }

        private static void closeQuietly(FileChannel ch) {
            try {
                if (ch != null) ch.close();
            } catch (IOException e) {
                // the copy is deleted next: nothing to keep
            }
        }

        /** Starts fetching the chunks from byte {@code pos} on in the background (a walk about to reach them). */
        public void prefetch(long pos) {
            if (pos < size) readAhead((int) (pos / chunk));
        }

        /** Widens the read-ahead window to [from, from + READ_AHEAD) and starts its one fetcher if none runs:
         *  one per log, so the object's stream is read in order. */
        private void readAhead(int from) {
            int to = (int) Math.min((size + chunk - 1) / chunk, (long) from + readAhead);
            synchronized (this) {
                if (from >= to) return;
                aheadFrom = from;
                aheadTo = Math.max(aheadTo, to);
                if (aheadRunning) return;
                aheadRunning = true;
            }
            AHEAD.execute(this::runAhead);
        }

        /** The read-ahead fetcher: claims the window's absent chunks and fetches them as one vectored read
         *  (Hadoop's readVectored: S3A issues the ranges as parallel ranged GETs, as S3's guidance for throughput
         *  asks), storing each as it arrives; until the window is present or a fetch fails. */
        private void runAhead() {
            while (true) {
                List<Integer> claimed = new ArrayList<>();
                synchronized (this) {
                    for (int c = aheadFrom; c < aheadTo; c++) {
                        if (present.get(c) || fetching.get(c)) continue;
                        fetching.set(c);
                        claimed.add(c);
                    }
                    if (claimed.isEmpty()) {
                        aheadRunning = false;
                        return;
                    }
                }
                int done = 0;
                try {
                    List<FileRange> ranges = new ArrayList<>(claimed.size());
                    for (int c : claimed) ranges.add(FileRange.createFileRange((long) c * chunk, chunkLength(c)));
                    synchronized (streamLock) {
                        stream().readVectored(ranges, ByteBuffer::allocate);
                    }
                    for (; done < claimed.size(); done++) {
                        int c = claimed.get(done);
                        store(c, ranges.get(done).getData().get());
                        settle(c, true);
                    }
                } catch (Exception e) {     // a read-ahead's failure: the walk that needs a chunk fetches it itself and reports
                    if (e instanceof InterruptedException) Thread.currentThread().interrupt();
                    for (int i = done; i < claimed.size(); i++) settle(claimed.get(i), false);
                    synchronized (this) {
                        aheadRunning = false;
                    }
                    return;
                }
            }
        }

        private int chunkLength(int c) {
            return (int) Math.min(chunk, size - (long) c * chunk);
        }

        /** Writes a fetched chunk into the local copy (positional writes: safe beside other threads'). */
        private void store(int c, ByteBuffer bytes) {
            long from = (long) c * chunk;
            int len = chunkLength(c);
            if (bytes.remaining() != len) {
                throw new RemoteObjectException(objectUri + ": a read at position " + from + " returned " + bytes.remaining()
                    + " bytes, not " + len + ": the object is shorter than its manifest records");
            }
            try {
                FileChannel w;
                synchronized (this) {
                    if (writer == null) writer = FileChannel.open(file, StandardOpenOption.WRITE);
                    w = writer;
                }
                while (bytes.hasRemaining()) w.write(bytes, from + (len - bytes.remaining()));
            } catch (IOException e) {
                throw new StorageException("cannot write the local copy " + file + " of " + objectUri + ": " + e, e);
            }
            FETCHED.add(len);
            synchronized (this) {
                cached += len;
            }
            if (CACHED.addAndGet(len) > cacheMax) evictPast(cacheMax);
        }

        /** Makes the batch starting at {@code pos} present: its length prefix, then the whole batch (at least a
         *  batch header's worth, so that a bad length is judged by the walk from the real bytes). */
        public void ensureBatchAt(long pos) {
            if (pos >= size) return;
            ensure(pos, pos + Segment.LOG_OVERHEAD);
            long length = Segment.HEADER;
            if (pos + Segment.LOG_OVERHEAD <= size) {
                ByteBuffer b = ByteBuffer.allocate(4);
                try {
                    FileChannel ch = reader();
                    while (b.hasRemaining() && ch.read(b, pos + 8 + b.position()) >= 0) {
                        // positional reads of the length field
                    }
                } catch (IOException e) {
                    throw new StorageException("cannot read the local copy " + file + " of " + objectUri + ": " + e, e);
                }
                length = Math.max(length, (long) b.getInt(0) + Segment.LOG_OVERHEAD);
            }
            ensure(pos, pos + Math.max(0, length));
        }

        private FileChannel reader() throws IOException {
            FileChannel ch = reader;
            if (ch == null) {
                synchronized (this) {
                    if (reader == null) reader = FileChannel.open(file, StandardOpenOption.READ);
                    ch = reader;
                }
            }
            return ch;
        }

        private void closeStream() {
            try {
                if (in != null) in.close();
            } catch (IOException e) {
                // a read-only stream: nothing to lose
            }
            in = null;
        }

        /** The object's stream, opened once with the manifest's length (no HEAD before the first GET); the object's
         *  real length is asked for beside the first reads ({@link #lengthCheck}), and no walk uses the bytes before
         *  it agrees ({@link #requireLength}): shorter or longer is reported naming the object, never fewer rows. */
        private FSDataInputStream stream() throws IOException {
            if (in != null) return in;
            FileSystem fs = tier.fileSystem();
            if (lengthCheck == null) {
                lengthCheck = java.util.concurrent.CompletableFuture.runAsync(() -> {
                    long length = status(fs, remote, objectUri).getLen();
                    if (length != size) throw sizeMismatch(objectUri, length, size);
                }, CHECKS);
            }
            in = openKnownLength(fs, remote, objectUri, size, "vector, random");
            return in;
        }

        /** Waits for the object's length check (started with its stream); its failure is the walk's. */
        private void requireLength() {
            if (lengthChecked) return;
            java.util.concurrent.CompletableFuture<Void> check = lengthCheck;
            if (check == null) return;              // nothing fetched yet: nothing to judge
            try {
                check.join();
            } catch (java.util.concurrent.CompletionException e) {
                if (e.getCause() instanceof RuntimeException re) throw re;
                throw new StorageException("cannot check the length of " + objectUri + ": " + e.getCause(), e.getCause());
            }
            lengthChecked = true;
        }

        private void fetch(int c) {
            long from = (long) c * chunk;
            int len = chunkLength(c);
            byte[] buf = new byte[len];
            synchronized (streamLock) {
                try {
                    stream().readFully(from, buf, 0, len);
                } catch (FileNotFoundException e) {
                    throw gone(objectUri, e);
                } catch (EOFException e) {
                    requireLength();                   // the object's own length says it best, when it disagrees
                    throw new RemoteObjectException(objectUri + ": the object ends before position " + (from + len)
                        + " though its manifest records " + size + " bytes: records of the segment are lost", e);
                } catch (IOException e) {
                    closeStream();                     // the next fetch opens the object again
                    throw new StorageException("cannot read " + objectUri + " at position " + from + ": " + e, e);
                }
            }
            store(c, ByteBuffer.wrap(buf));
        }
    }
}
