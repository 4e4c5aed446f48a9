package io.seglog.spark.format;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The sink's commit log of one topic, read-only: {@code <root>/_seglog/commits/<topic>/<seq:020d>.json},
 * each file the full state, published whole (written under a temporary name, fsynced, then linked to
 * its seq name: docs/format.md, indexer/commit_log.py). The newest file's {@code end_offsets} is every
 * partition's committed end (the high watermark): readers never read past it. A partition it does not
 * name, or a topic with no commit log, has committed nothing.
 */
public final class CommitLogReader {
    private static final Pattern SEQ = Pattern.compile("(\\d{20})\\.json");
    /** A commit file's temporary name ({@code .<seq>.json.tmp-<suffix>}: CommitLogWriter's and indexer/commit_log.py's). */
    private static final Pattern TEMP = Pattern.compile("\\.\\d{20}\\.json\\.tmp-.+");
    private static final ObjectMapper JSON = new ObjectMapper();
    /** ASCII digits only (Integer.parseInt alone takes other scripts' digits; the core's reader does not). */
    private static final Pattern PARTITION_KEY = Pattern.compile("[+-]?[0-9]+");
    private static final int ATTEMPTS = 1000;

    private CommitLogReader() {}

    public static Path dir(Path root, String topic) {
        return RootFiles.metaPath(root, "commits", topic);
    }

    /** partition -> committed end offset (exclusive), read-only; empty before the first commit. */
    public static Map<Integer, Long> committedEnds(Path root, String topic) {
        return ends(latest(root, topic));
    }

    /**
     * The newest commit file whole (its writers map too: what a committer merges into and the
     * exactly-once skip reads), checked as the Python core checks it; empty before the first commit.
     */
    public static java.util.Optional<CommitState> latest(Path root, String topic) {
        return newest(dir(root, topic));
    }

    /** A state's end offsets (an immutable map); empty before the first commit. */
    private static Map<Integer, Long> ends(java.util.Optional<CommitState> state) {
        return state.map(CommitState::endOffsets).orElse(Map.of());
    }

    /** The newest commit file of {@code dir}, read whole: the one parser of every reader ({@link #parseState}). */
    private static java.util.Optional<CommitState> newest(Path dir) {
        return newest(dir, null);
    }

    /** {@link #newest(Path)}, and the listing that named it put in {@code listed} (null: not kept): a committer
     *  prunes by it (CommitLogWriter) instead of listing the folder again. */
    static java.util.Optional<CommitState> newest(Path dir, TreeSet<Long> listed) {
        return newest(dir, listed, null);
    }

