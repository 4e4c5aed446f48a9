package io.seglog.spark.write;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

import io.seglog.spark.format.CommitLogReader;
import io.seglog.spark.format.CommitLogWriter;
import io.seglog.spark.format.CommitState;
import io.seglog.spark.format.CommittedEndRollBack;
import io.seglog.spark.format.FileLock;
import io.seglog.spark.format.OffsetGaps;
import io.seglog.spark.format.StagingRuns;
import io.seglog.spark.format.StagedPublisher;
import io.seglog.spark.format.StagedSegment;
import io.seglog.spark.format.TopicCatalog;
import io.seglog.spark.format.TopicMetadata;

/**
 * The driver's exactly-once commit of a {@code format("seglog")} write (docs/spec.md §4, §7), one home for
 * the protocol the Python sink runs in sink/segment_log_sink.py, on the files both sides share:
 * <ol>
 * <li>take each topic's writer lock ({@code _seglog/locks/<topic>.writer.lock}, flock, sorted: two writers
 *   never deadlock), so two writes never interleave their commits of one topic;</li>
 * <li>skip the topics whose commit log already holds this write (txnAppId's last version at or above
 *   txnVersion): a re-run of an idempotent write;</li>
 * <li>create (or check) the {@code topic} option's topic, and create the topics the tasks planned
 *   ({@link TopicRequest}: a row's new topic, a quarantine topic);</li>
 * <li>roll every partition back to its committed end (a crashed write's records past it are cut): first the
 *   partitions no task wrote, each under its lock for its cut; then the written partitions' locks are taken (each
 *   topic's ascending) and held to the end of step 6, and they are rolled back; then the staged files of this
 *   writer's crashed runs are removed;</li>
 * <li>publish each written partition's staged segments at its log end, in task order (StagedPublisher), starting
 *   from the folder as its roll back read it under the same lock hold: small ones copied onto the active segment,
 *   as the Python sink does (micro-batches leave no tiny segments), large ones renamed in; everything forced
 *   before the commit;</li>
 * <li>commit once per topic, still holding those locks: the new end offsets and the writer's version, in one
 *   commit file. Only now do readers see the write;</li>
 * <li>remove this run's staging folder ({@link StagingRuns#endRun}, as an abort does: no task attempt still
 *   running stages under it again), and the writer's folders it leaves empty. On any failure before the commit
 *   every partition is rolled back again, so a failed write leaves each log as it was.</li>
 * </ol>
 * A kill at any point leaves records past the committed end (cut by the next write's step 4) and staged
 * files (removed by the next write of this writer), never a half-visible write. Steps 4 and 5 run a topic's
 * partitions at once ({@link PartitionWork}: each touches only its own folder, and a small micro-batch's commit
 * was otherwise the sum of its partitions' fsyncs); each ends before the next step starts.
 */
final class DriverCommit {
    static final long LOCK_TIMEOUT_MS = 600_000L;   // SegmentLogSink's lock_timeout default; option lockTimeoutMs

    private DriverCommit() {}

    /** {@code <root>/_seglog/staging/<writer>/<topics key>-jvm}: every run of one writer to one set of topics. */
    static Path writerStaging(String root, String writer, String topic) {
        return StagingRuns.writerStaging(Path.of(root), writer, topic);
    }

    /** The version the commit log records for a write: txnVersion, or a plain append's next number. */
    static long version(WriteOptions o, Optional<CommitState> latest) {
        if (o.txnVersion != null) return o.txnVersion;
        Long last = latest.map(s -> s.lastBatch(o.writer)).orElse(null);
        return last == null || last < 0 ? 0 : last + 1;
    }

    /** Whether a commit log whose newest state is {@code latest} holds this idempotent write already. */
    static boolean committed(Optional<CommitState> latest, WriteOptions o) {
        if (o.txnVersion == null) return false;
        Long last = latest.map(s -> s.lastBatch(o.writer)).orElse(null);
        return last != null && last >= o.txnVersion;
    }

    static void commit(WriteOptions o, WritePlan plan, StagedMessage[] messages) {
        commit(o, plan, messages, null);
    }

