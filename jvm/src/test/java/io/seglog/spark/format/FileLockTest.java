package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** flock through libc: two holders in one JVM exclude each other (a lock belongs to the open file, as the
 *  Python core's FileLock); a release lets the next one in; long names are shortened as the core does.
 *  Exclusion across processes, Python against JVM, is tests/sink/test_jvm_formats.py's. */
class FileLockTest {
    @TempDir
    Path root;

    @Test
    void twoHoldersInOneJvmExcludeEachOther() {
        try (FileLock a = FileLock.partition(root, "events", 0).acquire(0L)) {
            assertTrue(a.held());
            FileLock b = FileLock.partition(root, "events", 0);
            LockedException e = assertThrows(LockedException.class, () -> b.acquire(50L));
            assertTrue(e.getMessage().contains("partition events-0 is locked by another writer"), e.getMessage());
            assertFalse(b.held());
            try (FileLock other = FileLock.partition(root, "events", 1).acquire(0L)) {
                assertTrue(other.held());   // another partition: its own lock
            }
        }
        try (FileLock again = FileLock.partition(root, "events", 0).acquire(0L)) {
            assertTrue(again.held());       // released: free
        }
    }

    @Test
    void aSymlinkedLockFileIsRefusedAndItsTargetNeverOpened() throws Exception {
        Path lock = FileLock.partition(root, "events", 0).path();
        java.nio.file.Files.createDirectories(lock.getParent());
        Path outside = java.nio.file.Files.createFile(root.resolve("elsewhere"));   // any other file
        java.nio.file.Files.createSymbolicLink(lock, outside);
        SymlinkInRootException e = assertThrows(SymlinkInRootException.class,
            () -> FileLock.partition(root, "events", 0).acquire(0L));
        assertTrue(e.getMessage().contains("events-0.lock: a symbolic link"), e.getMessage());
    }

    @Test
    void lockFilesLiveUnderTheRootsLockFolder() {
        assertEquals(root.resolve("_seglog/locks/events-3.lock"), FileLock.partition(root, "events", 3).path());
        assertEquals(root.resolve("_seglog/locks/events.writer.lock"), FileLock.topicWriter(root, "events").path());
        String name = FileLock.shortFileName("t".repeat(249) + "-12", ".lock");
        assertEquals(255, name.length());
        assertTrue(name.endsWith(".lock") && name.contains("~"), name);
    }
}