    /** {@link #newest(Path, TreeSet)}, and the temporary commit files the same listing named put in {@code temps}
     *  (null: not kept). */
    static java.util.Optional<CommitState> newest(Path dir, TreeSet<Long> listed, java.util.List<Path> temps) {
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            if (temps != null) temps.clear();
            TreeSet<Long> seqs = seqs(dir, temps);
            if (listed != null) {
                listed.clear();
                listed.addAll(seqs);
            }
            if (seqs.isEmpty()) return java.util.Optional.empty();
            Path newest = file(dir, seqs.last());
            try {
                return java.util.Optional.of(parseState(newest, Files.readAllBytes(newest), seqs.last()));
            } catch (NoSuchFileException e) {
                continue;   // pruned by a newer commit between listing and reading
            } catch (IOException e) {
                throw new CorruptLogException("cannot read commit file " + newest + ": " + e, e);
            }
        }
        throw new CorruptLogException("commit log " + dir + " keeps changing under the reader");
    }

    /** The seqs of the commit files in {@code dir}, ascending; empty when there is no commit log. */
    static TreeSet<Long> seqs(Path dir) {
        return seqs(dir, null);
    }

    /** {@link #seqs(Path)}, and the temporary commit files listed put in {@code temps} (null: not kept). */
    private static TreeSet<Long> seqs(Path dir, java.util.List<Path> temps) {
        TreeSet<Long> seqs = new TreeSet<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                Matcher m = SEQ.matcher(name);
                if (m.matches()) seqs.add(Long.parseLong(m.group(1)));
                else if (temps != null && TEMP.matcher(name).matches()) temps.add(p);
            }
        } catch (NoSuchFileException e) {
            return seqs;
        } catch (IOException e) {
            throw new CorruptLogException("cannot list the commit log " + dir + ": " + e, e);
        }
        return seqs;
    }

    /** Every field, as indexer/commit_log.py's {@code _read}: a missing or mistyped one is corruption. */
    static CommitState parseState(Path path, byte[] raw, long seq) {
        try {
            JsonNode doc = JSON.readTree(raw);
            FormatVersion.read(doc, FormatVersion.COMMIT_FILE, path, "commit file");   // first: a newer file is refused whole
            long fileSeq = integral(doc, "seq");
            if (fileSeq != seq) {
                throw new CorruptLogException("commit file " + path + " holds seq " + fileSeq + ", not " + seq);
            }
            Map<Integer, Long> ends = new HashMap<>();
            Iterator<Map.Entry<String, JsonNode>> it = object(doc, "end_offsets").fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!PARTITION_KEY.matcher(e.getKey()).matches()) throw new IllegalArgumentException("partition " + e.getKey());
                ends.put(Integer.parseInt(e.getKey()), integralValue(e.getValue(), "end offset"));
            }
            Map<String, Long> writers = new HashMap<>();
            it = object(doc, "writers").fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                writers.put(e.getKey(), integralValue(e.getValue(), "writer batch"));
            }
            JsonNode writer = doc.get("writer_id");
            if (writer == null || !writer.isTextual()) throw new IllegalArgumentException("writer_id " + writer);
            long time = doc.has("time") ? integral(doc, "time") : 0L;
            return new CommitState(seq, writer.asText(), integral(doc, "batch_id"), ends, writers, time);
        } catch (IOException | RuntimeException e) {
            if (e instanceof CorruptLogException) throw (CorruptLogException) e;
            if (e instanceof UnsupportedFormatVersionException) throw (UnsupportedFormatVersionException) e;
            throw new CorruptLogException("commit file " + path + " is unreadable: " + e, e);
        }
    }

    private static JsonNode object(JsonNode doc, String field) {
        JsonNode n = doc.get(field);
        if (n == null || !n.isObject()) throw new IllegalArgumentException(field + " is " + n);
        return n;
    }

    private static long integral(JsonNode doc, String field) {
        return integralValue(doc.get(field), field);
    }

    private static long integralValue(JsonNode n, String what) {
        if (n == null || !n.isIntegralNumber() || !n.canConvertToLong()) {
            throw new IllegalArgumentException(what + " is " + n);
        }
        return n.asLong();
    }

    static Path file(Path dir, long seq) {
        return dir.resolve(String.format("%020d.json", seq));
    }

    /**
     * One topic's commit log followed from the seq seen last (a stream's triggers, issue 24): the files
     * after it are probed by name, and the newest read; nothing new costs two file checks, not a listing
     * and a parse of every partition's end.
     *
     * <p>Why a probe is enough: a committer links seq newest + 1 (docs/format.md), so seqs are taken in
     * order, and a commit prunes older files in ascending seq order (indexer/commit_log.py {@code _prune}).
     * So when seq n + 1 is missing and, looked at after that, seq n is still there, n + 1 had not been
     * written yet (had it been pruned, n would have been pruned before it): n was the newest at the first
     * look. Anything else (the seq seen last gone, a long run of new seqs) lists the folder.
     */
    public static final class Tail {
        private static final int PROBES = 16;
        private final Path dir;
        private long seenSeq = -1;   // -1: no commit seen
        private Map<Integer, Long> seenEnds = Map.of();

        public Tail(Path root, String topic) {
            this.dir = dir(root, topic);
        }

        /** As {@link CommitLogReader#committedEnds}, as of now. */
        public Map<Integer, Long> committedEnds() {
            if (seenSeq >= 0) {
                long n = seenSeq;
                while (n - seenSeq < PROBES && Files.exists(file(dir, n + 1))) n++;
                if (n - seenSeq < PROBES && Files.exists(file(dir, n))) {
                    if (n == seenSeq) return seenEnds;
                    try {
                        seenEnds = parseState(file(dir, n), Files.readAllBytes(file(dir, n)), n).endOffsets();
                        seenSeq = n;
                        return seenEnds;
                    } catch (NoSuchFileException e) {
                        // pruned under the probe by many commits since: list
                    } catch (IOException e) {
                        throw new CorruptLogException("cannot read commit file " + file(dir, n) + ": " + e, e);
                    }
                }
            }
            java.util.Optional<CommitState> newest = newest(dir);
            seenSeq = newest.map(CommitState::seq).orElse(-1L);
            seenEnds = ends(newest);
            return seenEnds;
        }
    }
}
