package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** indexer/fsutil.py's atomic_write ({@link #write}: a temporary name, force, rename over, fsync of the folder: the
 *  old file or the new one after a crash, never a torn one) and publish_by_link ({@link #publishByLink}: the same,
 *  but the file is created once and never replaced). */
public final class AtomicFile {
    private AtomicFile() {}

    private static final java.util.concurrent.atomic.AtomicLong TEMP_SEQ = new java.util.concurrent.atomic.AtomicLong();

    /** A temporary file's name beside {@code path}: fsutil.temp_path's rule. Unique among this JVM's threads (a
     *  counter: two threads once read one nanoTime and the second create failed), and among processes on a shared
     *  volume (the pid, and a random part: two hosts can share a pid). A leading dot keeps it out of every listing;
     *  recovery removes a killed writer's leftovers by the {@code .tmp-} prefix. */
    public static Path tempSibling(Path path) {
        return path.resolveSibling(".tmp-" + tempSuffix());
    }

    /** The unique part of a temporary name ({@code <pid>-<counter>-<random>}), for names with their own prefix. */
    public static String tempSuffix() {
        return ProcessHandle.current().pid() + "-" + TEMP_SEQ.incrementAndGet() + "-"
                + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong() & 0xffffffffffffL);
    }

    public static void write(Path path, byte[] data) throws IOException {
        writeUnsynced(path, data);
        FileSync.directory(path.getParent());
    }

    /** {@link #write} without the folder's fsync: the new content is whole at {@code path} (forced before the
     *  rename), but the rename is durable only once the caller fsyncs the folder. */
    static void writeUnsynced(Path path, byte[] data) throws IOException {
        Path tmp = tempSibling(path);
        boolean shared = GroupShared.isShared(path.getParent());
        try (FileChannel ch = GroupShared.createNew(tmp, shared)) {
            ByteBuffer buf = ByteBuffer.wrap(data);
            while (buf.hasRemaining()) ch.write(buf);
            ch.force(true);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * Publish {@code data} at {@code path} unless a file has that name (the one publish-by-link of the JVM: commit
     * files, topic metadata, a stream's initial offsets): written and forced under {@code tmp}, hard-linked to
     * {@code path}, then the folder fsynced. A link fails when the name exists, so of concurrent creators exactly
     * one wins, and no reader ever sees a torn file. {@code tmp} is removed either way (a leftover dot-file is in
     * no listing).
     *
     * @param what names the file in the error of a filesystem without hard links ("commit log D: cannot publish commit 7")
     * @return false when {@code path} already existed (left as it is: another creator's)
     * @throws StorageException when the filesystem cannot make the hard link
     */
    public static boolean publishByLink(Path path, Path tmp, byte[] data, boolean shared, String what) throws IOException {
        try {
            try (FileChannel ch = GroupShared.createNew(tmp, shared)) {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) ch.write(buf);
                ch.force(true);
            }
            return link(path, tmp, what);
        } finally {
            removeTemp(tmp);
        }
    }

    /** {@link #publishByLink}'s second half (the first: the data written and forced under the dot-name {@code tmp}):
     *  {@code tmp} hard-linked to {@code path}, then the folder fsynced; false when {@code path} already existed (left
     *  as it is: another creator's). The caller removes {@code tmp} either way ({@link #removeTemp}). */
    public static boolean link(Path path, Path tmp, String what) throws IOException {
        try {
            Files.createLink(path, tmp);
        } catch (FileAlreadyExistsException e) {
            return false;
        } catch (UnsupportedOperationException | IOException e) {
            throw new StorageException(what + " with a hard link (" + e + "); seglog needs a filesystem with hard links"
                    + " (README, Running on a cluster)", e);
        }
        FileSync.directory(path.getParent());
        return true;
    }

    /** A temporary file removed; a leftover dot-file is invisible to every reader: not worth failing a write for. */
    public static void removeTemp(Path tmp) {
        try {
            Files.deleteIfExists(tmp);
        } catch (IOException e) {
            // see above
        }
    }
}
