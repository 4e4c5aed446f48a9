package io.seglog.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;

/**
 * An exclusive lock on one file under {@code <root>/_seglog/locks/} (docs/spec.md §4), the same lock as
 * the Python core's indexer/locks.py {@code FileLock}: flock(2) through libc. Java's own
 * {@code FileChannel.lock} is an fcntl (POSIX record) lock, which on Linux neither excludes nor is
 * excluded by a flock: a JVM holding one would write beside a Python sink or sidecar holding the other.
 *
 * <p>flock locks belong to the open file description: two holders in one process exclude each other (as
 * two Python {@code FileLock}s do), and the kernel drops a lock when its process dies, so a killed
 * driver never leaves a root locked.
 */
public final class FileLock implements AutoCloseable {
    private static final int POLL_MILLIS = 20;
    private static final int NAME_MAX = 255;   // bytes in one path component (indexer/names.py)
    // Linux's values (asm-generic); seglog runs on Linux (README)
    private static final int LOCK_EX = 2;
    private static final int LOCK_NB = 4;
    private static final int LOCK_UN = 8;
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 02000000;
    private static final int O_NOFOLLOW = 0400000;   // a symlinked lock file is refused, never followed (RootFiles)
    private static final int O_CREAT = 0100;
    private static final int O_EXCL = 0200;
    private static final int ENOENT = 2;
    private static final int EACCES = 13;
    private static final int ELOOP = 40;
    private static final int EAGAIN = 11;   // EWOULDBLOCK

    private interface LibC extends Library {
        int open(String path, int flags) throws LastErrorException;

        int open(String path, int flags, int mode) throws LastErrorException;

        int flock(int fd, int operation) throws LastErrorException;

        int close(int fd) throws LastErrorException;

        int geteuid();
    }

    private static final class Holder {
        static final LibC LIBC = Native.load("c", LibC.class);
    }

    private final Path path;
    private final String what;
    private int fd = -1;

    public FileLock(Path path, String what) {
        this.path = path;
        this.what = what;
    }

    /** The lock of partition folder {@code <root>/<topic>-<partition>}. */
    public static FileLock partition(Path root, String topic, int partition) {
        String name = topic + "-" + partition;
        return new FileLock(lockPath(root, name), "partition " + name);
    }

    /** The partition's maintenance lock (indexer/locks.py's maintenance_lock): a clean or merge holds it for its
     *  whole run; taken before the partition's lock, never the other way round while waiting. */
    public static FileLock maintenance(Path root, String topic, int partition) {
        String name = topic + "-" + partition;
        return new FileLock(lockPath(root, name + ".maintenance"), "partition " + name + "'s maintenance");
    }

    /** The driver's lock of one topic: one writing query commits to a topic at a time. */
    public static FileLock topicWriter(Path root, String topic) {
        return new FileLock(lockPath(root, topic + ".writer"), "topic " + topic + " (sink writer)");
    }

    /** {@code <root>/_seglog/locks/<name>.lock}, shortened as indexer/names.py's short_file_name does. */
    public static Path lockPath(Path root, String name) {
        return RootFiles.metaPath(root, "locks", shortFileName(name, ".lock"));
    }

