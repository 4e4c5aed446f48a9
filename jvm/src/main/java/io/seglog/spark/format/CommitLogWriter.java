package io.seglog.spark.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

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
    private Optional<CommitState> read;            // what latest() read, for the next attempt only (null: none)
    private TreeSet<Long> readListing;             // the listing that named it
    private final java.util.List<Path> readTemps = new java.util.ArrayList<>();   // temporary commit files it named

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

    /**
     * The newest state, or empty before the first commit. This writer's next commit starts from it, with the listing
     * that named it (issue 41: a driver read the log under the topic's writer lock, then its commit read it again).
     * Safe without any lock: if a commit came in since, the link of this state's seq + 1 fails and the commit reads
     * the log again.
     */
    public Optional<CommitState> latest() {
        TreeSet<Long> listing = new TreeSet<>();
        read = CommitLogReader.newest(dir, listing, readTemps);
        readListing = listing;
        return read;
    }

    /**
     * Removes the temporary commit files the last {@link #latest} listed: left by committers killed between a commit
     * file's write and its link (a driver's prepared commit lives for the length of its publishes), which nothing else
     * removes. Returns how many were removed.
     *
     * <p>Invariant (why none of them can be a live commit's): the caller holds the topic's writer lock, and so does every
     * committer of a topic while its commit file exists (DriverCommit, {@code seglog import}, {@code seglog truncate},
     * {@code seglog abort-transaction}). A file listed before the caller took the lock was its committer's while that one
     * held the lock, so it has ended since (linked and removed, or died); one listed under the caller's hold can only be
     * a dead committer's. This writer's own file is never among them: it is made after the listing.
     */
    public int removeDeadTemps() {
        int removed = 0;
        for (Path t : readTemps) {
            try {
                if (Files.deleteIfExists(t)) removed++;
            } catch (IOException e) {
                // left for the next committer: it costs only space
            }
        }
        readTemps.clear();
        return removed;
    }

    /**
     * The newest state as of now: the one {@link #latest} read earlier when it is still the newest, else read again. Still
     * the newest when its seq + 1 is not there and, looked at after that, its seq still is ({@link CommitLogReader.Tail}'s
     * argument: seqs are taken in order and pruned in ascending order): two file checks, where a read lists the folder
     * and parses the newest file (issue 41: a write read its topic's log at planning, for the tasks' skip hint, then
     * again under its writer lock). A log that was empty is read again (nothing to check it by). The next commit starts
     * from the state returned, as after {@link #latest}.
     */
    public Optional<CommitState> latestAgain() {
        if (read != null && read.isPresent()) {
            long seq = read.get().seq();
            if (!Files.exists(CommitLogReader.file(dir, seq + 1)) && Files.exists(CommitLogReader.file(dir, seq))) return read;
        }
        return latest();
    }

    /** The state the next attempt merges into: the one {@link #latest} read, once, else the log read now; {@code listed}
     *  filled with the listing that named it. */
    private Optional<CommitState> current(TreeSet<Long> listed) {
        if (read != null) {
            Optional<CommitState> known = read;
            listed.clear();
            listed.addAll(readListing);
            read = null;
            return known;
        }
        return CommitLogReader.newest(dir, listed);
    }

    /** Record {@code ends} (partition -> end offset) as committed by {@code writerId} for {@code batchId}. */
    public CommitState commit(String writerId, long batchId, Map<Integer, Long> ends, boolean allowLower) {
        checkArguments(writerId, ends);
        boolean shared = createDir();
        TreeSet<Long> listed = new TreeSet<>();
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            CommitState state = next(current(listed), writerId, batchId, ends, allowLower);
            if (publish(state, shared)) {
                prune(state.seq(), listed);
                return state;
            }
        }
        throw new StorageException("commit log " + dir + ": gave up after " + ATTEMPTS + " concurrent commits");
    }

    /**
     * A commit written under its temporary name ({@link #prepare}), then forced ({@link #force}), not linked: no reader
     * sees it before {@link #link}. A driver writes it before it publishes the segments it names and forces it while
     * they are forced (issue 41: the commit file's write and fsync came after theirs, one more journal commit to wait
     * for), then links it once they are durable. Closing it removes the temporary file.
     */
    public static final class Prepared implements AutoCloseable {
        private final CommitState state;
        private final Path tmp;
        private final TreeSet<Long> listed;
        private final Map<Integer, Long> ends;
        private final boolean allowLower;
        private FileChannel open;     // written, not forced yet (null once forced or closed)
        private volatile boolean forced;

        private Prepared(CommitState state, Path tmp, FileChannel open, TreeSet<Long> listed, Map<Integer, Long> ends,
                         boolean allowLower) {
            this.state = state;
            this.tmp = tmp;
            this.open = open;
            this.listed = listed;
            this.ends = ends;
            this.allowLower = allowLower;
        }

        /** The end offsets it commits (partition -> end). */
        public Map<Integer, Long> ends() { return ends; }

        /** Its data and size durable (fsync), its file closed: from then on it may be linked. */
        public void force() {
            if (open == null) {
                if (forced) return;
                throw new IllegalStateException("commit file " + tmp + " forced after it was given up");
            }
            try (FileChannel ch = open) {
                open = null;
                ch.force(true);
                forced = true;
            } catch (IOException e) {
                throw new StorageException("commit file " + tmp + ": cannot force it: " + e, e);
            }
        }

        @Override public void close() {
            if (open != null) {
                try {
                    open.close();
                } catch (IOException e) {
                    // removed below all the same
                }
                open = null;
            }
            AtomicFile.removeTemp(tmp);
        }
    }

    /** {@link #commit}'s state written under a temporary name, neither forced nor linked: see {@link Prepared}. */
    public Prepared prepare(String writerId, long batchId, Map<Integer, Long> ends, boolean allowLower) {
        checkArguments(writerId, ends);
        boolean shared = createDir();
        TreeSet<Long> listed = new TreeSet<>();
        CommitState state = next(current(listed), writerId, batchId, ends, allowLower);
        Path tmp = temp(state.seq());
        FileChannel ch = null;
        try {
            ch = GroupShared.createNew(tmp, shared);
            ByteBuffer buf = ByteBuffer.wrap(state.toJson().getBytes(StandardCharsets.US_ASCII));
            while (buf.hasRemaining()) ch.write(buf);
        } catch (IOException | RuntimeException e) {
            try {
                if (ch != null) ch.close();
            } catch (IOException ignored) {
                // removed below all the same
            }
            AtomicFile.removeTemp(tmp);
            if (e instanceof RuntimeException) throw (RuntimeException) e;
            throw new StorageException("commit log " + dir + ": cannot write commit " + state.seq() + ": " + e, e);
        }
        return new Prepared(state, tmp, ch, listed, Map.copyOf(ends), allowLower);
    }

    /**
     * Links {@code p}, forced (the caller has made everything it names durable first), to its seq name, then fsyncs
     * the folder. When a concurrent committer took that seq since the read it merged into, its ends are committed
     * anew ({@link #commit}: read, merged, written, linked). Its temporary file is removed either way.
     */
    public CommitState link(Prepared p) {
        if (!p.forced) throw new IllegalStateException("commit file " + p.tmp + " linked before it was forced");
        try {
            if (AtomicFile.link(CommitLogReader.file(dir, p.state.seq()), p.tmp, "commit log " + dir + ": cannot publish commit "
                    + p.state.seq())) {
                prune(p.state.seq(), p.listed);
                return p.state;
            }
        } catch (IOException e) {
            throw new StorageException("commit log " + dir + ": cannot link commit " + p.state.seq() + ": " + e, e);
        } finally {
            p.close();
        }
        return commit(p.state.writerId(), p.state.batchId(), p.ends, p.allowLower);
    }

    private void checkArguments(String writerId, Map<Integer, Long> ends) {
        if (writerId == null || writerId.isEmpty()) {
            throw new IllegalArgumentException("writer id must be a non-empty string, got " + PythonJson.string(String.valueOf(writerId)));
        }
        for (Map.Entry<Integer, Long> e : ends.entrySet()) {
            if (e.getKey() == null || e.getKey() < 0 || e.getValue() == null || e.getValue() < 0) {
                throw new IllegalArgumentException("commit of topic '" + topic + "': end offset " + e.getValue()
                        + " for partition " + e.getKey() + "; partitions and offsets are integers >= 0");
            }
        }
    }

    /** The commit log's folder made if missing; whether it is group-writable. */
    private boolean createDir() {
        try {
            return GroupShared.createDirectories(dir);
        } catch (IOException e) {
            throw new StorageException("commit log " + dir + ": cannot create it: " + e, e);
        }
    }

    /** The state after {@code current}: every end carried forward, {@code ends} merged in (never lower unless
     *  {@code allowLower}), the writer's batch set. */
    private CommitState next(Optional<CommitState> current, String writerId, long batchId, Map<Integer, Long> ends,
                             boolean allowLower) {
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
        return new CommitState(seq, writerId, batchId, merged, writers, System.currentTimeMillis());
    }

    private Path temp(long seq) {
        return dir.resolve(String.format(".%020d.json.tmp-%s", seq, AtomicFile.tempSuffix()));
    }

    /** Link the forced state to its seq name; false when a concurrent committer took that seq. */
    private boolean publish(CommitState state, boolean shared) {
        Path target = CommitLogReader.file(dir, state.seq());
        try {
            return AtomicFile.publishByLink(target, temp(state.seq()), state.toJson().getBytes(StandardCharsets.US_ASCII), shared,
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
