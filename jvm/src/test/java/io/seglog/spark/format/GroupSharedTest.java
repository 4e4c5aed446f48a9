package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shared-root rule of the write path (indexer/fsutil.py has it for the Python core): folders and
 *  files created in a group-writable folder are group-writable whatever the umask, folders keep their
 *  setgid bit; in a private folder nothing changes. */
class GroupSharedTest {
    @TempDir
    Path tmp;

    private static int mode(Path p) throws IOException {
        return (Integer) Files.getAttribute(p, "unix:mode") & 07777;
    }

    @Test
    void sharedFolderMakesFoldersAndFilesGroupWritable() throws IOException {
        Path root = tmp.resolve("root");
        Files.createDirectory(root);
        Files.setAttribute(root, "unix:mode", 02775);
        Path dir = root.resolve("_seglog/staging/w/t0-1");
        assertTrue(GroupShared.createDirectories(dir));
        for (Path p = dir; !p.equals(root); p = p.getParent()) {
            assertEquals(0070, mode(p) & 0070, p + " " + Integer.toOctalString(mode(p)));
            if ((mode(root) & 02000) != 0) {            // setgid kept (the kernel copied it; chmod must not clear it)
                assertEquals(02000, mode(p) & 02000, p + " " + Integer.toOctalString(mode(p)));
            }
        }
        Path log = dir.resolve("s0-0.log");
        try (FileChannel ch = GroupShared.createNew(log, true)) {
            assertTrue(ch.isOpen());
        }
        assertEquals(0060, mode(log) & 0060, Integer.toOctalString(mode(log)));
    }

    @Test
    void privateFolderStaysAsTheUmaskMakesIt() throws IOException {
        Path root = tmp.resolve("private");
        Files.createDirectory(root);
        Files.setAttribute(root, "unix:mode", 0755);
        Path dir = root.resolve("a/b");
        assertFalse(GroupShared.createDirectories(dir));
        Path f = dir.resolve("x.log");
        GroupShared.createNew(f, GroupShared.isShared(dir)).close();
        assertEquals(0, mode(dir) & 0020);
        assertEquals(0, mode(f) & 0020);
        assertTrue(GroupShared.createDirectories(dir) == false);   // existing folders: no error
    }

    @Test
    void siblingsAreMadeUnderTheRuleAndAnExistingOneIsKept() throws IOException {
        Path root = tmp.resolve("siblings");
        Files.createDirectory(root);
        Files.setAttribute(root, "unix:mode", 02775);
        Files.createDirectory(root.resolve("t-1"));
        Files.writeString(root.resolve("t-1").resolve("kept"), "x");
        List<Path> dirs = List.of(root.resolve("t-0"), root.resolve("t-1"), root.resolve("t-2"));
        List<Path> made = new java.util.ArrayList<>();
        GroupShared.createSiblings(root, dirs, made::add);
        for (Path d : dirs) assertTrue(Files.isDirectory(d), d.toString());
        // only the folders its mkdir made are reported: a failed write's restore removes those alone (DriverCommit)
        assertEquals(List.of(root.resolve("t-0"), root.resolve("t-2")), made);
        assertEquals(0070, mode(root.resolve("t-2")) & 0070);
        assertTrue(Files.exists(root.resolve("t-1").resolve("kept")));
        assertThrows(IllegalArgumentException.class, () -> GroupShared.createSiblings(root, List.of(root.resolve("a/b"))));
        Files.writeString(root.resolve("t-3"), "a file");
        assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> GroupShared.createSiblings(root, List.of(root.resolve("t-3"))));
    }
}