    /** {@code name + suffix}, or, past NAME_MAX bytes, a prefix of name plus a hash of all of it. */
    static String shortFileName(String name, String suffix) {
        if ((name + suffix).getBytes(StandardCharsets.UTF_8).length <= NAME_MAX) return name + suffix;
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
            StringBuilder hex = new StringBuilder();
            for (int i = 0; i < 16; i++) hex.append(String.format("%02x", digest[i]));
            return name.substring(0, NAME_MAX - suffix.length() - 33) + "~" + hex + suffix;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    public boolean held() {
        return fd >= 0;
    }

    public Path path() {
        return path;
    }

    /** Take the lock, waiting at most {@code timeoutMillis} (null: for ever; 0: one try). */
    public FileLock acquire(Long timeoutMillis) {
        if (fd >= 0) return this;
        int opened = open();
        long deadline = timeoutMillis == null ? Long.MAX_VALUE : System.nanoTime() + timeoutMillis * 1_000_000L;
        try {
            while (true) {
                try {
                    Holder.LIBC.flock(opened, LOCK_EX | LOCK_NB);
                    break;
                } catch (LastErrorException e) {
                    if (e.getErrorCode() != EAGAIN) {
                        // ENOLCK/ENOTSUP/EINVAL: no working locks here; refusing beats writing unlocked
                        throw new StorageException(what + ": cannot lock " + path + " (errno " + e.getErrorCode()
                                + "); seglog needs a filesystem with flock locks", e);
                    }
                    if (timeoutMillis != null && System.nanoTime() >= deadline) {
                        throw new LockedException(what + " is locked by another writer (lock file " + path
                                + "); gave up after " + timeoutMillis / 1000.0 + " s");
                    }
                    sleep();
                }
            }
        } catch (RuntimeException e) {
            Holder.LIBC.close(opened);
            throw e;
        }
        fd = opened;
        return this;
    }

    /**
     * Takes the lock of a lock file that does not exist yet, in a folder no other process uses yet (a staging run's,
     * named by a fresh UUID: DriverCommit.startRun): its folders made, the file created and opened in one call
     * ({@code O_CREAT|O_EXCL}), and locked. {@link #acquire}'s open tries the file as existing first and then opens
     * the file it created again: a failed open (and its exception) and two more calls on every micro-batch (issue 41).
     * The file ends as acquire's would: 0600, 0660 in a shared folder ({@link GroupShared}). A folder that another
     * run's end removed meanwhile is a StorageException caused by a NoSuchFileException, as {@link #acquire}'s.
     */
    public FileLock acquireNew() {
        if (fd >= 0) throw new IllegalStateException(what + ": held already");
        boolean shared;
        try {
            // a lock file's folder is named by no commit: no fsync (GroupShared)
            shared = GroupShared.createScratchDirectories(path.getParent());
        } catch (IOException e) {
            throw new StorageException(what + ": cannot create lock file " + path + ": " + e, e);
        }
        int opened;
        try {
            opened = Holder.LIBC.open(path.toString(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_CREAT | O_EXCL,
                    GroupShared.LOCK_FILE_MODE);
        } catch (LastErrorException e) {
            if (e.getErrorCode() == ENOENT) {
                throw new StorageException(what + ": cannot create lock file " + path + ": its folder is gone",
                        new java.nio.file.NoSuchFileException(path.getParent().toString()));
            }
            throw refused(e);
        }
        try {
            if (shared) GroupShared.addGroupWrite(path);
            GroupShared.narrowLockFile(path, Holder.LIBC.geteuid());
            // a new file in a folder of this run's own: no other holder (LOCK_NB cannot find it taken)
            Holder.LIBC.flock(opened, LOCK_EX | LOCK_NB);
        } catch (IOException | RuntimeException e) {
            Holder.LIBC.close(opened);
            throw new StorageException(what + ": cannot lock new lock file " + path + ": " + e, e);
        }
        fd = opened;
        return this;
    }

    private static void sleep() {
        try {
            Thread.sleep(POLL_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockedException("interrupted while waiting for a lock");
        }
    }

    /** A descriptor to flock on, open for writing, the file created when missing (fsutil's open_lock_file,
     *  where the rule is explained): only a user who may write a lock file may hold its lock, since flock
     *  takes a read-only descriptor too. The file is 0600 (0660 in a shared folder), and one of an older
     *  seglog (0644) is narrowed to that by its owner; a user who may not write it gets a StorageException. */
    private int open() {
        int opened;
        try {
            // the usual case first: the file is there (a lock file stays), so no folder check and no create that fails
            opened = openExisting();
        } catch (LastErrorException e) {
            if (e.getErrorCode() != ENOENT) throw refused(e);
            opened = -1;
        }
        if (opened < 0) {
            create();
            try {
                opened = openExisting();
            } catch (LastErrorException e) {
                throw refused(e);
            }
        }
        try {
            GroupShared.narrowLockFile(path, Holder.LIBC.geteuid());
        } catch (IOException | RuntimeException e) {
            Holder.LIBC.close(opened);
            throw new StorageException(what + ": cannot set the mode of lock file " + path + ": " + e, e);
        }
        return opened;
    }

    private int openExisting() throws LastErrorException {
        return Holder.LIBC.open(path.toString(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    }

    private void create() {
        try {
            // a lock file's folder (_seglog/locks, a staging run's) is named by no commit: no fsync (GroupShared)
            boolean shared = GroupShared.createScratchDirectories(path.getParent());
            try {
                GroupShared.createLockFile(path, shared);
            } catch (FileAlreadyExistsException e) {
                // another holder made it
            }
        } catch (IOException e) {
            throw new StorageException(what + ": cannot create lock file " + path + ": " + e, e);
        }
    }

    /** Why the lock file could not be opened for writing, as the error this class throws. */
    private StorageException refused(LastErrorException e) {
        if (e.getErrorCode() == ELOOP) RootFiles.refuseSymlink(path);
        if (e.getErrorCode() == EACCES) {
            return new StorageException(what + ": cannot open lock file " + path + " for writing (permission "
                    + "denied); only a user who may write a lock file may take its lock (docs/spec.md §4)", e);
        }
        return new StorageException(what + ": cannot open " + path + ": " + e, e);
    }

    public void release() {
        if (fd < 0) return;
        int held = fd;
        fd = -1;
        try {
            Holder.LIBC.flock(held, LOCK_UN);
        } finally {
            Holder.LIBC.close(held);
        }
    }

    @Override
    public void close() {
        release();
    }
}
