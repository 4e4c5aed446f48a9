package io.seglog.spark.read;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.function.Supplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

import io.seglog.spark.format.AtomicFile;

/**
 * A stream's first start offsets, kept under its checkpoint so a restart before the first batch commits
 * starts at the same place (Spark's Kafka source keeps them in an HDFSMetadataLog).
 *
 * Invariant: the file is published once and never replaced; the first writer wins. Two attempts of a
 * query may resolve different offsets (startingOffsets=latest, with a commit between them): each writes
 * its own temporary file, then publishes it without overwriting (a hard link on a local file system, a
 * rename with {@code Options.Rename.NONE} elsewhere, atomic on HDFS); the one that finds the name taken
 * reads and returns the winner's offsets.
 */
final class InitialOffsetsFile {
    private InitialOffsetsFile() {}

    static SeglogSourceOffset getOrCreate(Path file, Configuration conf, Supplier<SeglogSourceOffset> resolve) {
        try {
            FileSystem fs = file.getFileSystem(conf);
            if (fs.exists(file)) return read(fs, file);
            SeglogSourceOffset initial = resolve.get();
            fs.mkdirs(file.getParent());
            Path tmp = new Path(file.getParent(), "." + file.getName() + "." + UUID.randomUUID() + ".tmp");
            byte[] bytes = initial.json().getBytes(StandardCharsets.UTF_8);
            boolean won = fs instanceof LocalFileSystem || fs instanceof RawLocalFileSystem
                ? publishLocal(new java.io.File(tmp.toUri().getPath()).toPath(), new java.io.File(file.toUri().getPath()).toPath(), bytes)
                : publish(fs, conf, tmp, file, bytes);
            return won ? initial : read(fs, file);
        } catch (IOException e) {
            throw new IllegalStateException("seglog source: cannot keep the initial offsets under " + file.getParent() + ": " + e, e);
        }
    }

    private static SeglogSourceOffset read(FileSystem fs, Path file) throws IOException {
        try (FSDataInputStream in = fs.open(file)) {
            return SeglogSourceOffset.fromJson(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    /** Written and forced under a name of its own, then linked: creating a link fails if the name exists. */
    private static boolean publishLocal(java.nio.file.Path tmp, java.nio.file.Path file, byte[] bytes) throws IOException {
        return AtomicFile.publishByLink(file, tmp, bytes, false, "seglog source: initial offsets " + file + ": cannot publish them");
    }

    private static boolean publish(FileSystem fs, Configuration conf, Path tmp, Path file, byte[] bytes) throws IOException {
        try (OutputStream out = fs.create(tmp, false)) {
            out.write(bytes);
        }
        try {
            FileContext.getFileContext(file.toUri(), conf).rename(tmp, file, Options.Rename.NONE);
            return true;
        } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
            fs.delete(tmp, false);
            return false;
        }
    }
}