    /** {@code planned}: the topic option's commit log as the write's planning read it (its skip hint; null: none),
     *  which the commit reads again only if a commit came in since ({@link CommitLogWriter#latestAgain}). */
    static void commit(WriteOptions o, WritePlan plan, StagedMessage[] messages, CommitLogWriter planned) {
        long nullTopicRows = 0;
        for (StagedMessage m : messages) nullTopicRows += m.nullTopicRows();
        if (nullTopicRows > 0) {
            StagingRuns.endRun(Path.of(plan.staging));
            throw new SeglogWriteException("seglog write: " + nullTopicRows + " row(s) have a null 'topic' and there is no "
                    + "'topic' option to fall back on; nothing was written");
        }
        Path root = Path.of(o.root);
        TreeSet<String> topics = new TreeSet<>();
        if (o.topic != null) topics.add(o.topic);
        for (StagedMessage m : messages) for (StagedMessage.Output out : m.outputs()) topics.add(out.topic());
        List<FileLock> locks = new ArrayList<>();
        try {
            for (String t : topics) locks.add(FileLock.topicWriter(root, t).acquire(o.lockTimeoutMs));
            // Each topic's commit log and metadata are read once here, under its writer lock, and passed down: every
            // committer of a topic holds that lock (a commit's own link race is still handled by CommitLogWriter),
            // and only TopicAdmin, under it too, changes a recorded topic.
            Map<String, Map<Integer, Long>> committedEnds = new HashMap<>();
            Map<String, CommitLogWriter> logs = new HashMap<>();   // each commit starts from the state read here
            Map<String, Long> versions = new HashMap<>();          // the version each topic's commit records
            List<String> todo = new ArrayList<>();
            for (String t : topics) {
                boolean known = planned != null && t.equals(o.topic);
                CommitLogWriter log = known ? planned : new CommitLogWriter(root, t);
                logs.put(t, log);
                Optional<CommitState> latest = known ? log.latestAgain() : log.latest();
                if (committed(latest, o)) continue;
                todo.add(t);
                versions.put(t, version(o, latest));
                committedEnds.put(t, latest.map(CommitState::endOffsets).orElse(Map.of()));
            }
            if (todo.isEmpty() || plan.skip) return;
            // The topic option's topic is committed last: the tasks' skip hint (WritePlan.skip) reads only its
            // commit log, so once it holds the version every other topic of the write (a quarantine topic) does.
            if (todo.remove(o.topic)) todo.add(o.topic);
            Map<String, TopicMetadata> metas = new LinkedHashMap<>();
            List<String> created = new ArrayList<>();
            Map<String, java.util.Set<Integer>> made = new HashMap<>();   // the partition folders this write made
            try {
                for (String t : todo) {
                    Optional<TopicMetadata> recorded = TopicCatalog.load(root, t);
                    if (recorded.isEmpty()) created.add(t);
                    TopicMetadata m = topic(root, t, o, messages, recorded);
                    metas.put(t, m);
                }
                Map<String, TreeMap<Integer, List<StagedSegment>>> staged = staged(metas, messages);
                // The partitions no task wrote are rolled back first, each under its lock for its cut only, with no
                // other partition lock held here. Then the written partitions' locks are taken (each topic's in
                // ascending order) and held from their roll back through the publish to the last commit: nothing
                // runs on such a partition in between, so its publish starts from the folder as its roll back read it
                // (CommittedEndRollBack.Opened: no second listing, no second segment open), and no lock is dropped
                // and taken again (two flocks, a lock file opened and checked, per partition: issue 41). Every
                // partition is still rolled back before any is published.
                for (TopicMetadata m : metas.values()) {
                    List<Integer> unwritten = new ArrayList<>();
                    Map<Integer, List<StagedSegment>> mine = staged.getOrDefault(m.name(), new TreeMap<>());
                    for (int p = 0; p < m.partitions(); p++) if (!mine.containsKey(p)) unwritten.add(p);
                    rollBack(root, m, unwritten, committedEnds.get(m.name()), o.lockTimeoutMs);
                }
                List<FileLock> held = new ArrayList<>();
                try {
                    Map<String, List<CommittedEndRollBack.Opened>> opened = new HashMap<>();
                    for (TopicMetadata m : metas.values()) {
                        for (int p : staged.getOrDefault(m.name(), new TreeMap<>()).keySet()) {
                            held.add(FileLock.partition(root, m.name(), p).acquire(o.lockTimeoutMs));
                        }
                    }
                    // the gap rule's files read once for every written partition (issue 41: once per partition, the
                    // topic's metadata too), now that all their locks are held (OffsetGaps.at: the cleaner records a
                    // partition before it swaps anything in, under that partition's lock)
                    OffsetGaps gaps = OffsetGaps.at(root);
                    // each topic's recorded config as read above under its writer lock, still held (not read again)
                    for (TopicMetadata m : metas.values()) {
                        gaps.knowing(m.name(), io.seglog.spark.format.TopicLayout.compacts(m.config().get("cleanup.policy")));
                    }
                    // and the log start checkpoint (issue 41: read once per partition), under the same locks
                    Map<String, Long> logStarts = io.seglog.spark.format.LogStartCheckpoint.read(root);
                    for (TopicMetadata m : metas.values()) {
                        List<Integer> written = new ArrayList<>(staged.getOrDefault(m.name(), new TreeMap<>()).keySet());
                        Map<Integer, Long> ends = committedEnds.get(m.name());
                        opened.put(m.name(), written.isEmpty() ? List.of()
                                : PartitionWork.run(written, p -> cut(root, m, p, ends, gaps, logStarts).opened()));
                    }
                    removeCrashedRuns(o, plan);
                    makePartitionFolders(root, metas, staged, made);
                    publishAndCommit(root, o, metas, staged, opened, logs, versions);
                } finally {
                    // released before a failure's restore, which takes every partition's lock itself
                    for (int i = held.size() - 1; i >= 0; i--) held.get(i).release();
                }
            } catch (RuntimeException | Error e) {
                restore(root, metas, made, created, e, o.lockTimeoutMs);
                throw e;
            }
        } finally {
            for (int i = locks.size() - 1; i >= 0; i--) locks.get(i).release();
            StagingRuns.endRun(Path.of(plan.staging));
        }
    }

