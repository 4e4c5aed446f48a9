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
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int ATTEMPTS = 1000;

    private CommitLogReader() {}

    public static Path dir(Path root, String topic) {
        return root.resolve("_seglog").resolve("commits").resolve(topic);
    }

    /** partition -> committed end offset (exclusive); empty before the first commit. */
    public static Map<Integer, Long> committedEnds(Path root, String topic) {
        Path dir = dir(root, topic);
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            TreeSet<Long> seqs = new TreeSet<>();
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
                for (Path p : ds) {
                    Matcher m = SEQ.matcher(p.getFileName().toString());
                    if (m.matches()) seqs.add(Long.parseLong(m.group(1)));
                }
            } catch (NoSuchFileException e) {
                return new HashMap<>();
            } catch (IOException e) {
                throw new CorruptLogException("cannot list the commit log " + dir + ": " + e, e);
            }
            if (seqs.isEmpty()) return new HashMap<>();
            Path newest = dir.resolve(String.format("%020d.json", seqs.last()));
            byte[] raw;
            try {
                raw = Files.readAllBytes(newest);
            } catch (NoSuchFileException e) {
                continue;   // pruned by a newer commit between listing and reading
            } catch (IOException e) {
                throw new CorruptLogException("cannot read commit file " + newest + ": " + e, e);
            }
            return parse(newest, raw, seqs.last());
        }
        throw new CorruptLogException("commit log " + dir + " keeps changing under the reader");
    }

    private static Map<Integer, Long> parse(Path path, byte[] raw, long seq) {
        try {
            JsonNode doc = JSON.readTree(raw);
            if (doc.get("seq").asLong(-1) != seq) {
                throw new CorruptLogException("commit file " + path + " holds seq " + doc.get("seq") + ", not " + seq);
            }
            Map<Integer, Long> ends = new HashMap<>();
            Iterator<Map.Entry<String, JsonNode>> it = doc.get("end_offsets").fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!e.getValue().canConvertToLong()) throw new IllegalArgumentException("end offset " + e.getValue());
                ends.put(Integer.parseInt(e.getKey()), e.getValue().asLong());
            }
            return ends;
        } catch (IOException | RuntimeException e) {
            if (e instanceof CorruptLogException) throw (CorruptLogException) e;
            throw new CorruptLogException("commit file " + path + " is unreadable: " + e, e);
        }
    }
}
