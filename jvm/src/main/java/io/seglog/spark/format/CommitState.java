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
public final class CommitState {
    private final long seq;
    private final String writerId;
    private final long batchId;
    private final Map<Integer, Long> endOffsets;
    private final Map<String, Long> writers;
    private final long time;

    public CommitState(long seq, String writerId, long batchId, Map<Integer, Long> endOffsets, Map<String, Long> writers, long time) {
        endOffsets = Map.copyOf(endOffsets);
        writers = Map.copyOf(writers);
        this.seq = seq;
        this.writerId = writerId;
        this.batchId = batchId;
        this.endOffsets = endOffsets;
        this.writers = writers;
        this.time = time;
    }

    public long seq() { return seq; }
    public String writerId() { return writerId; }
    public long batchId() { return batchId; }
    public Map<Integer, Long> endOffsets() { return endOffsets; }
    public Map<String, Long> writers() { return writers; }
    public long time() { return time; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof CommitState)) return false;
        CommitState that = (CommitState) o;
        return seq == that.seq
                && java.util.Objects.equals(writerId, that.writerId)
                && batchId == that.batchId
                && java.util.Objects.equals(endOffsets, that.endOffsets)
                && java.util.Objects.equals(writers, that.writers)
                && time == that.time;
    }

    @Override public int hashCode() { return java.util.Objects.hash(seq, writerId, batchId, endOffsets, writers, time); }

    @Override public String toString() { return "CommitState[seq=" + seq + ", writerId=" + writerId + ", batchId=" + batchId + ", endOffsets=" + endOffsets + ", writers=" + writers + ", time=" + time + "]"; }

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
