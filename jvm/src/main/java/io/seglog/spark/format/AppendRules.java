package io.seglog.spark.format;

import java.io.Serializable;
import java.util.Map;

/**
 * A topic's rules for appends onto a partition's active segment (docs/spec.md §3.2; the Python core's
 * indexer/segment.py): the roll rule ({@link #rolls}) and the index rule's interval, each ported from its one
 * home there, so a copy by {@link StagedPublisher} writes the bytes the core's {@code Log.append_encoded}
 * writes for the same batches.
 *
 * @param segmentBytes segment.bytes
 * @param segmentMs segment.ms
 * @param indexBytes segment.index.bytes: both indexes' capacity (the time index keeps its last slot for the seal entry)
 * @param indexIntervalBytes index.interval.bytes
 * @param codec the topic's codec id (0: none), which every copied batch must already carry
 */
public final class AppendRules implements Serializable {
    private static final long serialVersionUID = 1L;
    private final long segmentBytes;
    private final long segmentMs;
    private final int indexBytes;
    private final long indexIntervalBytes;
    private final int codec;

    public AppendRules(long segmentBytes, long segmentMs, int indexBytes, long indexIntervalBytes, int codec) {
        this.segmentBytes = segmentBytes;
        this.segmentMs = segmentMs;
        this.indexBytes = indexBytes;
        this.indexIntervalBytes = indexIntervalBytes;
        this.codec = codec;
    }

    public long segmentBytes() { return segmentBytes; }
    public long segmentMs() { return segmentMs; }
    public int indexBytes() { return indexBytes; }
    public long indexIntervalBytes() { return indexIntervalBytes; }
    public int codec() { return codec; }

    @Override public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof AppendRules)) return false;
        AppendRules that = (AppendRules) o;
        return segmentBytes == that.segmentBytes
                && segmentMs == that.segmentMs
                && indexBytes == that.indexBytes
                && indexIntervalBytes == that.indexIntervalBytes
                && codec == that.codec;
    }

    @Override public int hashCode() { return java.util.Objects.hash(segmentBytes, segmentMs, indexBytes, indexIntervalBytes, codec); }

    @Override public String toString() { return "AppendRules[segmentBytes=" + segmentBytes + ", segmentMs=" + segmentMs + ", indexBytes=" + indexBytes + ", indexIntervalBytes=" + indexIntervalBytes + ", codec=" + codec + "]"; }

    static final long INT32_MAX = Integer.MAX_VALUE;

    /** From a validated topic configuration (TopicConfigRules.validate) and its codec. */
    public static AppendRules of(Map<String, Object> cfg, int codec) {
        return new AppendRules((Long) cfg.get("segment.bytes"), (Long) cfg.get("segment.ms"),
                ((Long) cfg.get("segment.index.bytes")).intValue(), (Long) cfg.get("index.interval.bytes"), codec);
    }

    /** Entries an index preallocated to segment.index.bytes holds (the core's MmapIndex _target_slots). */
    int slots(int entrySize) {
        return indexBytes / entrySize;
    }

    /**
     * The one roll rule (the core's LogSegment._rolls): would a batch of {@code batchBytes} ending at
     * {@code lastOffset} with largest timestamp {@code maxTs} roll a segment based at {@code base} holding
     * {@code size} bytes, whose first timestamp is {@code firstTs} (-1: none yet; then its age since
     * {@code createdMs} counts) and whose indexes have room for {@code entriesRoom} more batches? An empty
     * segment takes anything; then segment.bytes, a full index, an offset beyond int32 of the base, segment.ms.
     */
    public boolean rolls(long size, long base, long firstTs, long createdMs, long batchBytes, long lastOffset, long maxTs,
                         long now, long entriesRoom) {
        if (size == 0) return false;
        if (size + batchBytes > segmentBytes || entriesRoom <= 0) return true;
        if (lastOffset - base > INT32_MAX) return true;
        return late(firstTs, createdMs, maxTs, now);
    }

    /** KIP-33 (the core's LogSegment._late): the batch's timestamp passes the segment's first by segment.ms; a
     *  batch without timestamps does not roll a segment that has them; a segment without any rolls by age. */
    boolean late(long firstTs, long createdMs, long maxTs, long now) {
        if (firstTs >= 0) return maxTs >= 0 && maxTs - firstTs > segmentMs;
        return now - createdMs > segmentMs;
    }
}
