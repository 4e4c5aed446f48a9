package io.seglog.spark.read;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.seglog.spark.format.AtomicFile;
import io.seglog.spark.format.ConsumerPositionFiles;
import io.seglog.spark.format.FileLock;
import io.seglog.spark.format.GroupShared;
import io.seglog.spark.format.TopicLayout;
import io.seglog.spark.QuerySessions;

/**
 * A streaming query's consumer position, Kafka's {@code __consumer_offsets} idea (docs/spec.md §9.1):
 * {@code <root>/_seglog/consumers/<query id>.json}, one small file per query, rewritten whole (temporary name, rename)
 * each time the offsets Spark has committed for the query's seglog source move. The sidecar turns the files into lag
 * (indexer/consumer_positions.py reads them; tests/conformance/consumer_positions.json pins the format for both).
 *
 * <p>Best effort: nothing here ever fails the query; a fault is logged once per stream. Identity is known, never
 * guessed: the query id is the local property Spark sets on the query's stream thread ({@code sql.streaming.queryId},
 * the thread that calls {@code commit} and {@code metrics}); without it nothing is written. A second seglog source
 * of one query over the same root (another checkpoint location) finds the file holding the first's and writes
 * nothing: one file per query, never two sources' positions mixed.
 *
 * <p>A topic deleted under the query (DROP TABLE ... PURGE) is left out of the file, checked under the files' lock
 * (format.ConsumerPositionFiles's invariant): its position never comes back to be seen by a topic created again
 * under the name. As Kafka's coordinator refuses an OffsetCommit for a deleted partition (UNKNOWN_TOPIC_OR_PARTITION);
 * the query is not failed here: its reader reports the partitions gone as data loss when it plans its next batch
 * (failOnDataLoss), and the query is told here once per topic.
 */
final class ConsumerPositions {
    static final int FORMAT = 1;
    /** The largest file either side writes or reads (indexer/consumer_positions.py's MAX_FILE_BYTES). */
    static final int MAX_FILE_BYTES = 1 << 20;
    static final String QUERY_ID_PROPERTY = "sql.streaming.queryId";
    /** How long a write waits for the files' lock (a topic's delete holds it for a few renames). */
    private static final long LOCK_TIMEOUT_MS = 10_000L;
    private static final Pattern QUERY_ID = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Logger LOG = LoggerFactory.getLogger(ConsumerPositions.class);

    private final Path root;
    private final String checkpoint;
    private SeglogSourceOffset written;     // the offsets last written: an unchanged position is not rewritten
    private boolean told;                   // a fault is logged once per stream
    private final Set<String> toldGone = new HashSet<>();   // deleted topics, each told once per stream

    ConsumerPositions(String root, String checkpoint) {
        this.root = Paths.get(root);
        this.checkpoint = checkpoint;
    }

    /** The offsets Spark committed for this source (everything before them is processed), now. */
    synchronized void record(SeglogSourceOffset committed, long nowMs) {
        if (committed == null || committed.equals(written)) return;
        try {
            String queryId = queryId();
            if (queryId == null) {
                tell("the streaming query's id is not known on this thread (no " + QUERY_ID_PROPERTY
                    + " local property): its consumer position is not recorded");
                return;
            }
            try (FileLock lock = ConsumerPositionFiles.lock(root).acquire(LOCK_TIMEOUT_MS)) {
                Map<String, Map<Integer, Long>> live = new TreeMap<>();
                for (Map.Entry<String, TreeMap<Integer, Long>> t : committed.offsets.entrySet()) {
                    if (!TopicLayout.exists(root, t.getKey())) tellGone(queryId, t.getKey());
                    else if (recreated(committed, t.getKey())) tellRecreated(queryId, t.getKey());
                    else live.put(t.getKey(), t.getValue());
                }
                if (!live.isEmpty() && !write(queryId, live, nowMs)) return;
            }
            written = committed;
        } catch (Exception e) {     // Scala throws checked exceptions undeclared (SparkException): all are caught
            tell("recording the consumer position under " + root + " failed: " + e);
        }
    }

