package io.seglog.spark.format;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * The one way the connector opens a segment or index file inside a root for writing, the Python core's
 * {@code fsutil.open_in_root}. Two rules:
 * <ul>
 * <li>never through a symbolic link: a link is a {@link SymlinkInRootException} naming it (it could lead to any
 *     file outside the root), and nothing is written or truncated through it;</li>
 * <li>never into a file that has other hard links ({@code seglog import --link} links a broker's files): it is
 *     made a private copy first (same bytes and mode, renamed over it), so an append, a truncation or a seal never
 *     changes the other name's bytes.</li>
 * </ul>
 */
public final class RootFiles {
    private RootFiles() {}

    public static FileChannel openWritable(Path file, OpenOption... options) throws IOException {
        refuseSymlink(file);
        if (linkCount(file) > 1) breakHardLink(file);
        Set<OpenOption> opts = new HashSet<>(Arrays.asList(options));
        opts.add(LinkOption.NOFOLLOW_LINKS);
        return FileChannel.open(file, opts);
    }

    /** A segment or index file of a root opened for reading, never through a symbolic link (the reads' side of the
     *  rule above: a link could show another root's records as this partition's). */
    public static FileChannel openReadable(Path file) throws IOException {
        refuseSymlink(file);
        return FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
    }

    /**
     * {@code <root>/_seglog/<parts...>}, the one way a path under a root's metadata folder is made (Python's
     * {@code fsutil.meta_path}): no part below the root may be a symbolic link, since commits, topic files, locks
     * and staging written through one would land outside the root. Parts not there yet pass: their creators never
     * follow a link.
     */
    public static Path metaPath(Path root, String... parts) {
        Path path = root.resolve("_seglog");
        refuseSymlink(path);
        for (String part : parts) {
            path = path.resolve(part);
            refuseSymlink(path);
        }
        return path;
    }

    /** {@link SymlinkInRootException} when {@code path} (a partition folder, a segment file) is a symbolic link. */
    public static void refuseSymlink(Path path) {
        if (Files.isSymbolicLink(path)) {
            throw new SymlinkInRootException(path + ": a symbolic link inside the log root; seglog never follows one "
                + "(it could lead outside the root, to another root's segments): replace it with the file or folder itself");
        }
    }

    private static int linkCount(Path file) throws IOException {
        try {
            Object n = Files.getAttribute(file, "unix:nlink", LinkOption.NOFOLLOW_LINKS);
            return n instanceof Integer ? (Integer) n : 1;
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            return 1;                            // no unix view (not Linux): no hard links to know of
        }
    }

    /** The caller holds the partition's lock: no writer races the copy; a reader of the old inode reads the same bytes. */
    static void breakHardLink(Path file) throws IOException {
        Path tmp = AtomicFile.tempSibling(file);
        try {
            Files.copy(file, tmp, StandardCopyOption.COPY_ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
            FileSync.file(tmp);
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        FileSync.directory(file.getParent());
    }
}
