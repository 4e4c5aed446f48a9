package io.seglog.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code <root>/log-start-offset-checkpoint} in Kafka's text format (docs/format.md): a version line
 * {@code 0}, a count, then {@code topic partition offset} lines. Rewritten atomically by retention, so
 * a reader sees the old or the new file. {@link #parse} refuses a malformed file naming the file and line, as the
 * core's reader does (tests/conformance/checkpoints.json); readers then take it as empty, as the core's do.
 */
public final class LogStartCheckpoint {
    public static final String FILE = "log-start-offset-checkpoint";

    private LogStartCheckpoint() {}

    /** "topic-partition" -> log start offset. */
    public static Map<String, Long> read(Path root) {
        return readFile(root.resolve(FILE));
    }

    /**
     * Write the root's checkpoint (Kafka's text: version, count, {@code topic partition offset} lines sorted by
     * topic then partition, as indexer/checkpoint.py writes them), atomically. The caller holds its lock
     * ({@code _seglog/locks/log-start-offset-checkpoint.lock}). {@code entries}: "topic-partition" to offset.
     */
    public static void write(Path root, Map<String, Long> entries) throws java.io.IOException {
        writeFile(root.resolve(FILE), entries);
    }

    /** Any offsets file in Kafka's text format (also the cleaner's), written as {@link #write} writes the log
     *  start checkpoint; the caller holds the file's lock. */
    static void writeFile(Path file, Map<String, Long> entries) throws java.io.IOException {
        java.util.List<String[]> rows = new java.util.ArrayList<>();
        for (Map.Entry<String, Long> e : entries.entrySet()) {
            int dash = e.getKey().lastIndexOf('-');
            rows.add(new String[] {e.getKey().substring(0, dash), e.getKey().substring(dash + 1), e.getValue().toString()});
        }
        rows.sort(java.util.Comparator.<String[], String>comparing(r -> r[0]).thenComparingInt(r -> Integer.parseInt(r[1])));
        StringBuilder out = new StringBuilder("0\n").append(rows.size()).append('\n');
        for (String[] r : rows) out.append(r[0]).append(' ').append(r[1]).append(' ').append(r[2]).append('\n');
        AtomicFile.write(file, out.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** Any offsets file in Kafka's text format (also the cleaner's: {@link OffsetGaps}), as readers take it: a
     *  missing, unreadable or malformed file holds no entry (each log then starts at its first segment, as Kafka's
     *  log manager resets a malformed checkpoint; the core's `verify` reports it, a writable open rewrites it). */
    static Map<String, Long> readFile(Path file) {
        try {
            return parse(file);
        } catch (CorruptCheckpointException e) {
            // once per file in this JVM: readers read it on every plan and trigger
            if (WARNED.size() < 1024 && WARNED.add(file.toAbsolutePath().toString())) {
                LOG.warn("{}; read as holding no entry: each log starts at its first segment", e.getMessage());
            }
            return new HashMap<>();
        } catch (IOException e) {
            return new HashMap<>();
        }
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(LogStartCheckpoint.class);
    private static final java.util.Set<String> WARNED = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private static final Pattern INT = Pattern.compile("[+-]?[0-9]+");
    /** {@code topic partition offset} split on ASCII whitespace as Kafka's reader splits it (a trailing run dropped,
     *  a leading one an empty first field: malformed). */
    private static final Pattern ENTRY = Pattern.compile("(\\S+)\\s+([+-]?[0-9]+)\\s+([+-]?[0-9]+)\\s*");

    /**
     * Kafka's offset checkpoint text read strictly, as indexer/checkpoint.py's read_offsets_file reads it
     * (tests/conformance/checkpoints.json holds both to the same cases): "topic-partition" to offset. A missing or
     * empty file, or a version line alone, holds no entry; anything else that is not a version line 0, a count
     * line, then exactly that many {@code topic partition offset} lines (partition an int32, offset an int64) is a
     * {@link CorruptCheckpointException} naming the file and the first bad line. Lines end at {@code \n} only.
     */
    public static Map<String, Long> parse(Path file) throws IOException {
        byte[] raw;
        try {
            raw = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return new HashMap<>();
        }
        Map<String, Long> out = new HashMap<>();
        if (raw.length == 0) return out;
        List<String> lines = new ArrayList<>();       // null: a line that is not UTF-8
        int start = 0;
        for (int i = 0; i <= raw.length; i++) {
            if (i == raw.length || raw[i] == '\n') {
                lines.add(utf8(raw, start, i));
                start = i + 1;
            }
        }
        if (raw[raw.length - 1] == '\n') lines.remove(lines.size() - 1);   // the newline that ends the last line
        java.math.BigInteger version = intLine(file, lines, 0, "the version");
        if (version.signum() != 0) throw new CorruptCheckpointException(file, 1, "unknown version " + version + " (expected 0)");
        if (lines.size() == 1) return out;            // as Kafka: a version line alone holds no entry
        java.math.BigInteger count = intLine(file, lines, 1, "the entry count");
        for (int i = 2; i < lines.size(); i++) {
            String line = lines.get(i);
            Matcher m = line == null ? null : ENTRY.matcher(line);
            if (m == null || !m.matches()) {
                throw new CorruptCheckpointException(file, i + 1, "malformed line " + shown(line) + ": expected `topic partition offset`");
            }
            try {
                out.put(m.group(1) + "-" + Integer.parseInt(m.group(2)), Long.parseLong(m.group(3)));   // the last wins
            } catch (NumberFormatException e) {
                throw new CorruptCheckpointException(file, i + 1, "malformed line " + shown(line)
                    + ": the partition must be an int32 and the offset an int64");
            }
        }
        if (!count.equals(java.math.BigInteger.valueOf(lines.size() - 2))) {
            throw new CorruptCheckpointException(file, 2, "the count line says " + count + " entries, the file holds "
                + (lines.size() - 2) + " entry lines");
        }
        return out;
    }

    private static java.math.BigInteger intLine(Path file, List<String> lines, int i, String what) {
        String line = lines.get(i);
        if (line == null || !INT.matcher(line).matches()) {
            throw new CorruptCheckpointException(file, i + 1, "malformed line " + shown(line) + ": expected " + what);
        }
        return new java.math.BigInteger(line.startsWith("+") ? line.substring(1) : line);
    }

    private static String utf8(byte[] raw, int from, int to) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
                .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
                .decode(java.nio.ByteBuffer.wrap(raw, from, to - from)).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            return null;
        }
    }

    private static String shown(String line) {
        if (line == null) return "(not UTF-8)";
        return "'" + (line.length() <= 80 ? line : line.substring(0, 80) + "...") + "'";
    }
}