    /** Writes the file under the lock; false when it was refused (told). */
    private boolean write(String queryId, Map<String, Map<Integer, Long>> offsets, long nowMs) throws IOException {
        Path dir = ConsumerPositionFiles.dir(root);      // no link at _seglog or consumers
        GroupShared.createDirectories(dir);
        Path file = dir.resolve(queryId + ".json");
        String other = otherCheckpoint(file);
        if (other != null) {
            tell("query " + queryId + " has another seglog source over " + root + " (checkpoint " + other
                + "): the position of " + checkpoint + " is not recorded");
            return false;
        }
        byte[] data = render(queryId, QuerySessions.queryName(queryId), checkpoint, offsets, nowMs)
            .getBytes(StandardCharsets.UTF_8);
        if (data.length > MAX_FILE_BYTES) {
            tell("the consumer position of query " + queryId + " would take " + data.length + " bytes, over "
                + MAX_FILE_BYTES + ": not recorded");
            return false;
        }
        AtomicFile.write(file, data);
        return true;
    }

    /** Whether the offsets of {@code topic} were taken under another topic id than the topic's now (deleted and
     *  created again since): Kafka applies no committed offset of one topic id to another. */
    private boolean recreated(SeglogSourceOffset committed, String topic) {
        String id = committed.topicId(topic);
        if (id == null) return false;
        String now = io.seglog.spark.format.TopicCatalog.load(root, topic)
            .map(io.seglog.spark.format.TopicMetadata::topicId).orElse(null);
        return now != null && !now.equals(id);
    }

    private void tellRecreated(String queryId, String topic) {
        if (toldGone.add(topic)) {
            LOG.warn("seglog source: topic '{}' under {} was deleted and created again since query {} read it (another "
                + "topic id): its position in the old topic is not recorded for the new one", topic, root, queryId);
        }
    }

    private void tellGone(String queryId, String topic) {
        if (toldGone.add(topic)) {
            LOG.warn("seglog source: topic '{}' no longer exists under {} (deleted): query {}'s position in it is not "
                + "recorded; the query's next batch reports its partitions gone (failOnDataLoss)", topic, root, queryId);
        }
    }

    /** The file's text: the one shape tests/conformance/consumer_positions.json pins. */
    static String render(String queryId, String name, String checkpoint, Map<String, ? extends Map<Integer, Long>> offsets,
                         long committedMs) {
        ObjectNode doc = JSON.createObjectNode();
        doc.put("format", FORMAT);
        doc.put("query_id", queryId);
        if (name == null) doc.putNull("name"); else doc.put("name", name);
        doc.put("checkpoint", checkpoint);
        ObjectNode topics = doc.putObject("offsets");
        for (Map.Entry<String, ? extends Map<Integer, Long>> t : new TreeMap<>(offsets).entrySet()) {
            ObjectNode parts = topics.putObject(t.getKey());
            for (Map.Entry<Integer, Long> p : new TreeMap<>(t.getValue()).entrySet()) {
                parts.put(String.valueOf(p.getKey()), p.getValue());
            }
        }
        doc.put("committed_ms", committedMs);
        return doc.toString();
    }

    /** The query id Spark set on this (the stream's) thread, when it is one. */
    private static String queryId() {
        SparkSession session;
        try {
            session = SparkSession.active();
        } catch (Exception e) {     // none active: Spark 4 throws SparkException (undeclared), 3.5 IllegalStateException
            return null;
        }
        String id = session.sparkContext().getLocalProperty(QUERY_ID_PROPERTY);
        return id != null && QUERY_ID.matcher(id).matches() ? id : null;
    }

    /** The checkpoint location the existing file records when it is another source's; null when it is ours,
     *  absent or unreadable (then it is rewritten). */
    private String otherCheckpoint(Path file) throws IOException {
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(file)
                || Files.size(file) > MAX_FILE_BYTES) {
            return null;
        }
        try {
            JsonNode doc = JSON.readTree(Files.readAllBytes(file));
            JsonNode cp = doc == null ? null : doc.get("checkpoint");
            return cp != null && cp.isTextual() && !cp.asText().equals(checkpoint) ? cp.asText() : null;
        } catch (IOException e) {
            return null;
        }
    }

    private void tell(String what) {
        if (told) return;
        told = true;
        LOG.warn("seglog source: {}", what);
    }
}
