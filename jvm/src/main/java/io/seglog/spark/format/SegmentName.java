package io.seglog.spark.format;

import java.util.Set;

/**
 * The rule for segment file names, the Python core's {@code names.parse_segment_file}; both are held to
 * tests/conformance/segment_names.json. A name whose stem (before its first dot) is ASCII digits and whose tail
 * is a segment file's ({@code .log}, {@code .index}, {@code .timeindex}, each optionally {@code .deleted},
 * {@code .cleaned} or {@code .swap}) is a segment file, and its stem must be exactly 20 digits of at most
 * 2^63-1 ({@link SegmentNameException} naming it otherwise: Kafka parses any such stem as a long and refuses
 * the log when it does not fit). Any other name is no segment file.
 */
public final class SegmentName {
    private static final Set<String> TAILS = Set.of(
        ".log", ".index", ".timeindex",
        ".log.deleted", ".index.deleted", ".timeindex.deleted",
        ".log.cleaned", ".index.cleaned", ".timeindex.cleaned",
        ".log.swap", ".index.swap", ".timeindex.swap");
    /** 20-digit stems compare as strings as their values do. */
    private static final String MAX = String.format("%020d", Long.MAX_VALUE);

    /** A segment file's base offset and tail ({@code ".log"}, {@code ".log.swap"}, ...). */
    public static final class Parsed {
        private final long base;
        private final String tail;

        public Parsed(long base, String tail) {
            this.base = base;
            this.tail = tail;
        }

        public long base() { return base; }
        public String tail() { return tail; }

        @Override public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Parsed)) return false;
            Parsed that = (Parsed) o;
            return base == that.base
                    && java.util.Objects.equals(tail, that.tail);
        }

        @Override public int hashCode() { return java.util.Objects.hash(base, tail); }

        @Override public String toString() { return "Parsed[base=" + base + ", tail=" + tail + "]"; }
    }

    private SegmentName() {}

    /** The parsed name, or null for a name that is no segment file. */
    public static Parsed parse(String name) {
        int dot = name.indexOf('.');
        if (dot <= 0 || !TAILS.contains(name.substring(dot))) return null;
        for (int i = 0; i < dot; i++) {
            char c = name.charAt(i);
            if (c < '0' || c > '9') return null;
        }
        String stem = name.substring(0, dot);
        if (stem.length() != 20) {
            throw new SegmentNameException("segment file '" + name + "': its base offset has " + stem.length()
                + " digits; a segment file name is exactly 20 digits (zero-padded) of at most " + Long.MAX_VALUE);
        }
        if (stem.compareTo(MAX) > 0) {
            throw new SegmentNameException("segment file '" + name + "': base offset " + stem + " is past 2^63-1 ("
                + Long.MAX_VALUE + "); a segment file name is 20 digits of at most that");
        }
        return new Parsed(Long.parseLong(stem), name.substring(dot));
    }
}