    /**
     * After a failed write, nothing of it stays (the Python sink's _restore): every partition rolled back to
     * its committed end, the folders this write made for partitions that hold nothing committed removed,
     * and a topic this write created forgotten when nothing was ever committed to it, so a corrected request
     * (another partition count) is not refused as a conflict. Failures here are added to {@code failure}.
     *
     * <p>Invariant: a folder is removed only if this write made it ({@code made}: its mkdir, not a folder found there,
     * which may be another process's, e.g. an import's), in the same hold of its partition's lock as its cut, and with
     * its maintenance lock held too, taken first (the lock order: maintenance, then partition; indexer/locks.py).
     * Nobody else can be working in it then: writers and the sidecar's jobs hold the partition's lock, a clean, merge
     * or tier job builds its files under the maintenance lock alone, and a new folder is made only under the topic's
     * writer lock, which this write holds. A job holding the maintenance lock is waited for, as any lock of the write
     * is (lockTimeoutMs): deleted under it, a live build's files went with it. Lock files live under
     * {@code _seglog/locks/} and are never removed (a waiter may hold one open: a new inode would let a third process
     * lock beside it).
     *
     * <p>Invariant: no partition folder is left without its topic. A folder still there (its job outlasted the wait)
     * keeps its topic recorded, nothing committed: every reader and {@code seglog verify} see an empty topic of the
     * recorded partition count and configuration, where a folder of a forgotten topic was taken for a topic of the
     * default configuration, listed by SHOW TABLES and refused by CREATE TABLE.
     */
    private static void restore(Path root, Map<String, TopicMetadata> metas, Map<String, java.util.Set<Integer>> made,
                                List<String> created, Throwable failure, Long lockTimeoutMs) {
        java.util.Set<String> kept = new TreeSet<>();
        for (TopicMetadata m : metas.values()) {
            java.util.Set<Integer> mine = made.getOrDefault(m.name(), java.util.Set.of());
            try {
                // read under the topic's writer lock, which every committer holds: no commit can come in meanwhile
                Map<Integer, Long> ends = CommitLogReader.committedEnds(root, m.name());
                List<Integer> all = new ArrayList<>(m.partitions());
                for (int p = 0; p < m.partitions(); p++) all.add(p);
                PartitionWork.run(all, p -> {
                    if (mine.contains(p) && ends.getOrDefault(p, 0L) == 0L) {
                        if (!removeMadeFolder(root, m, p, lockTimeoutMs)) {
                            failure.addSuppressed(new SeglogWriteException("seglog write: partition folder "
                                + io.seglog.spark.format.TopicLayout.partitionDir(root, m.name(), p) + ", made by this "
                                + "write, was cut to nothing and kept (a clean, merge or tier job held its maintenance "
                                + "lock past the write's lockTimeoutMs, or its removal failed); topic '" + m.name()
                                + "' stays recorded, with "
                                + "nothing committed, so readers and seglog verify see it empty"));
                        }
                        return null;
                    }
                    try (FileLock lock = FileLock.partition(root, m.name(), p).acquire(lockTimeoutMs)) {
                        return cut(root, m, p, ends, null, null);   // the gap rule read under this partition's lock
                    }
                });
            } catch (RuntimeException again) {
                failure.addSuppressed(again);
            }
            // every step has ended (PartitionWork waits for all): a folder this write made that is still there, kept or
            // not reached, keeps its topic
            for (int p : mine) {
                if (Files.exists(io.seglog.spark.format.TopicLayout.partitionDir(root, m.name(), p))) kept.add(m.name());
            }
        }
        for (String t : created) {
            if (kept.contains(t)) continue;
            try {
                TopicCatalog.forgetUncommitted(root, t);
            } catch (RuntimeException again) {
                failure.addSuppressed(again);
            }
        }
    }

