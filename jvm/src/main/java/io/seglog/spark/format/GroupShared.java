package io.seglog.spark.format;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.EnumSet;
import java.util.List;

/**
 * The permissions of what the write path creates, for a root shared by two users (Spark's uid 185 and
 * the sidecar's uid 10001 in one group: README, "Running on a cluster"). The rule is the Python core's,
 * where it is explained (indexer/fsutil.py): a folder or file created in a group-writable folder is
 * made group-writable too (folders also group-searchable, keeping the setgid bit the kernel copied
 * from their parent), explicitly with chmod after creation, because the process umask (022 in Spark's
 * image) strips the group's write bit. Staged segments are renamed into partition folders by the
 * driver and keep their mode, so they must be group-writable from the start: the sidecar later seals,
 * rolls onto and deletes them as another user of the group.
 *
 * <p>chmod goes through the {@code unix:mode} attribute, not {@code PosixFilePermission}s: those have
 * no setgid bit, and setting them would clear it on a folder, so the files created in it would get
 * the creator's own group instead of the root's.
 */
public final class GroupShared {
    private static final int GROUP_RW = 0060;
    private static final int GROUP_RWX = 0070;

    private GroupShared() {}

    /** True when {@code folder} is group-writable (so what is created in it must be too). */
    public static boolean isShared(Path folder) throws IOException {
        PosixFileAttributeView view = Files.getFileAttributeView(folder, PosixFileAttributeView.class);
        return view != null && view.readAttributes().permissions().contains(PosixFilePermission.GROUP_WRITE);
    }

    /**
     * {@link Files#createDirectories}, each folder it creates under the rule; returns whether
     * {@code dir} itself is group-writable (the rule for the files then created in it).
     *
     * <p>Invariant: each folder made here is durable in its parent (the parent fsynced after its mkdir) before this
     * returns, so before anything is put in it. A folder's own fsync covers only its entries, not its name in its
     * parent: without this, a crash after a commit could lose the partition folder or commit-log folder it names
     * (indexer/fsutil.py's make_dirs keeps the same rule). It costs an fsync only when a folder is made: once per
     * topic and partition, never per write. Folders no commit names need none ({@link #createScratchDirectories}).
     */
    public static boolean createDirectories(Path dir) throws IOException {
        return createDirectories(dir, true);
    }

    /**
     * {@link #createDirectories} without its durability: for folders no commit ever names, whose loss in a crash
     * loses nothing, made again on a hot path (a staging run's folders, remade by every micro-batch since a run's
     * end removes its writer's empty folders; a lock file's folder). An fsync per folder there cost each small write
     * 2 to 3 fsyncs (issue 41).
     */
    public static boolean createScratchDirectories(Path dir) throws IOException {
        return createDirectories(dir, false);
    }

    private static boolean createDirectories(Path dir, boolean durable) throws IOException {
        Deque<Path> missing = new ArrayDeque<>();
        for (Path p = dir.toAbsolutePath(); p != null && !Files.isDirectory(p); p = p.getParent()) {
            missing.push(p);
        }
        while (!missing.isEmpty()) {
            Path d = missing.pop();
            try {
                Files.createDirectory(d);
            } catch (FileAlreadyExistsException e) {
                if (!Files.isDirectory(d)) {
                    throw e;
                }
                // a concurrent creator made it and applies the rule; it may not have fsynced the parent yet
                if (durable) FileSync.directory(d.getParent());
                continue;
            }
            if (isShared(d.getParent())) {
                addMode(d, GROUP_RWX);
            }
            if (durable) FileSync.directory(d.getParent());
        }
        return isShared(dir);
    }

    /**
     * New folders of one existing {@code parent} (a first write's partition folders), under {@link #createDirectories}'s
     * invariant with one fsync of the parent for all of them, after the last mkdir and before this returns, rather than
     * one each (issue 41: a first write into 32 partitions fsynced the root 32 times, each at the head of a
     * partition's publish). An existing folder is kept (a concurrent creator's: the fsync covers its entry too).
     */
    public static void createSiblings(Path parent, List<Path> dirs) throws IOException {
        createSiblings(parent, dirs, d -> { });
    }

    /**
     * {@link #createSiblings(Path, List)}, telling {@code made} of each folder its mkdir made, as it is made (not of
     * one found there: another creator's), so a caller that fails later removes only its own.
     */
    public static void createSiblings(Path parent, List<Path> dirs, java.util.function.Consumer<Path> made)
            throws IOException {
        if (dirs.isEmpty()) return;
        for (Path d : dirs) {
            if (!parent.equals(d.getParent())) throw new IllegalArgumentException(d + " is not a folder of " + parent);
            if (makeDirectory(d)) made.accept(d);
        }
        FileSync.directory(parent);
    }

    /**
     * One folder whose parent must exist ({@link Files#createDirectory}: NoSuchFileException when it does not; never
     * makes the parent), under the rule; an existing folder is kept. Returns whether {@code dir} is group-writable.
     */
    public static boolean createDirectory(Path dir) throws IOException {
        makeDirectory(dir);
        return isShared(dir);
    }

    /** {@link #createDirectory}'s mkdir; returns whether it made {@code dir} (false: a folder was there). */
    private static boolean makeDirectory(Path dir) throws IOException {
        try {
            Files.createDirectory(dir);
        } catch (FileAlreadyExistsException e) {
            if (!Files.isDirectory(dir)) throw e;
            return false;
        }
        if (isShared(dir.getParent())) addMode(dir, GROUP_RWX);
        return true;
    }

    /** A new file ({@code CREATE_NEW}) open for writing; group read and write when {@code shared}. */
    public static FileChannel createNew(Path path, boolean shared) throws IOException {
        FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        if (shared) {
            try {
                addMode(path, GROUP_RW);
            } catch (IOException | RuntimeException e) {
                ch.close();
                throw e;
            }
        }
        return ch;
    }

    /** A lock file's mode in a private folder; 0660 in a shared one (indexer/fsutil.py's LOCK_FILE_MODE). */
    static final int LOCK_FILE_MODE = 0600;

    /** A new, empty lock file ({@code CREATE_NEW}) of mode 0600, 0660 when {@code shared} (FileLock). */
    static void createLockFile(Path path, boolean shared) throws IOException {
        Files.createFile(path, PosixFilePermissions.asFileAttribute(
                EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)));
        if (shared) {
            addMode(path, GROUP_RW);
        }
    }

    /** A new lock file's group bits in a shared folder (createLockFile's rule, for a file created otherwise). */
    static void addGroupWrite(Path path) throws IOException {
        addMode(path, GROUP_RW);
    }

    /** A lock file this process owns set to 0600 (0660 in a shared folder) when it is not: an older
     *  seglog made them 0644, and a user who may read one may hold its flock. Another user's is left. */
    static void narrowLockFile(Path path, int euid) throws IOException {
        int want = LOCK_FILE_MODE | (isShared(path.getParent()) ? GROUP_RW : 0);
        int mode = (Integer) Files.getAttribute(path, "unix:mode") & 07777;
        if (mode != want && (Integer) Files.getAttribute(path, "unix:uid") == euid) {
            Files.setAttribute(path, "unix:mode", want);
        }
    }

    private static void addMode(Path p, int bits) throws IOException {
        int mode = (Integer) Files.getAttribute(p, "unix:mode") & 07777;
        if ((mode & bits) != bits) {
            Files.setAttribute(p, "unix:mode", mode | bits);
        }
    }
}
