package io.seglog.spark.format;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.CRC32C;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The per-partition remote segment metadata log read-only (docs/tiered-storage.md §3),
 * {@code <root>/_seglog/remote/<topic>-<partition>.meta}, with the Python side's rules
 * (indexer/remote/metadata.py; tests/remote/test_jvm_remote_meta.py holds both to the same answers):
 * one record a line, {@code <crc32c, 8 hex digits> <JSON>\n}; the state of a base is its last record.
 *
 * <p>Invariants kept here: a torn last line (no newline, or a whole last line with a bad CRC or shape) is a
 * crash's append and reads as absent; a bad line anywhere else is damage, a {@link CorruptLogException}
 * naming the file and the line, never skipped. A {@code deleting} base is gone for readers.
 */
public final class RemoteSegmentLog {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> OPS = Set.of("copying", "copied", "deleting", "deleted");

    private RemoteSegmentLog() {
    }

    /** One object's facts as the manifest records them. */
    public static final class FileFacts implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        private final long size;
        private final String sha256;

        public FileFacts(long size, String sha256) {
            this.size = size;
            this.sha256 = sha256;
        }

        public long size() { return size; }
        public String sha256() { return sha256; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof FileFacts)) return false;
            FileFacts that = (FileFacts) o;
            return size == that.size
                    && java.util.Objects.equals(sha256, that.sha256);
        }

        @Override public int hashCode() { return java.util.Objects.hash(size, sha256); }

        @Override public String toString() { return "FileFacts[size=" + size + ", sha256=" + sha256 + "]"; }
    }

    /** A tiered segment as its {@code copied} record describes it. */
    public static final class Entry implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        private final long base;
        private final long next;
        private final long last;
        private final long maxTs;
        private final FileFacts log;
        private final FileFacts index;
        private final FileFacts timeindex;

        public Entry(long base, long next, long last, long maxTs, FileFacts log, FileFacts index, FileFacts timeindex) {
            this.base = base;
            this.next = next;
            this.last = last;
            this.maxTs = maxTs;
            this.log = log;
            this.index = index;
            this.timeindex = timeindex;
        }

        public long base() { return base; }
        public long next() { return next; }
        public long last() { return last; }
        public long maxTs() { return maxTs; }
        public FileFacts log() { return log; }
        public FileFacts index() { return index; }
        public FileFacts timeindex() { return timeindex; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Entry)) return false;
            Entry that = (Entry) o;
            return base == that.base
                    && next == that.next
                    && last == that.last
                    && maxTs == that.maxTs
                    && java.util.Objects.equals(log, that.log)
                    && java.util.Objects.equals(index, that.index)
                    && java.util.Objects.equals(timeindex, that.timeindex);
        }

        @Override public int hashCode() { return java.util.Objects.hash(base, next, last, maxTs, log, index, timeindex); }

        @Override public String toString() { return "Entry[base=" + base + ", next=" + next + ", last=" + last + ", maxTs=" + maxTs + ", log=" + log + ", index=" + index + ", timeindex=" + timeindex + "]"; }
    }

    /** The metadata log read: each base's last state. */
    public static final class State {
        public final TreeMap<Long, Entry> live = new TreeMap<>();       // copied
        public final TreeMap<Long, Entry> deleting = new TreeMap<>();   // gone for readers, objects going
        public final TreeSet<Long> deleted = new TreeSet<>();
        long copiedEnd = -1;                                            // the largest next of any copied record
        public boolean torn;                                            // a torn last line was ignored

        /** The live remote segments, oldest first. */
        public List<Entry> segments() {
            return Collections.unmodifiableList(new ArrayList<>(live.values()));
        }

        /** The remote log start: the smallest live base; -1 when the remote tier holds nothing. */
        public long start() {
            return live.isEmpty() ? -1 : live.firstKey();
        }

        /** The remote end: the largest {@code next} ever recorded copied (also of segments since deleted: nothing
         *  below it is copied again); -1 when none. */
        public long end() {
            return copiedEnd;
        }
    }

    public static Path path(Path root, String topic, int partition) {
        return RootFiles.metaPath(root, "remote", topic + "-" + partition + ".meta");
    }

    public static State read(Path root, String topic, int partition) {
        return read(path(root, topic, partition));
    }

    /**
     * The first offset of the partition that anything may change: its remote end, 0 when nothing was ever tiered
     * (the Python side's {@code mutable_from}, indexer/remote/metadata.py). What is tiered is immutable
     * (docs/tiered-storage.md §4): a cut below it would let new records reuse offsets the remote tier holds.
     */
    public static long mutableFrom(Path root, String topic, int partition) {
        return Math.max(0, read(root, topic, partition).end());
    }

    public static State read(Path file) {
        State state = new State();
        byte[] data;
        try {
            data = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return state;
        } catch (IOException e) {
            throw new CorruptLogException("cannot read " + file + ": " + e, e);
        }
        List<int[]> lines = new ArrayList<>();      // [from, to) of each whole line, newline excluded
        int from = 0;
        for (int i = 0; i < data.length; i++) {
            if (data[i] == '\n') {
                lines.add(new int[] {from, i});
                from = i + 1;
            }
        }
        boolean tail = from < data.length;          // bytes after the last newline: a torn append
        for (int n = 1; n <= lines.size(); n++) {
            int[] l = lines.get(n - 1);
            JsonNode rec = decode(data, l[0], l[1]);
            if (rec == null) {
                if (n == lines.size() && !tail) {   // a whole last line with a bad CRC: a torn append
                    state.torn = true;
                    break;
                }
                throw new CorruptLogException(file + ": line " + n + " is damaged (bad CRC or shape): the remote segment "
                    + "metadata log cannot be trusted past it");
            }
            apply(state, rec, file, n);
        }
        state.torn |= tail;
        return state;
    }

    /** The record of a whole line, or null when its CRC or shape is wrong. */
    private static JsonNode decode(byte[] data, int from, int to) {
        if (to - from < 10 || data[from + 8] != ' ') return null;
        long crc;
        try {
            crc = Long.parseLong(new String(data, from, 8, StandardCharsets.US_ASCII), 16);
        } catch (NumberFormatException e) {
            return null;
        }
        CRC32C c = new CRC32C();
        c.update(data, from + 9, to - from - 9);
        if (c.getValue() != crc) return null;
        JsonNode rec;
        try {
            rec = JSON.readTree(data, from + 9, to - from - 9);
        } catch (IOException e) {
            return null;
        }
        if (rec == null || !rec.isObject() || !rec.path("op").isTextual() || !OPS.contains(rec.get("op").asText())
            || !rec.path("base").isIntegralNumber()) {
            return null;
        }
        return rec;
    }

    private static void apply(State state, JsonNode rec, Path file, int n) {
        long base = rec.get("base").asLong();
        switch (rec.get("op").asText()) {
            case "copying":
                // a copy started: not part of the log until recorded copied (its objects are the sweep's)
                break;
            case "copied": {
                Entry e = entry(rec, base, file, n);
                state.live.put(base, e);
                state.copiedEnd = Math.max(state.copiedEnd, e.next);
                state.deleting.remove(base);
                state.deleted.remove(base);
                break;
            }
            case "deleting": {
                Entry e = state.live.remove(base);
                if (e != null) state.deleting.put(base, e);
                break;
            }
            default:
                state.live.remove(base);
                state.deleting.remove(base);
                state.deleted.add(base);
        }
    }

    private static Entry entry(JsonNode rec, long base, Path file, int n) {
        try {
            JsonNode files = rec.get("files");
            return new Entry(base, number(rec, "next"), number(rec, "last"), number(rec, "max_ts"),
                facts(files, "log"), facts(files, "index"), facts(files, "timeindex"));
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new CorruptLogException(file + ": line " + n + ": a copied record lacks its segment's fields");
        }
    }

    private static long number(JsonNode node, String key) {
        JsonNode v = node.get(key);
        if (v == null || !v.isNumber()) throw new IllegalArgumentException(key);
        return v.asLong();
    }

    private static FileFacts facts(JsonNode files, String name) {
        JsonNode f = files.get(name);
        if (f == null || !f.isObject() || !f.path("sha256").isTextual()) throw new IllegalArgumentException(name);
        return new FileFacts(number(f, "size"), f.get("sha256").asText());
    }

    /** Tests and tools: the state as one line of text (the differential test compares it with the Python side's). */
    public static String describe(State s) {
        StringBuilder out = new StringBuilder();
        out.append("live=").append(s.live.keySet()).append(" deleting=").append(s.deleting.keySet())
            .append(" deleted=").append(s.deleted).append(" start=").append(s.start()).append(" end=").append(s.end())
            .append(" torn=").append(s.torn);
        for (Map.Entry<Long, Entry> e : s.live.entrySet()) {
            Entry v = e.getValue();
            out.append(" [").append(v.base).append(',').append(v.next).append(',').append(v.last).append(',').append(v.maxTs)
                .append(',').append(v.log.size()).append(']');
        }
        return out.toString();
    }
}
