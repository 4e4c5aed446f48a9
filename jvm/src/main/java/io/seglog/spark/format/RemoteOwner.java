package io.seglog.spark.format;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;

/**
 * The reader's side of a remote prefix's owner (docs/tiered-storage.md §2; the rules are Python's
 * indexer/remote/owner.py): {@code <uri>/_seglog-owner.json} names the root id ({@code <root>/_seglog/root-id})
 * of the one root that tiers there. A prefix owned by another root is a {@link RemotePrefixOwnedException}: its
 * objects are never read as this root's rows. An unowned prefix (a root tiered before owner objects existed) is
 * read as before. A prefix found this root's is not asked again by this JVM (ownership is never given up).
 */
final class RemoteOwner {
    static final String OWNER_KEY = "_seglog-owner.json";
    private static final int MAX = 1 << 16;         // an owner record's bytes read at most (Python's is ~150)
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> OWNED = ConcurrentHashMap.newKeySet();     // "uri|root id" found owned

    private RemoteOwner() {
    }

    /** The root's id, null when it has none (it never tiered under owner objects). */
    static String rootId(Path root) {
        Path file = RootFiles.metaPath(root, "root-id");
        try {
            return Files.readString(file, StandardCharsets.US_ASCII).strip();
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw new StorageException(file + ": the root's id cannot be read: " + e, e);
        }
    }

    /** Refuses a prefix another root owns (before any of its segments is read). */
    static void check(Path root, RemoteTier tier) {
        String rid = rootId(root);
        String key = tier.location.uri() + "|" + rid;
        if (OWNED.contains(key)) return;
        String ownerUri = tier.location.hadoopUri() + "/" + OWNER_KEY;
        FileSystem fs = tier.fileSystem();
        JsonNode owner;
        // One GET, no HEAD: opened as MAX bytes long (S3A asks for no length then), a shorter object reads to its end
        // and a missing one fails the read as not found. Every query of a prefix this JVM has not judged pays it.
        try (FSDataInputStream in = RemoteSegmentCache.openKnownLength(fs, new org.apache.hadoop.fs.Path(ownerUri), ownerUri,
                MAX, "sequential")) {
            owner = JSON.readTree(in.readNBytes(MAX));
        } catch (FileNotFoundException e) {
            return;                                     // unowned: read as before; the next tier pass claims it
        } catch (IOException e) {
            throw new StorageException("cannot read " + ownerUri + ": " + e, e);
        }
        if (owner == null || !owner.path("root_id").isTextual()) {
            throw new RemotePrefixOwnedException(ownerUri + ": not an owner record: the prefix cannot be judged "
                + root + "'s");
        }
        String ownerId = owner.get("root_id").asText();
        if (!ownerId.equals(rid)) {
            throw new RemotePrefixOwnedException("remote tier " + tier.location.uri() + " is owned by the root '"
                + owner.path("root").asText("?") + "' (root id " + ownerId + "), not by '" + root + "' (root id "
                + (rid == null ? "none: it never tiered" : rid) + "): its objects are not this root's segments; "
                + "give each root its own URI");
        }
        OWNED.add(key);
    }
}
