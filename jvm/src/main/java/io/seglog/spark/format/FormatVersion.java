package io.seglog.spark.format;

import java.nio.file.Path;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The format versions of seglog's JSON files (docs/format.md, "Format versions"): each file carries one integer,
 * {@code version}, that its writer wrote; a reader reads the versions it knows and refuses a newer one with
 * {@link UnsupportedFormatVersionException} naming both versions and the file, never reading it in part (as
 * Delta's protocol action carries the minimum reader version). A file without the field is an older seglog's:
 * version 1. The Python twin is indexer/format_version.py; tests/conformance/commit_files.json and
 * topic_metadata.json pin both.
 */
public final class FormatVersion {
    /** {@code <root>/_seglog/commits/<topic>/<seq>.json} (CommitLogWriter, CommitLogReader). */
    public static final int COMMIT_FILE = 1;
    /** {@code <root>/_seglog/topics/<topic>.json} (TopicCatalog). */
    public static final int TOPIC_METADATA = 1;

    private FormatVersion() {}

    /**
     * The version of a parsed file ({@code doc}), checked before any other field: 1 when missing;
     * IllegalArgumentException when it is not an integer >= 1 (the caller's corrupt-file error);
     * {@link UnsupportedFormatVersionException} when it is above {@code supported}.
     */
    static long read(JsonNode doc, int supported, Path path, String what) {
        if (doc == null || !doc.isObject()) throw new IllegalArgumentException("not a JSON object");
        JsonNode v = doc.get("version");
        if (v == null) return 1;
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 1) {
            throw new IllegalArgumentException("version is " + v + ", not an integer >= 1 within int64");
        }
        long version = v.asLong();
        if (version > supported) {
            throw new UnsupportedFormatVersionException(what + " " + path + " has format version " + version
                    + "; this seglog reads up to version " + supported + ": a newer seglog wrote it, so upgrade seglog"
                    + " (the wheel and its jar) to read it", version, supported);
        }
        return version;
    }
}
