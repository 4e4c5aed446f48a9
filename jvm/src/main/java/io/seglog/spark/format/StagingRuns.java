package io.seglog.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Where a write stages its segments before its driver publishes them: {@code <root>/_seglog/staging/<writer>/<topic
 * key>-jvm/<run>/}, one run folder per write, holding its lock ({@code .run.lock}) from planning to the end of its
 * commit or abort (write.DriverCommit). The topic key is the first 16 hex digits of the topic's SHA-1, or
 * {@code rows} for a write whose rows name their topics.
 *
 * <p>Invariant: a run folder is seen by its own name only locked by its live driver (it is made and locked under a
 * {@link #NASCENT} name, then renamed); so a run whose lock can be taken is over, and its staged files were never
 * published past a commit: removing it loses nothing.
 *
 * <p>Invariant: only a run's driver makes its run folder; a task makes only its own folder inside a run folder that
 * is there ({@link #taskFolder}). So once the driver ends the run ({@link #endRun}: renamed out of the way, then
 * unlinked), a task attempt still running (one the failed job has not stopped yet) cannot make anything of the run
 * again: it fails instead. Made with every missing parent, as a task once did, the run folder came back after an
 * abort with that task's staged files.
 */
public final class StagingRuns {
    /** A run folder's name before it is locked: never listed as a run. */
    public static final String NASCENT = ".new-";
    /** A run folder's name while its driver removes it (renamed first): a leftover is a run that is over. */
    static final String OVER = ".over-";
    /** A nascent folder this old with its lock free is a driver killed between its mkdir and its rename: it holds
     *  only its lock file (tasks stage after the rename), so the wait costs nothing but makes the race impossible. */
    private static final long NASCENT_LEFTOVER_MS = 3_600_000L;

    private StagingRuns() {}

    /** {@code <root>/_seglog/staging/<writer>/<topic key>-jvm}: every run of one writer to one topic (null: rows name
     *  their topics). */
    public static Path writerStaging(Path root, String writer, String topic) {
        return RootFiles.metaPath(root, "staging", writer, key(topic) + "-jvm");
    }

    static String key(String topic) {
        if (topic == null) return "rows";
        try {
            StringBuilder hex = new StringBuilder();
            for (byte b : MessageDigest.getInstance("SHA-1").digest(topic.getBytes(StandardCharsets.UTF_8))) {
                hex.append(String.format("%02x", b));
            }
            return hex.substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A run's lock, {@code <run folder>/.run.lock}: free once its driver is done or dead (the kernel drops a killed
     *  process's flock). */
    public static FileLock runLock(Path run) {
        return new FileLock(run.resolve(".run.lock"), "staging run " + run.getFileName());
    }

    /**
     * Removes the runs under {@code runs} (one writer's folder for one topic) that are over, all but {@code mine}
     * (null: none kept); a live run (its lock held) is left to its driver. Best effort: a leftover costs only space,
     * and the next write of the writer (or the next DROP TABLE ... PURGE of the topic) tries again.
     */
    public static void removeOver(Path runs, Path mine) {
        if (!Files.isDirectory(runs, LinkOption.NOFOLLOW_LINKS)) return;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(runs)) {
            for (Path p : ds) {
                if (p.equals(mine)) continue;
                if (p.getFileName().toString().startsWith(NASCENT) && !nascentLeftover(p)) continue;
                try (FileLock over = runLock(p).acquire(0L)) {
                    TopicAdmin.deleteTree(p, false);   // a crash that undoes it leaves it over again
                } catch (LockedException live) {
                    // another driver's run, staging now: not ours to remove
                } catch (IOException | RuntimeException e) {
                    // this one stays (space only); the others are still looked at
                }
            }
        } catch (IOException | RuntimeException e) {
            // leftovers cost only space; the next write tries again
        }
    }

    /**
     * A task's folder {@code dir} inside its run's folder, made only while the run's folder is there (never made
     * again: the class invariant). Returns whether it is group-writable (the rule for the files made in it).
     */
    public static boolean taskFolder(Path dir) throws IOException {
        try {
            return GroupShared.createDirectory(dir);
        } catch (java.nio.file.NoSuchFileException gone) {
            throw new StorageException("staging run " + dir.getParent() + " is over (its write was committed or "
                + "aborted): this task attempt stages nothing", gone);
        }
    }

    /**
     * Ends a run (its driver's commit or abort, while it still holds the run's lock): the run's folder renamed to an
     * {@link #OVER} name first, so no task attempt still running can stage under the run's name again, then unlinked,
     * and the writer's folder for the topic and the writer's folder removed when that leaves them empty. Only this
     * run's folder is renamed or unlinked; another run's never is. Best effort: a leftover costs only space, and is
     * a run that is over for the next write of the writer ({@link #removeOver}).
     */
    public static void endRun(Path run) {
        Path over = run.resolveSibling(OVER + run.getFileName());
        Path doomed = over;
        try {
            Files.move(run, over, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (java.nio.file.NoSuchFileException ended) {
            doomed = null;               // ended already (a commit that failed removes its run, then its caller)
        } catch (IOException | RuntimeException e) {
            doomed = run;                // removed in place: a straggler may leave a file, swept as a run over
        }
        try {
            // not fsynced: a crash that undoes the removal leaves a run that is over (its lock free), which the
            // writer's next write removes (removeOver); its staged files were never published past a commit
            if (doomed != null) TopicAdmin.deleteTree(doomed, false);
        } catch (IOException | RuntimeException e) {
            return;                      // what stays is a run that is over: the writer's next write removes it
        }
        Path runs = run.getParent();
        if (removeIfEmpty(runs)) removeIfEmpty(runs.getParent());
    }

    /** Unlinks an empty folder; false when it holds something (a run made meanwhile: DriverCommit.startRun makes its
     *  parents again if they go under it) or cannot be removed. */
    private static boolean removeIfEmpty(Path dir) {
        try {
            Files.delete(dir);
            return true;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /**
     * A deleted topic's staging (DROP TABLE ... PURGE): every writer's runs to {@code topic} that are over, and the
     * writer's folder for the topic once empty. A run live now belongs to a write that commits after the delete (and
     * so creates the topic anew, as a write to a missing topic does); its driver removes it.
     */
    static void forgetTopic(Path root, String topic) throws IOException {
        Path staging = RootFiles.metaPath(root, "staging");
        if (!Files.isDirectory(staging, LinkOption.NOFOLLOW_LINKS)) return;
        String folder = key(topic) + "-jvm";
        try (DirectoryStream<Path> writers = Files.newDirectoryStream(staging)) {
            for (Path writer : writers) {
                if (!Files.isDirectory(writer, LinkOption.NOFOLLOW_LINKS)) continue;
                Path runs = writer.resolve(folder);
                if (!Files.isDirectory(runs, LinkOption.NOFOLLOW_LINKS)) continue;
                removeOver(runs, null);
                try {
                    Files.delete(runs);           // only when empty: a live run keeps it
                } catch (java.nio.file.DirectoryNotEmptyException live) {
                    // a live run's folder
                }
            }
        }
    }

    private static boolean nascentLeftover(Path p) {
        try {
            return System.currentTimeMillis() - Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toMillis()
                > NASCENT_LEFTOVER_MS;
        } catch (IOException e) {
            return false;
        }
    }
}
