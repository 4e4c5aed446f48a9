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
