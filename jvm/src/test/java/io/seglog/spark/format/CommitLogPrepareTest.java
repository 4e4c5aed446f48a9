package io.seglog.spark.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A commit prepared before the segments it names are durable (CommitLogWriter.prepare, force, link: issue 41): no
 * reader sees it before its link; a commit that came in since the state it merged into is not overwritten but merged
 * again; one given up leaves nothing; and a commit starts from the state {@code latest} read.
 */
class CommitLogPrepareTest {
    @TempDir
    Path root;

    private List<String> files() throws IOException {
        try (Stream<Path> s = Files.list(CommitLogReader.dir(root, "t"))) {
            return s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        }
    }

    @Test
    void aPreparedCommitIsSeenOnlyOnceLinked() throws IOException {
        new CommitLogWriter(root, "t").commit("w", 0, Map.of(0, 10L), false);
        CommitLogWriter log = new CommitLogWriter(root, "t");
        log.latest();
        try (CommitLogWriter.Prepared p = log.prepare("w", 1, Map.of(0, 25L, 1, 5L), false)) {
            assertEquals(Map.of(0, 10L), CommitLogReader.committedEnds(root, "t"));   // written, not linked
            assertThrows(IllegalStateException.class, () -> log.link(p));           // not forced yet
            p.force();
            assertEquals(Map.of(0, 10L), CommitLogReader.committedEnds(root, "t"));   // forced, not linked
            CommitState state = log.link(p);
            assertEquals(1, state.seq());
        }
        assertEquals(Map.of(0, 25L, 1, 5L), CommitLogReader.committedEnds(root, "t"));
        assertEquals(1L, CommitLogReader.latest(root, "t").get().lastBatch("w"));
        assertEquals(List.of(String.format("%020d.json", 0), String.format("%020d.json", 1)), files());   // no temp left
    }

    @Test
    void aCommitThatCameInMeanwhileIsMergedNotOverwritten() throws IOException {
        new CommitLogWriter(root, "t").commit("w", 0, Map.of(0, 10L), false);
        CommitLogWriter log = new CommitLogWriter(root, "t");
        log.latest();
        CommitLogWriter.Prepared p = log.prepare("w", 1, Map.of(0, 20L), false);
        p.force();
        // another committer (a writer of partition 1) takes seq 1 meanwhile
        new CommitLogWriter(root, "t").commit("other", 7, Map.of(1, 3L), false);
        CommitState state = log.link(p);
        assertEquals(2, state.seq());
        assertEquals(Map.of(0, 20L, 1, 3L), CommitLogReader.committedEnds(root, "t"));
        assertEquals(Map.of("w", 1L, "other", 7L), state.writers());
        assertEquals(3, files().size());
    }

    @Test
    void aPreparedCommitGivenUpLeavesNothing() throws IOException {
        new CommitLogWriter(root, "t").commit("w", 0, Map.of(0, 10L), false);
        List<String> before = files();
        CommitLogWriter log = new CommitLogWriter(root, "t");
        try (CommitLogWriter.Prepared p = log.prepare("w", 1, Map.of(0, 20L), false)) {
            p.force();
        }
        assertEquals(before, files());
        try (CommitLogWriter.Prepared p = log.prepare("w", 1, Map.of(0, 20L), false)) {
            // closed unforced (a publish that failed before the commit file was forced)
        }
        assertEquals(before, files());
        assertEquals(Map.of(0, 10L), CommitLogReader.committedEnds(root, "t"));
    }

    @Test
    void latestAgainReadsTheLogOnlyWhenACommitCameIn() throws IOException {
        CommitLogWriter log = new CommitLogWriter(root, "t");
        assertEquals(java.util.Optional.empty(), log.latest());
        new CommitLogWriter(root, "t").commit("w", 0, Map.of(0, 10L), false);
        assertEquals(0, log.latestAgain().get().seq());            // an empty log is read again
        // nothing came in: the state read is kept, not read again (the newest file, garbled here, is not parsed)
        Path newest = CommitLogReader.dir(root, "t").resolve(String.format("%020d.json", 0));
        byte[] good = Files.readAllBytes(newest);
        Files.write(newest, "garbled".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        assertEquals(0, log.latestAgain().get().seq());
        assertThrows(CorruptLogException.class, () -> CommitLogReader.latest(root, "t"));
        Files.write(newest, good);
        // a commit came in: read again, and the next commit starts from it
        new CommitLogWriter(root, "t").commit("other", 3, Map.of(1, 5L), false);
        assertEquals(1, log.latestAgain().get().seq());
        CommitState state = log.commit("w", 1, Map.of(0, 12L), false);
        assertEquals(2, state.seq());
        assertEquals(Map.of(0, 12L, 1, 5L), state.endOffsets());
    }

    @Test
    void aCommitStartsFromTheStateLatestRead() throws IOException {
        new CommitLogWriter(root, "t").commit("w", 0, Map.of(0, 10L), false);
        CommitLogWriter log = new CommitLogWriter(root, "t");
        assertEquals(0, log.latest().get().seq());
        // the state read is gone before the commit (as no committer under the writer lock would do): the commit still
        // links seq 1 from it, without reading the log again
        Files.delete(CommitLogReader.dir(root, "t").resolve(String.format("%020d.json", 0)));
        CommitState state = log.commit("w", 1, Map.of(1, 4L), false);
        assertEquals(1, state.seq());
        assertEquals(Map.of(0, 10L, 1, 4L), state.endOffsets());
        // the next commit reads the log again
        assertEquals(2, log.commit("w", 2, Map.of(1, 6L), false).seq());
    }

    @Test
    void theTemporaryFilesALatestReadListedAreRemovedAndNoOtherFile() throws IOException {
        new CommitLogWriter(root, "t").commit("w", 0, Map.of(0, 10L), false);
        // a committer killed between its commit file's write and its link (seq 1), and a Python one's (seq 1 too)
        CommitLogWriter dead = new CommitLogWriter(root, "t");
        dead.latest();
        dead.prepare("w", 1, Map.of(0, 20L), false);   // never forced, linked or closed: the kill
        Path python = CommitLogReader.dir(root, "t").resolve(String.format(".%020d.json.tmp-1-1-abcdef", 1));
        Files.write(python, new byte[] {'{'});
        CommitLogWriter log = new CommitLogWriter(root, "t");
        log.latest();
        // listed after that read: not this writer's to remove (the lock's argument covers only what the read saw)
        Path later = CommitLogReader.dir(root, "t").resolve(String.format(".%020d.json.tmp-2-2-abcdef", 1));
        Files.write(later, new byte[] {'{'});
        try (CommitLogWriter.Prepared p = log.prepare("w", 1, Map.of(0, 30L), false)) {
            p.force();
            log.link(p);
        }
        assertEquals(2, log.removeDeadTemps());
        assertEquals(List.of(later.getFileName().toString(), String.format("%020d.json", 0), String.format("%020d.json", 1)),
                files());
        assertEquals(Map.of(0, 30L), CommitLogReader.committedEnds(root, "t"));
        assertEquals(0, log.removeDeadTemps());   // once
    }
}
