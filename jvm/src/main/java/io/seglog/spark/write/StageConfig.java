package io.seglog.spark.write;

import java.io.Serializable;

/** One log partition's write rules, from its topic's configuration (docs/spec.md §3.1, §3.2, §5). */
public final class StageConfig implements Serializable {
    private static final long serialVersionUID = 1L;

    final long segmentBytes;
    final int indexBytes;          // segment.index.bytes: both indexes' capacity
    final long indexInterval;      // index.interval.bytes
    final long segmentMs;
    final int maxMessageBytes;
    final int maxBatchBytes;       // the batching rule's budget (Log.default_max_batch_bytes)
    final boolean logAppendTime;
    final long beforeMaxMs;        // message.timestamp.before.max.ms (Long.MAX_VALUE: unbounded)
    final long afterMaxMs;
    final int codec;               // the topic's codec id (indexer/codec/compression.py's topic_codec; 0: none)

    public StageConfig(long segmentBytes, int indexBytes, long indexInterval, long segmentMs, int maxMessageBytes,
                       int maxBatchBytes, boolean logAppendTime, long beforeMaxMs, long afterMaxMs, int codec) {
        this.segmentBytes = segmentBytes;
        this.indexBytes = indexBytes;
        this.indexInterval = indexInterval;
        this.segmentMs = segmentMs;
        this.maxMessageBytes = maxMessageBytes;
        this.maxBatchBytes = maxBatchBytes;
        this.logAppendTime = logAppendTime;
        this.beforeMaxMs = beforeMaxMs;
        this.afterMaxMs = afterMaxMs;
        this.codec = codec;
    }

    /**
     * Log._append's rule (KIP-937), its one home in the jar: a CreateTime {@code ts} further in the past than
     * message.timestamp.before.max.ms or further in the future than message.timestamp.after.max.ms from
     * {@code now}; the key broken and its bound ({@code message.timestamp.after.max.ms=3600000}), else null.
     */
    String timeLimitBroken(long ts, long now) {
        if (now - ts > beforeMaxMs) return "message.timestamp.before.max.ms=" + beforeMaxMs;
        if (ts - now > afterMaxMs) return "message.timestamp.after.max.ms=" + afterMaxMs;
        return null;
    }

    /** Whether some CreateTime can be out of range (both bounds unbounded: none can). */
    boolean timeBounded() {
        return Math.min(beforeMaxMs, afterMaxMs) < Long.MAX_VALUE;
    }

    /** The fields by the names tests/sink/jvm_stage.py's stage_config gives them (the format tests compare them). */
    public String toJson() {
        return "{\"segment.bytes\": " + segmentBytes + ", \"segment.index.bytes\": " + indexBytes
                + ", \"index.interval.bytes\": " + indexInterval + ", \"segment.ms\": " + segmentMs
                + ", \"max.message.bytes\": " + maxMessageBytes + ", \"max_batch_bytes\": " + maxBatchBytes
                + ", \"log_append_time\": " + logAppendTime + ", \"message.timestamp.before.max.ms\": " + beforeMaxMs
                + ", \"message.timestamp.after.max.ms\": " + afterMaxMs + ", \"codec\": " + codec + "}";
    }
}
