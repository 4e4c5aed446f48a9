package io.seglog.spark.read;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * What the remote segment metadata log under the root says of one partition (docs/tiered-storage.md §3;
 * indexer/remote/metadata.py writes it): lines {@code <crc32c hex8> <JSON>}, each base's last record its
 * state ({@code copied} = live). A torn last line reads as absent; a bad line before it is damage. The
 * reader uses it only to refuse reads that need the remote tier (RemoteTierNotReadableException).
 */
final class RemoteTier {
    private static final ObjectMapper JSON = new ObjectMapper();

    record Segment(long base, long next, long maxTimestamp) {}

    private final List<Segment> live;

    private RemoteTier(List<Segment> live) {
        this.live = live;
    }

    static Path metadataPath(Path root, String topic, int partition) {
        return root.resolve("_seglog").resolve("remote").resolve(topic + "-" + partition + ".meta");
    }

    static RemoteTier read(Path root, String topic, int partition) {
        Path path = metadataPath(root, topic, partition);
        byte[] data;
        try {
            data = Files.readAllBytes(path);
        } catch (NoSuchFileException e) {
            return new RemoteTier(List.of());
        } catch (IOException e) {
            throw new UncheckedIOException("seglog source: cannot read " + path, e);
        }
        String text = new String(data, StandardCharsets.UTF_8);
        String[] lines = text.split("\n", -1);
        int whole = lines.length - 1;            // the last piece follows the last newline: "" unless torn
        TreeMap<Long, Segment> state = new TreeMap<>();
        for (int n = 0; n < whole; n++) {
            JsonNode rec = decode(lines[n]);
            if (rec == null) {
                if (n == whole - 1 && lines[whole].isEmpty()) break;      // a torn last append
                throw new IllegalStateException("seglog source: " + path + ": line " + (n + 1) + " is damaged (bad CRC or "
                    + "shape): the remote segment metadata log cannot be trusted past it");
            }
            long base = rec.get("base").asLong();
            String op = rec.get("op").asText();
            if (op.equals("copied")) {
                state.put(base, new Segment(base, rec.get("next").asLong(), rec.get("max_ts").asLong()));
            } else {
                state.remove(base);              // deleting or deleted: no longer part of the log
            }
        }
        return new RemoteTier(new ArrayList<>(state.values()));
    }

    private static JsonNode decode(String line) {
        if (line.length() < 10 || line.charAt(8) != ' ') return null;
        byte[] body = line.substring(9).getBytes(StandardCharsets.UTF_8);
        CRC32C crc = new CRC32C();
        crc.update(body);
        try {
            if (Long.parseLong(line.substring(0, 8), 16) != crc.getValue()) return null;
            JsonNode rec = JSON.readTree(body);
            if (rec == null || !rec.has("op") || !rec.has("base")) return null;
            return rec;
        } catch (NumberFormatException | IOException e) {
            return null;
        }
    }

    /** The remote tier's start when it holds offsets below {@code localStart}, else -1. */
    long startBelow(long localStart) {
        return !live.isEmpty() && live.get(0).base() < localStart ? live.get(0).base() : -1;
    }

    /** The largest record timestamp of the remote segments below {@code localStart} (-1: none). */
    long maxTimestampBelow(long localStart) {
        long max = -1;
        for (Segment s : live) if (s.base() < localStart) max = Math.max(max, s.maxTimestamp());
        return max;
    }

    /**
     * Fails when [from, end) reaches below {@code localStart} into what the remote tier holds:
     * format("seglog") does not read the remote tier, and those offsets are not lost.
     */
    void requireLocal(String topic, int partition, long from, long end, long localStart, String why) {
        long remoteStart = startBelow(localStart);
        if (remoteStart < 0) return;
        long first = Math.max(from, remoteStart);
        if (first < Math.min(end, localStart)) {
            throw new RemoteTierNotReadableException(topic, partition, first, localStart, why);
        }
    }
}
