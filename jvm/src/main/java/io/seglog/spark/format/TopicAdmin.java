package io.seglog.spark.format;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Kafka's admin operations on a topic that exists (the SQL catalog's ALTER and DROP, docs/spec.md §8.1):
 * IncrementalAlterConfigs, CreatePartitions and DeleteTopics. Each runs under the topic's
 * writer lock ({@link FileLock#topicWriter}), so it never interleaves with a write's commit, and is refused
 * before anything changes when the request is bad (a key or value named by TopicConfigRules, a shrink).
 *
 * <p>Invariant: a topic's metadata file changes only here, and only by a whole new file renamed over it
 * (a reader sees the old or the new one, never a mix); the sidecar reads it on each pass, so a new
 * retention applies on its next pass.
 */
public final class TopicAdmin {
    /** How long an admin operation waits for a write's commit (or the sidecar's partition pass) to finish. */
    public static final long LOCK_TIMEOUT_MS = 30_000L;
    static final String DELETED = ".deleted";

    private TopicAdmin() {}

    /**
     * Kafka's IncrementalAlterConfigs (SET and DELETE) and CreatePartitions in one request: {@code set} keys take
     * the given values, {@code unset} keys return to their defaults, {@code partitions} (null: unchanged) may only
     * grow. The whole result is validated (a combination rule, such as local.retention.ms above retention.ms, is
     * refused as at creation). Returns the new metadata.
     */
    public static TopicMetadata alter(Path root, String topic, Map<String, String> set, Collection<String> unset,
                                      Integer partitions) {
        TopicCatalog.checkTopic(topic);
        altered(root, topic, set, unset, partitions);   // a bad request is refused before the lock file is touched
        try (FileLock lock = FileLock.topicWriter(root, topic).acquire(LOCK_TIMEOUT_MS)) {
            TopicMetadata meta = TopicCatalog.load(root, topic).orElseThrow(() ->
                new InvalidTopicException("topic '" + topic + "' is not recorded under '" + root + "'"));
            TopicMetadata next = altered(root, topic, set, unset, partitions);
            if (next.toJson().equals(meta.toJson())) return meta;
            TopicCatalog.replace(root, next);
            return next;
        }
    }

    /** The metadata the request makes of the recorded one, every rule checked; nothing written. */
    private static TopicMetadata altered(Path root, String topic, Map<String, String> set, Collection<String> unset,
                                         Integer partitions) {
        TopicMetadata meta = TopicCatalog.load(root, topic).orElseThrow(() ->
            new InvalidTopicException("topic '" + topic + "' is not recorded under '" + root + "'"));
        int count = meta.partitions();
        if (partitions != null) {
            TopicCatalog.checkPartitions(topic, partitions);
            if (partitions < count) {
                throw new InvalidTopicException("topic '" + topic + "': partitions = " + partitions + " is below its "
                    + count + " partitions: partitions can be added, never removed (as Kafka's CreatePartitions); "
                    + "nothing was changed");
            }
            count = partitions;
        }
        Map<String, Object> config = new TreeMap<>(meta.config());
        for (String key : unset) {
            if (!TopicConfigRules.isKey(key)) TopicConfigRules.check(key, null, "topic '" + topic + "'");  // names it
            for (String target : TopicConfigRules.ALIASES.getOrDefault(key, List.of(key))) config.remove(target);
        }
        // each key checked alone (named), aliases first so that an explicit new name wins (as in Kafka), then
        // the topic's whole configuration against the combination rules (as at creation)
        List<String> keys = new ArrayList<>(set.keySet());
        keys.sort((a, b) -> Boolean.compare(!TopicConfigRules.ALIASES.containsKey(a), !TopicConfigRules.ALIASES.containsKey(b)));
        for (String key : keys) {
            for (String target : TopicConfigRules.ALIASES.getOrDefault(key, List.of(key))) {
                config.put(target, TopicConfigRules.check(target, set.get(key), "topic '" + topic + "'"));
            }
        }
        TopicConfigRules.validate(config, null, "topic '" + topic + "'");
        return new TopicMetadata(topic, count, config, meta.createdMs(), meta.topicId());   // the id is kept
    }

    /**
     * Kafka's DeleteTopics: everything of the topic under the root goes, so a topic created again under the name
     * starts clean. In this order, under the topic's writer lock and every partition's maintenance and partition
     * locks (no write commits, no sidecar pass, clean or merge is in it, and none can write a checkpoint entry back):
     * <ol>
     * <li>the state kept outside its folders, while the topic still exists (its metadata and folders are still
     *   there): its entries in the cleaner checkpoint (which would claim the new topic's offsets as cleaned) and the
     *   log start checkpoint, its consumer positions ({@link ConsumerPositionFiles}), its writers' staging runs that
     *   are over ({@link StagingRuns});</li>
     * <li>its metadata, commit log and partition folders, renamed into {@code <root>/_seglog/deleted/<topic>-<ms>
     *   .deleted/} (the metadata first, the folders last);</li>
     * <li>that folder unlinked (a leftover of a killed delete is unlinked by the next).</li>
     * </ol>
     * The consumer positions' lock ({@link ConsumerPositionFiles#lock}) is held from step 1's positions to the end of
     * step 2: a query that writes its position meanwhile waits, then finds the topic gone and writes nothing of it.
     * Invariant: a crash at any step leaves the topic existing (its folders go last) with its state outside them
     * gone or going, so a second DROP TABLE ... PURGE finishes it and CREATE TABLE refuses the name until then; a
     * killed delete never leaves state of the old topic behind a name that is free. The lock files are kept: a
     * waiter may hold one open, and a lock file unlinked under it would let two holders in; they hold no state.
     * A tiered topic (remote segments) is refused: its objects would be left behind.
     */
    public static void delete(Path root, String topic) {
        TopicCatalog.checkTopic(topic);
        Path trash = root.resolve("_seglog").resolve("deleted");
        List<FileLock> locks = new ArrayList<>();
        try {
            locks.add(FileLock.topicWriter(root, topic).acquire(LOCK_TIMEOUT_MS));
            List<Integer> parts = TopicLayout.partitions(root, topic);
            // the maintenance locks before the partitions' (indexer/locks.py's order: none waits the other way)
            for (int p : parts) locks.add(FileLock.maintenance(root, topic, p).acquire(LOCK_TIMEOUT_MS));
            for (int p : parts) locks.add(FileLock.partition(root, topic, p).acquire(LOCK_TIMEOUT_MS));
            for (int p : parts) {
                if (Files.exists(RemoteSegmentLog.path(root, topic, p), LinkOption.NOFOLLOW_LINKS)) {
                    throw new InvalidTopicException("topic '" + topic + "': partition " + p + " has tiered segments ("
                        + RemoteSegmentLog.path(root, topic, p) + "); deleting a tiered topic is not supported (its remote "
                        + "objects would be left behind); nothing was deleted");
                }
            }
            forgetOffsets(root, topic, LogStartCheckpoint.FILE, "log start offset checkpoint");
            forgetOffsets(root, topic, OffsetGaps.CLEANER_CHECKPOINT, "cleaner offset checkpoint");
            FileLock positions = ConsumerPositionFiles.lock(root).acquire(LOCK_TIMEOUT_MS);
            locks.add(positions);
            ConsumerPositionFiles.forgetTopic(root, topic);
            StagingRuns.forgetTopic(root, topic);
            purgeLeftovers(trash);
            Path into = trash.resolve(FileLock.shortFileName(topic + "-" + System.currentTimeMillis(), DELETED));
            Files.createDirectories(into);
            Path meta = TopicCatalog.topicFile(root, topic);
            if (Files.exists(meta, LinkOption.NOFOLLOW_LINKS)) move(meta, into.resolve("topic.json"));
            Path commits = CommitLogReader.dir(root, topic);
            if (Files.exists(commits, LinkOption.NOFOLLOW_LINKS)) move(commits, into.resolve("commits"));
            for (int p : parts) {
                Path dir = TopicLayout.partitionDir(root, topic, p);
                if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) move(dir, into.resolve(dir.getFileName()));
            }
            positions.release();     // the topic is gone: a position written from now on leaves it out
            deleteTree(into);
        } catch (IOException e) {
            throw new StorageException("deleting topic '" + topic + "' under '" + root + "': " + e, e);
        } finally {
            for (int i = locks.size() - 1; i >= 0; i--) locks.get(i).release();
        }
    }

    private static void move(Path from, Path to) throws IOException {
        Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        FileSync.directory(from.getParent());
    }

    /** Removes the topic's entries from a root-level offsets file in Kafka's text format ({@code file}), under the
     *  lock its writers take ({@code _seglog/locks/<file>.lock}). A malformed file reads as empty and is left as it
     *  is (readers take it as empty too; the core's verify reports it). */
    private static void forgetOffsets(Path root, String topic, String file, String what) throws IOException {
        try (FileLock lock = new FileLock(FileLock.lockPath(root, file), what).acquire(LOCK_TIMEOUT_MS)) {
            Map<String, Long> entries = LogStartCheckpoint.readFile(root.resolve(file));
            boolean changed = entries.keySet().removeIf(k -> {
                int dash = k.lastIndexOf('-');
                return dash > 0 && k.substring(0, dash).equals(topic);
            });
            if (changed) LogStartCheckpoint.writeFile(root.resolve(file), entries);
        }
    }

    /** What a killed delete left in the trash: unlinked now. */
    private static void purgeLeftovers(Path trash) throws IOException {
        if (!Files.isDirectory(trash, LinkOption.NOFOLLOW_LINKS)) return;
        try (DirectoryStream<Path> left = Files.newDirectoryStream(trash)) {
            for (Path p : left) if (p.getFileName().toString().endsWith(DELETED)) deleteTree(p);
        }
    }

    /** Unlinks a tree without following a link (a link planted in it is removed, never its target). */
    static void deleteTree(Path dir) throws IOException {
        deleteTree(dir, true);
    }

    /** {@link #deleteTree(Path)}; {@code durable}: the parent folder fsynced after (false: a removal whose undoing by a
     *  crash loses nothing, such as a staging run's, StagingRuns). */
    static void deleteTree(Path dir, boolean durable) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) return;
        Files.walkFileTree(dir, new SimpleFileVisitor<Path>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null) throw e;
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
        if (durable) FileSync.directory(dir.getParent());
    }
}
