package io.seglog.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Appends to one topic's commit log: the JVM's half of the contract indexer/commit_log.py keeps (the
 * format, its version included, is the one both sides read and write: tests/conformance/commit_files.json holds
 * both readers and writers to it, through tests/conformance/test_commit_file_vectors.py and CommitFileVectorsTest).
 *
 * <p>Invariants, as the Python core's:
 * <ul>
 * <li>A commit file is written whole under a temporary name, forced, then hard-linked to the next seq
 *   name (newest + 1); the link fails when a concurrent committer took that seq, and this committer
 *   re-reads the newest state and merges again. No commit is lost, none is torn.</li>
 * <li>Each state carries every partition's end forward; a commit names only the partitions it changed,
 *   and sets its writer's last batch id, keeping every other writer's.</li>
 * <li>An end offset moves down only when the committer asks ({@code allowLower}: an operator's
 *   truncation); a commit that would lower one is refused ({@link CommitConflictException}).</li>
 * <li>The last {@code retain} files are kept, pruned in ascending seq order after the link (the
 *   reader's {@link CommitLogReader.Tail} relies on that order); the newest is never removed.</li>
 * </ul>
 */
public final class CommitLogWriter {
    public static final int DEFAULT_RETAIN = 100;
    private static final int ATTEMPTS = 1000;

    private final Path root;
    private final String topic;
    private final Path dir;
    private final int retain;

    public CommitLogWriter(Path root, String topic) {
        this(root, topic, DEFAULT_RETAIN);
    }

    public CommitLogWriter(Path root, String topic, int retain) {
        if (!TopicLayout.validTopic(topic)) throw new IllegalArgumentException("invalid topic name " + topic);
        if (retain < 1) throw new IllegalArgumentException("retain must be at least 1, got " + retain);
        this.root = root;
        this.topic = topic;
        this.dir = CommitLogReader.dir(root, topic);
        this.retain = retain;
    }

    /** The newest state, or empty before the first commit. */
    public Optional<CommitState> latest() {
        return CommitLogReader.latest(root, topic);
    }

    /** Record {@code ends} (partition -> end offset) as committed by {@code writerId} for {@code batchId}. */
    public CommitState commit(String writerId, long batchId, Map<Integer, Long> ends, boolean allowLower) {
        if (writerId == null || writerId.isEmpty()) {
            throw new IllegalArgumentException("writer id must be a non-empty string, got " + PythonJson.string(String.valueOf(writerId)));
        }
        for (Map.Entry<Integer, Long> e : ends.entrySet()) {
            if (e.getKey() == null || e.getKey() < 0 || e.getValue() == null || e.getValue() < 0) {
                throw new IllegalArgumentException("commit of topic '" + topic + "': end offset " + e.getValue()
                        + " for partition " + e.getKey() + "; partitions and offsets are integers >= 0");
            }
        }
        boolean shared;
        try {
            shared = GroupShared.createDirectories(dir);
        } catch (IOException e) {
            throw new StorageException("commit log " + dir + ": cannot create it: " + e, e);
        }
        java.util.TreeSet<Long> listed = new java.util.TreeSet<>();
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            Optional<CommitState> current = CommitLogReader.newest(dir, listed);
            Map<Integer, Long> merged = new HashMap<>(current.map(CommitState::endOffsets).orElse(Map.of()));
            if (!allowLower) {
                StringBuilder lowered = new StringBuilder();
                for (Map.Entry<Integer, Long> e : new java.util.TreeMap<>(ends).entrySet()) {
                    long committed = merged.getOrDefault(e.getKey(), 0L);
                    if (e.getValue() < committed) {
                        if (lowered.length() > 0) lowered.append(", ");
                        lowered.append(e.getKey()).append(": (").append(committed).append(", ").append(e.getValue()).append(')');
                    }
                }
                if (lowered.length() > 0) {
                    throw new CommitConflictException("commit of topic '" + topic + "' by writer '" + writerId + "' (batch "
                            + batchId + ") would lower committed end offsets {partition: (committed, asked)} = {"
                            + lowered + "}; only a truncation may lower them (allowLower)");
                }
            }
            merged.putAll(ends);
            Map<String, Long> writers = new HashMap<>(current.map(CommitState::writers).orElse(Map.of()));
            writers.put(writerId, batchId);
            long seq = current.map(s -> s.seq() + 1).orElse(0L);
            CommitState state = new CommitState(seq, writerId, batchId, merged, writers, System.currentTimeMillis());
            if (publish(state, shared)) {
                prune(seq, listed);
                return state;
            }
        }
        throw new StorageException("commit log " + dir + ": gave up after " + ATTEMPTS + " concurrent commits");
    }

    /** Link the forced state to its seq name; false when a concurrent committer took that seq. */
    private boolean publish(CommitState state, boolean shared) {
        Path target = CommitLogReader.file(dir, state.seq());
        Path tmp = dir.resolve(String.format(".%020d.json.tmp-%s", state.seq(), AtomicFile.tempSuffix()));
        try {
            return AtomicFile.publishByLink(target, tmp, state.toJson().getBytes(StandardCharsets.US_ASCII), shared,
                    "commit log " + dir + ": cannot publish commit " + state.seq());
        } catch (IOException e) {
            throw new StorageException("commit log " + dir + ": cannot write commit " + state.seq() + ": " + e, e);
        }
    }

    /**
     * The files {@code retain} or more below {@code newest}, from {@code listed}: the listing that named the state this
     * commit linked {@code newest} after (issue 41: the folder was listed again here). It holds every prunable file a
     * new listing would: the link at the listed newest + 1 succeeded, so every file made since has a higher seq than
     * any listed, and {@code newest - retain} is below them.
     */
    private void prune(long newest, java.util.SortedSet<Long> listed) {
        for (long seq : listed) {   // ascending: see the class comment
            if (seq > newest - retain) break;
            try {
                Files.deleteIfExists(CommitLogReader.file(dir, seq));
            } catch (NoSuchFileException e) {
                // pruned by a concurrent committer
            } catch (IOException e) {
                throw new StorageException("commit log " + dir + ": cannot prune commit " + seq + ": " + e, e);
            }
        }
    }
}
