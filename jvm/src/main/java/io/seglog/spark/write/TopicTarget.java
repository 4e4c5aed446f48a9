package io.seglog.spark.write;

import java.io.Serializable;
import java.util.Map;

import io.seglog.spark.format.AppendRules;
import io.seglog.spark.format.TopicMetadata;

/**
 * One topic as the write's tasks need it: its partition count, its rules for the stager, whether it is
 * compacted (every record needs a key, docs/spec.md §3.9) and where its out-of-range records go.
 */
public final class TopicTarget implements Serializable {
    private static final long serialVersionUID = 1L;
    final String name;
    final int partitions;
    final StageConfig stage;
    final int codec;
    final int segmentIndexBytes;
    final AppendRules append;     // the publisher's copy onto the active segment
    final boolean compacted;
    // message.timestamp.out.of.range.policy = quarantine on a CreateTime topic with a bound: the topic a record
    // whose timestamp is out of range goes to (quarantine.topic) instead of failing the write; else null
    final String quarantine;

    private TopicTarget(String name, int partitions, Map<String, Object> cfg) {
        this.name = name;
        this.partitions = partitions;
        this.codec = codec((String) cfg.get("compression.type"));
        this.stage = stageConfig(cfg, codec);
        this.segmentIndexBytes = ((Long) cfg.get("segment.index.bytes")).intValue();
        this.append = AppendRules.of(cfg, codec);
        String policy = (String) cfg.get("cleanup.policy");
        this.compacted = java.util.Arrays.asList(policy.split(",")).contains("compact");
        this.quarantine = "quarantine".equals(cfg.get("message.timestamp.out.of.range.policy"))
                && !stage.logAppendTime && stage.timeBounded() ? (String) cfg.get("quarantine.topic") : null;
    }

    static TopicTarget of(TopicMetadata meta) {
        return new TopicTarget(meta.name(), meta.partitions(), meta.topicConfig());
    }

    /** The publisher's rules for a topic with that (validated) configuration (StagedPublisher's copy). */
    public static AppendRules appendRules(Map<String, Object> cfg) {
        return AppendRules.of(cfg, codec((String) cfg.get("compression.type")));
    }

    /** The codec seglog writes for a compression.type (indexer/codec/compression.py's topic_codec):
     *  {@code producer} and {@code uncompressed} write uncompressed batches; Kafka's codec ids otherwise. */
    static int codec(String compressionType) {
        switch (compressionType) {
            case "producer": case "uncompressed": return 0;
            case "gzip": return 1;
            case "snappy": return 2;
            case "lz4": return 3;
            case "zstd": return 4;
            default: throw new IllegalArgumentException("compression.type " + compressionType);
        }
    }

    /**
     * One slot's rules for the stager, as tests/sink/jvm_stage.py's stage_config gives them: the batching budget
     * is indexer/log.py's batch_budget (batches of at most 1 MiB and max.message.bytes, less a compressed
     * topic's worst-case growth, and about half a segment). tests/sink/test_jvm_formats.py compares them.
     */
    public static StageConfig stageConfig(Map<String, Object> cfg) {
        return stageConfig(cfg, codec((String) cfg.get("compression.type")));
    }

    static StageConfig stageConfig(Map<String, Object> cfg, int codec) {
        long segmentBytes = (Long) cfg.get("segment.bytes");
        long maxMessage = (Long) cfg.get("max.message.bytes");
        long limit = maxMessage - (codec == 0 ? 0 : (maxMessage >> 6) + 64);
        long budget = Math.max(1, Math.min(Math.min(limit, 1L << 20), Math.max(segmentBytes / 2, 512)));
        return new StageConfig(segmentBytes, ((Long) cfg.get("segment.index.bytes")).intValue(),
                (Long) cfg.get("index.interval.bytes"), (Long) cfg.get("segment.ms"), (int) maxMessage, (int) budget,
                "LogAppendTime".equals(cfg.get("message.timestamp.type")),
                (Long) cfg.get("message.timestamp.before.max.ms"), (Long) cfg.get("message.timestamp.after.max.ms"), codec);
    }
}