    /** A partition folder this failed write made, holding nothing committed, cut and removed (see restore): its
     *  maintenance lock taken first, waiting as the write waits for any lock, then its partition's lock. Returns
     *  whether it is gone; a folder whose maintenance lock stayed held is cut and kept. */
    private static boolean removeMadeFolder(Path root, TopicMetadata m, int p, Long lockTimeoutMs) {
        Path dir = io.seglog.spark.format.TopicLayout.partitionDir(root, m.name(), p);
        FileLock maintenance = FileLock.maintenance(root, m.name(), p);
        boolean free = true;
        try {
            maintenance.acquire(lockTimeoutMs);
        } catch (io.seglog.spark.format.LockedException busy) {
            free = false;   // a job is building in it still: its files are not this write's to delete
        }
        try (FileLock lock = FileLock.partition(root, m.name(), p).acquire(lockTimeoutMs)) {
            cut(root, m, p, Map.of(), null, null);
            if (free) deleteTree(dir);
        } finally {
            maintenance.release();
        }
        return !Files.exists(dir);
    }

    /**
     * The topic option's topic is created (or checked) now, under its writer lock; a topic the tasks planned
     * (a row's new topic, a quarantine topic) is created as they planned it, with the partition count they
     * partitioned by (TopicCatalog.create refuses a topic made meanwhile with another); a row's existing topic is
     * as the tasks found it.
     */
    private static TopicMetadata topic(Path root, String t, WriteOptions o, StagedMessage[] messages,
                                       Optional<TopicMetadata> existing) {
        if (t.equals(o.topic)) {
            if (existing.isPresent() && o.partitions == null && !o.configGiven) return existing.get();
            if (existing.isEmpty() && o.partitions == null) {
                throw new SeglogWriteException("seglog write: topic '" + t + "' does not exist under " + root
                        + "; pass option 'partitions' (and topic configuration) to create it");
            }
            int n = o.partitions != null ? o.partitions : existing.get().partitions();
            try {
                return TopicCatalog.create(root, t, n, o.configGiven ? o.config : existing.map(TopicMetadata::config).orElse(Map.of()),
                        existing);
            } catch (io.seglog.spark.format.InvalidTopicException e) {
                throw new TopicRefusedException("seglog InvalidTopicError: " + e.getMessage(), e);
            }
        }
        for (StagedMessage m : messages) {
            for (StagedMessage.NewTopic planned : m.newTopics()) {
                if (!planned.name().equals(t)) continue;
                try {
                    return TopicCatalog.create(root, t, planned.partitions(), planned.config(), existing);
                } catch (io.seglog.spark.format.InvalidTopicException e) {
                    throw new TopicRefusedException("seglog InvalidTopicError: " + e.getMessage(), e);
                }
            }
        }
        return existing.orElseThrow(() -> new SeglogWriteException(
                "seglog write: topic '" + t + "' vanished during the write"));
    }

