package io.seglog.spark.format;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The folder of streaming queries' consumer positions, {@code <root>/_seglog/consumers/<query id>.json} (docs/spec.md
 * §9.1; read.ConsumerPositions writes them, indexer/consumer_positions.py reads them), and what a topic's deletion
 * does to them: as Kafka's group coordinator drops a deleted partition's committed offsets, each file loses the
 * topic's entry, and a file left with none is removed, so a topic created again under the name shows no lag or
 * position of the old one.
 *
 * <p>Invariant: a position is written only for a topic that exists, and never for one deleted. A query's write
 * ({@code read.ConsumerPositions}) checks its topics and writes under {@link #lock}; a delete holds that lock from
 * taking the topic out of the files until its metadata and folders are gone (TopicAdmin.delete), so a write either
 * comes before (and is taken out) or finds the topic gone (and writes nothing of it). As Kafka, whose coordinator
 * drops a deleted partition's offsets and answers an OffsetCommit for it UNKNOWN_TOPIC_OR_PARTITION.
 *
 * <p>The files are untrusted: one not named {@code <uuid>.json}, a link, over {@link #MAX_FILE_BYTES}, or not the
 * shape written is left as it is (readers skip it by the same checks).
 */
public final class ConsumerPositionFiles {
    /** The largest file either side writes or reads (indexer/consumer_positions.py's MAX_FILE_BYTES). */
    public static final int MAX_FILE_BYTES = 1 << 20;
    /** Files looked at per deletion (indexer/consumer_positions.py's MAX_FILES): a flooded folder costs bounded time. */
    static final int MAX_FILES = 10_000;
    private static final Pattern NAME =
        Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\\.json");
    private static final ObjectMapper JSON = new ObjectMapper();

    private ConsumerPositionFiles() {}

    /** {@code <root>/_seglog/consumers}, no link at {@code _seglog} or {@code consumers}. */
    public static Path dir(Path root) {
        return RootFiles.metaPath(root, "consumers");
    }

    /** The lock of the files' writers ({@code _seglog/locks/consumers.lock}): a query's write and a topic's delete. */
    public static FileLock lock(Path root) {
        return new FileLock(FileLock.lockPath(root, "consumers"), "consumer positions");
    }

    /** Drops {@code topic} from every query's positions (a file with no other topic is removed). */
    static void forgetTopic(Path root, String topic) throws IOException {
        Path dir = dir(root);
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) return;
        int seen = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path file : files) {
                if (++seen > MAX_FILES) break;
                if (NAME.matcher(file.getFileName().toString()).matches()) forget(file, topic);
            }
        }
    }

    private static void forget(Path file, String topic) throws IOException {
        JsonNode doc;
        try (FileChannel ch = RootFiles.openReadable(file)) {
            if (ch.size() > MAX_FILE_BYTES) return;
            try (InputStream in = Channels.newInputStream(ch)) {
                doc = JSON.readTree(in);
            }
        } catch (NoSuchFileException | SymlinkInRootException | com.fasterxml.jackson.core.JsonProcessingException e) {
            return;   // gone, a link, or not JSON: readers skip it as well
        }
        JsonNode offsets = doc == null ? null : doc.get("offsets");
        if (!(offsets instanceof ObjectNode) || !offsets.has(topic)) return;
        ((ObjectNode) offsets).remove(topic);
        if (offsets.size() == 0) {
            Files.deleteIfExists(file);
            FileSync.directory(file.getParent());
        } else {
            AtomicFile.write(file, JSON.writeValueAsBytes(doc));
        }
    }
}
