"""A test tool: the JVM stager (`io.seglog.spark.write.StagedWrite`) driven over py4j from a classic session,
so tests/sink/test_jvm_writer.py and test_jvm_formats.py can publish its staged segments with the Python core
(`indexer.staged.publish`) and compare them with what `Log` writes. It was the Python sink's executor side
before SegmentLogSink became a layer over `format("seglog")` (whose tasks use the same `SegmentStager`).

`run_staged_write` hands a DataFrame, projected to `STAGED_COLUMNS`, to `StagedWrite.run`: every input task
encodes its rows, per log partition (slot), into staged segments under the staging folder, and reports them.

Retries: Spark returns one report per input partition, from the attempt that succeeded; a failed
or speculative attempt stages into its own folder (`t<task>-<taskAttemptId>`), which is never published
and goes with the run's staging folder.
"""
from __future__ import annotations

import json
from pathlib import Path

from seglog.indexer.codec.compression import topic_codec
from seglog.indexer.log import batch_budget
from seglog.jvm import check_session
from tests.oracles.staged import RENAME_MIN_BYTES, StagedSegment

INT64_MAX = (1 << 63) - 1
# The write job's input columns, by position: the row's topic's first slot, its partition count, its
# partition where SQL decides it (the partition column, a null key's spread; NULL: Kafka's murmur2 of
# the key, computed by the JVM writer), then the record.
STAGED_COLUMNS = ("_base", "_n", "_p", "key", "value", "ts", "headers")
# Kafka's default partitioner as a SQL function, from the connector jar (kafka-clients' murmur2; no
# javac at run time): `spark.udf.registerJavaFunction(MURMUR2_UDF, MURMUR2_CLASS, IntegerType())`.
MURMUR2_UDF = "seglog_murmur2_partition"
MURMUR2_CLASS = "io.seglog.spark.write.Murmur2Partition"


def stage_config(config, *, unbounded_time: bool = False) -> dict:
    """One slot's rules for the JVM writer, from a validated TopicConfig (`unbounded_time`: the
    quarantine routing already moved out-of-range rows, so tasks must not refuse borderline ones)."""
    cap = (lambda v: min(int(v), INT64_MAX))
    return {
        "segment.bytes": int(config["segment.bytes"]),
        "segment.index.bytes": int(config["segment.index.bytes"]),
        "index.interval.bytes": int(config["index.interval.bytes"]),
        "segment.ms": cap(config["segment.ms"]),
        "max.message.bytes": int(config["max.message.bytes"]),
        "max_batch_bytes": batch_budget(config),   # the one batching rule, Log's
        "log_append_time": bool(config.log_append_time),
        "message.timestamp.before.max.ms": INT64_MAX if unbounded_time else cap(config["message.timestamp.before.max.ms"]),
        "message.timestamp.after.max.ms": INT64_MAX if unbounded_time else cap(config["message.timestamp.after.max.ms"]),
        # the tasks compress each batch with the topic's codec, as Log.append_columns does
        "codec": topic_codec(config["compression.type"]),
    }


def run_staged_write(staged_df, staging: Path, slot_configs: list[dict], now: int,
                     rename_min_bytes: int = RENAME_MIN_BYTES) -> list[dict]:
    """Run the write job; one report per input task: {task, attempt, outputs: [{slot, records,
    bytes, segments: [{stem, size, records, batches}]}]}. `now` (ms) is the delivery's time, the
    driver's: every task stamps LogAppendTime records and null timestamps with it, and checks
    message.timestamp.before/after.max.ms against it. Staged segments of `rename_min_bytes` or more
    (those the publisher renames in) are written back to disk by their task as it runs."""
    spark = staged_df.sparkSession
    check_session(spark)   # a session without the connector jar: a typed error naming the jar
    plan = json.dumps({"staging": str(staging), "slots": slot_configs, "now": int(now),
                       "rename_min_bytes": int(rename_min_bytes)})
    jvm = spark.sparkContext._jvm
    reports = jvm.io.seglog.spark.write.StagedWrite.run(staged_df._jdf, plan)
    return [json.loads(r) for r in reports]


def staged_by_slot(reports: list[dict]) -> dict[int, list[StagedSegment]]:
    """Each slot's staged segments in task order (then in the order the task wrote them)."""
    out: dict[int, list[StagedSegment]] = {}
    for report in sorted(reports, key=lambda r: r["task"]):
        for o in report["outputs"]:
            out.setdefault(o["slot"], []).extend(
                StagedSegment(s["stem"], s["size"], s["records"], s["batches"], bool(s.get("durable"))) for s in o["segments"])
    return out
