package io.seglog.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code <root>/log-start-offset-checkpoint} in Kafka's text format (docs/format.md): a version line
 * {@code 0}, a count, then {@code topic partition offset} lines. Rewritten atomically by retention, so
 * a reader sees the old or the new file. A malformed file never stops reads (recovery reports it):
 * it reads as empty, as the Python core does.
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
        java.util.List<String[]> rows = new java.util.ArrayList<>();
        for (Map.Entry<String, Long> e : entries.entrySet()) {
            int dash = e.getKey().lastIndexOf('-');
            rows.add(new String[] {e.getKey().substring(0, dash), e.getKey().substring(dash + 1), e.getValue().toString()});
        }
        rows.sort(java.util.Comparator.<String[], String>comparing(r -> r[0]).thenComparingInt(r -> Integer.parseInt(r[1])));
        StringBuilder out = new StringBuilder("0\n").append(rows.size()).append('\n');
        for (String[] r : rows) out.append(r[0]).append(' ').append(r[1]).append(' ').append(r[2]).append('\n');
        AtomicFile.write(root.resolve(FILE), out.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** Any offsets file in Kafka's text format (also the cleaner's: {@link OffsetGaps}). */
    static Map<String, Long> readFile(Path file) {
        Map<String, Long> out = new HashMap<>();
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return out;
        } catch (IOException e) {
            return out;
        }
        try {
            if (lines.size() < 2 || Integer.parseInt(lines.get(0).trim()) != 0) return new HashMap<>();
            int count = Integer.parseInt(lines.get(1).trim());
            for (int i = 2; i < 2 + count && i < lines.size(); i++) {
                String[] f = lines.get(i).split(" ");
                out.put(f[0] + "-" + Integer.parseInt(f[1]), Long.parseLong(f[2]));
            }
            return out;
        } catch (RuntimeException e) {
            return new HashMap<>();
        }
    }
}
