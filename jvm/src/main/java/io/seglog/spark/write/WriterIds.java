package io.seglog.spark.write;

import java.util.Set;
import java.util.regex.Pattern;

/**
 * The writer names of a topic's commit log, in two namespaces that can never meet (docs/spec.md §7.1): the
 * exactly-once skip rule (a version at or below a writer's last is skipped) must only ever compare a version
 * with the same application's own versions.
 * <ul>
 * <li>a user's: option {@code txnAppId}/{@code writerId} (SegmentLogSink's {@code writer_id}) and a streaming
 *   query's id, 1 to 200 characters of {@code [A-Za-z0-9._-]};</li>
 * <li>seglog's own: a plain append counts its appends under {@code @append} ({@code @append.<writerId>} when
 *   named), a character no user name holds.</li>
 * </ul>
 * Commit logs written before this rule hold plain appends under {@code append} and sink calls outside a query
 * under {@code default} (and Kafka imports under {@code seglog-import}), in the user's namespace: those names
 * are refused by name, so no txnAppId is ever skipped by their counters. {@code .} and {@code ..} are refused:
 * a writer names its staging folder. tests/conformance/writer_ids.json pins this rule and sink/writer_id.py's.
 */
final class WriterIds {
    private static final Pattern USER = Pattern.compile("[A-Za-z0-9._-]{1,200}");
    static final Set<String> RESERVED = Set.of("append", "default", "seglog-import", ".", "..");
    static final String PLAIN_APPEND = "@append";

    private WriterIds() {}

    /** Null if {@code name} is a writer a user may name, else why not (for the option's refusal). */
    static String refusal(String name) {
        if (name == null || !USER.matcher(name).matches()) return "allowed: 1 to 200 characters of [A-Za-z0-9._-]";
        if (RESERVED.contains(name)) {
            return "reserved: " + String.join(", ", new java.util.TreeSet<>(RESERVED)) + " name seglog's own writers "
                    + "(plain appends, calls outside a query, imports) in commit logs of earlier versions; give another name";
        }
        return null;
    }

    /** The writer a plain append records: seglog's namespace, never a txnAppId's. */
    static String plainAppend(String writerId) {
        return writerId == null ? PLAIN_APPEND : PLAIN_APPEND + "." + writerId;
    }
}