    /** {@code partitions} of the topic back to their committed {@code ends}, each under its lock, the partitions at
     *  once ({@link PartitionWork}: a cut touches only its own folder, and each waits on its own fsyncs). */
    private static void rollBack(Path root, TopicMetadata meta, List<Integer> partitions, Map<Integer, Long> ends,
                                 Long lockTimeoutMs) {
        if (partitions.isEmpty()) return;
        PartitionWork.run(partitions, p -> {
            try (FileLock lock = FileLock.partition(root, meta.name(), p).acquire(lockTimeoutMs)) {
                return cut(root, meta, p, ends, null, null);   // the gap rule read under this partition's lock
            }
        });
    }

    /** One partition back to its committed end; the caller holds the partition's lock ({@code gaps}, {@code logStarts}:
     *  the gap rule's files and the log start checkpoint read with it held, or null: read here). */
    private static CommittedEndRollBack.Result cut(Path root, TopicMetadata meta, int p, Map<Integer, Long> ends,
                                                   OffsetGaps gaps, Map<String, Long> logStarts) {
        int indexBytes = ((Long) meta.topicConfig().get("segment.index.bytes")).intValue();
        try {
            return CommittedEndRollBack.rollBack(root, meta.name(), p, ends.getOrDefault(p, 0L), indexBytes, gaps, logStarts);
        } catch (io.seglog.spark.format.TieredOffsetsException e) {
            // its class crosses to Python as OffsetOutOfRangeError (sink/write_errors.py)
            throw new OffsetOutOfRangeException("seglog OffsetOutOfRangeError: " + e.getMessage(), e);
        }
    }

    /**
     * A run's lock, {@code <run folder>/.run.lock}, held by its driver from planning to the end of its commit
     * or abort: a run whose lock can be taken is over (a killed driver's flock is dropped by the kernel).
     * Unlike the Python sink, a write does not hold its writer lock while its tasks stage, so another run of
     * the same writer and topic may be staging beside this one; only runs that are over are removed.
     */
    static FileLock runLock(String staging) {
        return StagingRuns.runLock(Path.of(staging));
    }

