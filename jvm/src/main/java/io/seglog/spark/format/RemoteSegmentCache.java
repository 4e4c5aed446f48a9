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
import java.util.BitSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
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
    /** Bytes per ranged read of a remote .log (as the Python reader's CHUNK). */
    public static final int CHUNK = 1 << 20;
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

    private static byte[] fetchWhole(RemoteTier tier, String objectUri, RemoteSegmentLog.FileFacts facts) {
        FileSystem fs = tier.fileSystem();
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(objectUri);
        long length = status(fs, p, objectUri).getLen();
        if (length != facts.size()) throw sizeMismatch(objectUri, length, facts.size());
        byte[] bytes = new byte[Math.toIntExact(length)];
        try (FSDataInputStream in = fs.open(p)) {
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

    /** The local copy of a remote {@code .log} of {@code facts.size()} bytes, filled as it is read. */
    public static CachedLog log(RemoteTier tier, String objectUri, RemoteSegmentLog.FileFacts facts) {
        String key = objectUri + "#" + facts.sha256();
        CachedLog have = LOGS.get(key);
        if (have != null) return have;
        synchronized (LOGS) {
            have = LOGS.get(key);
            if (have != null) return have;
            FileSystem fs = tier.fileSystem();
            org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(objectUri);
            long length = status(fs, p, objectUri).getLen();
            if (length != facts.size()) throw sizeMismatch(objectUri, length, facts.size());
            try {
                Path file = dir().resolve(facts.sha256() + Segment.LOG);
                try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(file.toFile(), "rw")) {
                    raf.setLength(facts.size());            // sparse: holes until their chunks are fetched
                }
                file.toFile().deleteOnExit();
                have = new CachedLog(fs, p, objectUri, file, facts.size());
            } catch (IOException e) {
                throw new StorageException("cannot make the local copy of " + objectUri + ": " + e, e);
            }
            LOGS.put(key, have);
            return have;
        }
    }

    /** A remote .log's local sparse copy; {@link #ensure} fills the byte ranges a walk reaches. */
    public static final class CachedLog {
        private final FileSystem fs;
        private final org.apache.hadoop.fs.Path remote;
        public final String objectUri;
        public final Path file;
        public final long size;
        private final BitSet present = new BitSet();
        private FSDataInputStream in;
        private volatile FileChannel reader;      // the local copy, for length prefixes (positional reads: thread-safe)

        CachedLog(FileSystem fs, org.apache.hadoop.fs.Path remote, String objectUri, Path file, long size) {
            this.fs = fs;
            this.remote = remote;
            this.objectUri = objectUri;
            this.file = file;
            this.size = size;
        }

        /** Makes bytes [from, to) (clipped to the size) present in the local copy. */
        public synchronized void ensure(long from, long to) {
            to = Math.min(to, size);
            if (from >= to) return;
            for (int c = (int) (from / CHUNK), last = (int) ((to - 1) / CHUNK); c <= last; c++) {
                if (!present.get(c)) fetch(c);
            }
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

        private void fetch(int chunk) {
            long from = (long) chunk * CHUNK;
            int len = (int) Math.min(CHUNK, size - from);
            byte[] buf = new byte[len];
            try {
                if (in == null) in = fs.open(remote);
                in.readFully(from, buf, 0, len);
            } catch (FileNotFoundException e) {
                throw gone(objectUri, e);
            } catch (EOFException e) {
                throw new RemoteObjectException(objectUri + ": the object ends before position " + (from + len)
                    + " though its manifest records " + size + " bytes: records of the segment are lost", e);
            } catch (IOException e) {
                closeStream();                     // the next fetch opens the object again
                throw new StorageException("cannot read " + objectUri + " at position " + from + ": " + e, e);
            }
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                ByteBuffer b = ByteBuffer.wrap(buf);
                while (b.hasRemaining()) ch.write(b, from + b.position());
            } catch (IOException e) {
                throw new StorageException("cannot write the local copy " + file + " of " + objectUri + ": " + e, e);
            }
            FETCHED.add(len);
            present.set(chunk);
        }
    }
}
