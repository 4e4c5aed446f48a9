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

    /** The fields by the names sink/jvm_write.py's stage_config gives them (the format tests compare them). */
    public String toJson() {
        return "{\"segment.bytes\": " + segmentBytes + ", \"segment.index.bytes\": " + indexBytes
                + ", \"index.interval.bytes\": " + indexInterval + ", \"segment.ms\": " + segmentMs
                + ", \"max.message.bytes\": " + maxMessageBytes + ", \"max_batch_bytes\": " + maxBatchBytes
                + ", \"log_append_time\": " + logAppendTime + ", \"message.timestamp.before.max.ms\": " + beforeMaxMs
                + ", \"message.timestamp.after.max.ms\": " + afterMaxMs + ", \"codec\": " + codec + "}";
    }
}
