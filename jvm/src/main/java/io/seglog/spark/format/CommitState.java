package io.seglog.spark.format;

import java.util.Map;
import java.util.TreeMap;

/**
 * One commit file of a topic's commit log: the whole state after one commit (docs/format.md,
 * "Files"; indexer/commit_log.py {@code CommitState}, the same fields and the same JSON).
 *
 * @param seq        the file's sequence number (its name)
 * @param writerId   who committed this state
 * @param batchId    the batch (or transaction version) it committed; -1 for an operator's truncation
 * @param endOffsets every partition's committed end offset (exclusive) carried forward
 * @param writers    every writer id's last committed batch id (the exactly-once skip rule reads it)
 * @param time       when, in ms since the epoch
 */
public record CommitState(long seq, String writerId, long batchId, Map<Integer, Long> endOffsets,
                          Map<String, Long> writers, long time) {

    public CommitState {
        endOffsets = Map.copyOf(endOffsets);
        writers = Map.copyOf(writers);
    }

    /** The last batch id {@code writer} committed, or null. */
    public Long lastBatch(String writer) {
        return writers.get(writer);
    }

    /**
     * The file's bytes, as the Python core writes them ({@code json.dumps(state.to_json(),
     * sort_keys=True)}): keys sorted at every level (the end offsets' partition numbers as strings,
     * so "10" sorts before "2"), Python's default separators.
     */
    public String toJson() {
        StringBuilder out = new StringBuilder(128);
        out.append("{\"batch_id\": ").append(batchId).append(", \"end_offsets\": {");
        TreeMap<String, Long> ends = new TreeMap<>();
        endOffsets.forEach((p, o) -> ends.put(Integer.toString(p), o));
        appendMap(out, ends);
        out.append("}, \"seq\": ").append(seq).append(", \"time\": ").append(time)
                .append(", \"version\": ").append(FormatVersion.COMMIT_FILE).append(", \"writer_id\": ");
        PythonJson.string(out, writerId);
        out.append(", \"writers\": {");
        appendMap(out, new TreeMap<>(writers));
        out.append("}}");
        return out.toString();
    }

    private static void appendMap(StringBuilder out, TreeMap<String, Long> map) {
        boolean first = true;
        for (Map.Entry<String, Long> e : map.entrySet()) {
            if (!first) out.append(", ");
            first = false;
            PythonJson.string(out, e.getKey());
            out.append(": ").append(e.getValue());
        }
    }
}