    /**
     * Creates the run folder {@code staging} with its run lock held ({@link #runLock}): made and locked under a
     * dot-name, then renamed into place (the flock is on the lock file's inode, which the rename keeps). Invariant:
     * no run folder is ever seen by its own name unlocked while its driver lives. Made by its name, another write's
     * {@link #removeCrashedRuns} could take its free lock between the mkdir and the flock and remove a live run (two
     * concurrent writes of one writer to one topic, issue 36).
     */
    static FileLock startRun(String staging) {
        Path dir = Path.of(staging);
        Path nascent = dir.resolveSibling(StagingRuns.NASCENT + dir.getFileName());
        FileLock lock = null;
        for (int attempt = 1; lock == null; attempt++) {
            try {
                // the nascent folder is this run's alone (a fresh UUID): its lock file is new, created and locked at once
                lock = new FileLock(nascent.resolve(".run.lock"), "staging run " + dir.getFileName()).acquireNew();
            } catch (io.seglog.spark.format.StorageException e) {
                // another run's end removed the writer's folder, empty, between a mkdir of it and of ours (seen as
                // missing, or as made and then gone): made again; anything else, or again and again, is refused
                boolean raced = e.getCause() instanceof java.nio.file.NoSuchFileException
                    || e.getCause() instanceof java.nio.file.FileAlreadyExistsException;
                if (!raced || attempt == 10) throw e;
            }
        }
        try {
            Files.move(nascent, dir, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            lock.release();
            deleteTree(nascent);
            throw new io.seglog.spark.format.StorageException("staging run " + dir + ": cannot create it: " + e, e);
        }
        return lock;
    }

    /** A crashed run's staged files (never published past a commit): the run folders of this writer and topic
     *  that no live driver holds. */
    private static void removeCrashedRuns(WriteOptions o, WritePlan plan) {
        removeCrashedRuns(Path.of(plan.staging));
    }

    static void removeCrashedRuns(Path mine) {
        StagingRuns.removeOver(mine.getParent(), mine);
    }

    /** (topic, partition) -> staged segments, in task order, then in the order each task wrote them. */
    private static Map<String, TreeMap<Integer, List<StagedSegment>>> staged(Map<String, TopicMetadata> metas,
                                                                           StagedMessage[] messages) {
        StagedMessage[] byTask = messages.clone();
        Arrays.sort(byTask, Comparator.comparingInt(StagedMessage::task));
        // (topic, partition) -> staged segments, in task order, then in the order each task wrote them
        Map<String, TreeMap<Integer, List<StagedSegment>>> staged = new HashMap<>();
        for (StagedMessage m : byTask) {
            for (StagedMessage.Output out : m.outputs()) {
                if (!metas.containsKey(out.topic())) continue;
                staged.computeIfAbsent(out.topic(), k -> new TreeMap<>())
                        .computeIfAbsent(out.partition(), k -> new ArrayList<>()).addAll(out.segments());
            }
        }
        return staged;
    }

    /** The written partitions' folders a first write makes, under their locks (held by the caller), made together
     *  with one fsync of their parent for all (GroupShared.createSiblings) before any publish puts a file in them;
     *  a publish makes its folder itself only where this did not (the Python core's path). Each folder made is
     *  added to {@code made} as its mkdir returns (a failed restore removes only those). */
    private static void makePartitionFolders(Path root, Map<String, TopicMetadata> metas,
                                             Map<String, TreeMap<Integer, List<StagedSegment>>> staged,
                                             Map<String, java.util.Set<Integer>> made) {
        Map<Path, List<Path>> missing = new LinkedHashMap<>();
        Map<Path, Map.Entry<String, Integer>> partitionOf = new HashMap<>();
        for (TopicMetadata m : metas.values()) {
            for (int p : staged.getOrDefault(m.name(), new TreeMap<>()).keySet()) {
                Path dir = io.seglog.spark.format.TopicLayout.partitionDir(root, m.name(), p);
                if (!Files.isDirectory(dir)) missing.computeIfAbsent(dir.getParent(), k -> new ArrayList<>()).add(dir);
                partitionOf.put(dir, Map.entry(m.name(), p));
            }
        }
        for (Map.Entry<Path, List<Path>> e : missing.entrySet()) {
            try {
                io.seglog.spark.format.GroupShared.createSiblings(e.getKey(), e.getValue(), dir -> {
                    Map.Entry<String, Integer> tp = partitionOf.get(dir);
                    made.computeIfAbsent(tp.getKey(), k -> new TreeSet<>()).add(tp.getValue());
                });
            } catch (IOException failed) {
                throw new io.seglog.spark.format.StorageException(e.getKey() + ": making partition folders "
                        + e.getValue() + " failed: " + failed, failed);
            }
        }
    }

    /** Each topic's written partitions published and committed, under their locks, which the caller holds since
     *  their roll back ({@code opened}: what each roll back read, by the written partitions' ascending order; {@code
     *  logs}: each topic's commit log, read under its writer lock, which the commit starts from; {@code versions}: the
     *  version each records). */
    private static void publishAndCommit(Path root, WriteOptions o, Map<String, TopicMetadata> metas,
                                         Map<String, TreeMap<Integer, List<StagedSegment>>> staged,
                                         Map<String, List<CommittedEndRollBack.Opened>> opened,
                                         Map<String, CommitLogWriter> logs, Map<String, Long> versions) {
        for (TopicMetadata meta : metas.values()) {
            TopicTarget target = TopicTarget.of(meta);
            TreeMap<Integer, List<StagedSegment>> mine = staged.getOrDefault(meta.name(), new TreeMap<>());
            List<Integer> written = new ArrayList<>(mine.keySet());   // ascending, as opened
            List<CommittedEndRollBack.Opened> rolled = opened.get(meta.name());
            CommitLogWriter log = logs.get(meta.name());
            long version = versions.get(meta.name());   // from the log as read under the writer lock
            // Where each written partition's log will end, known before its publish when its roll back read its folder
            // (every partition's, in a steady micro-batch): the commit file is then written before the publishes start
            // and forced while the partitions force theirs (issue 41: its write and fsync came after them, one more
            // journal commit to wait for); it is linked only once all of them returned, each having ended where
            // predicted (else it is dropped, and the ends they did reach committed as before).
            Map<Integer, Long> predicted = new TreeMap<>();
            for (int i = 0; i < written.size(); i++) {
                CommittedEndRollBack.Opened r = rolled.get(i);
                if (r == null) {
                    predicted = null;
                    break;
                }
                predicted.put(written.get(i), StagedPublisher.endAfter(r, mine.get(written.get(i))));
            }
            CommitLogWriter.Prepared prepared = predicted == null ? null : log.prepare(o.writer, version, predicted, false);
            try {
                // the partitions at once (PartitionWork, under the locks the caller holds: a flock is the open file's,
                // not a thread's); each step forces its own files, and all have ended before the link below.
                // Invariant (the fsync order the crash argument needs): every published file's data, and every
                // partition folder's entries (the folder's fsync; a new folder's entry in the root at its creation), are
                // durable before the commit file is linked; the commit file's data before its link; its folder's entry
                // after the link, before the write returns. The partitions' fsyncs and the commit file's (under its
                // temporary name, in no listing) are independent and run at once (fsyncs waiting together share the
                // journal's commits on ext4): only the link waits for all of them.
                // Every partition's patches first, all at once (issue 41: inside each publish they were forced one after
                // another, a partition's chain of fsyncs), the commit file forced beside them; then the publishes, each
                // renaming in its patched segments (checked to be where their patches put them) after those forces.
                List<List<StagedPublisher.Patch>> patches = new ArrayList<>();
                List<StagedPublisher.Patch> all = new ArrayList<>();
                for (int i = 0; i < written.size(); i++) {
                    patches.add(StagedPublisher.patchesBefore(root, meta.name(), written.get(i), mine.get(written.get(i)),
                            o.renameMinBytes, rolled.get(i)));
                    all.addAll(patches.get(i));
                }
                Runnable beside = prepared == null ? null : prepared::force;
                if (!all.isEmpty()) {
                    List<Integer> each = new ArrayList<>(all.size());
                    for (int i = 0; i < all.size(); i++) each.add(i);
                    PartitionWork.run(each, i -> {
                        all.get(i).run();
                        return null;
                    }, beside);
                    beside = null;
                }
                List<Long> published = PartitionWork.run(written, p -> StagedPublisher.publish(root, meta.name(), p, mine.get(p),
                        target.append, o.renameMinBytes, rolled.get(written.indexOf(p)), patches.get(written.indexOf(p))).end(),
                        beside);
                Map<Integer, Long> ends = new TreeMap<>();
                for (int i = 0; i < written.size(); i++) ends.put(written.get(i), published.get(i));
                CrashPoint.reached(o.txnVersion);   // published, not committed: the crash tests kill the driver here
                if (prepared != null && prepared.ends().equals(ends)) {
                    log.link(prepared);
                } else {
                    log.commit(o.writer, version, ends, false);   // a publish that ended elsewhere: its real ends
                }
                log.removeDeadTemps();   // killed commits' temporary files: dead, this write holding the writer lock
            } finally {
                if (prepared != null) prepared.close();   // given up, or removed by its link already
            }
        }
    }

    static void deleteTree(Path dir) {
        if (!Files.exists(dir)) return;
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).collect(java.util.stream.Collectors.toList())) Files.deleteIfExists(p);
        } catch (IOException | java.io.UncheckedIOException e) {
            // leftovers cost only space; the next write of this writer removes them
        }
    }
}
