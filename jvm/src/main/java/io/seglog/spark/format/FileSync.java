package io.seglog.spark.format;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** fsync of a folder (a create, link or rename in it made durable), as indexer/fsutil.py's fsync_dir. */
public final class FileSync {
    private FileSync() {}

    public static void directory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    /** fsync of one file's data and metadata. */
    public static void file(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }
}
