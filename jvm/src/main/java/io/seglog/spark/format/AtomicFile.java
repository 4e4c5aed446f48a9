package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** indexer/fsutil.py's atomic_write: a temporary name, force, rename over, fsync of the folder: the old
 *  file or the new one after a crash, never a torn one. */
public final class AtomicFile {
    private AtomicFile() {}

    public static void write(Path path, byte[] data) throws IOException {
        Path tmp = path.resolveSibling(".tmp-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
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
        FileSync.directory(path.getParent());
    }
}
