"""KAFKA-506's use case end to end (docs/compaction.md, "Restoring state"): a streaming job writes its
state changes as keyed records (a null value deletes the key) to a compacted topic through
SegmentLogSink; the sidecar's clean keeps the latest record per key; after a restart,
`spark.read.format("seglog")` of that topic reduced to the latest value per key equals the state
the job had. Also: the sink refuses a null key for a compacted topic before writing anything."""
from __future__ import annotations

import json
import os

import pytest

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.errors import MissingKeyError
from seglog.indexer import Log, LogRoot
from seglog.sink.segment_log_sink import SegmentLogSink

pytestmark = pytest.mark.spark
TOPIC = "state"
CONFIG = {"cleanup.policy": "compact", "segment.bytes": 2048, "segment.ms": 1 << 62,
          "min.cleanable.dirty.ratio": 0.1, "delete.retention.ms": 86_400_000}


def changes(batch: int) -> list[dict]:
    """Batch `batch`'s state changes: one per key (a batch holds no two changes of one key)."""
    out = []
    for k in range(40):
        if (k + batch) % 3 == 0:
            continue                                   # this key does not change in this batch
        value = None if (k * 7 + batch) % 11 == 0 else f"state-of-{k}-after-{batch}"
        out.append({"k": f"key-{k}", "v": value})
    return out


def restore(spark, root: str) -> dict[str, str]:
    """The restart's read (the JVM reader, `spark.read.format("seglog")`): latest value per key, deleted
    keys dropped."""
    df = spark.read.format("seglog").option("topic", TOPIC).load(root)
    return latest_per_key(df)


def latest_per_key(df) -> dict[str, str]:
    latest = df.groupBy("key").agg({"offset": "max"}).withColumnRenamed("max(offset)", "offset")
    rows = df.join(latest, ["key", "offset"]).where("value IS NOT NULL").collect()
    return {bytes(r["key"]).decode(): bytes(r["value"]).decode() for r in rows}


def write_batches(spark, src, root, ckpt, batches, state):
    """The job: state changes of `batches` through SegmentLogSink (availableNow); `state` follows them."""
    for b in batches:
        f = src / f"batch-{b}.json"
        f.write_text("".join(json.dumps(c) + "\n" for c in changes(b)))
        os.utime(f, (1_700_000_000 + b, 1_700_000_000 + b))
        for c in changes(b):
            if c["v"] is None:
                state.pop(c["k"], None)
            else:
                state[c["k"]] = c["v"]
    stream = (spark.readStream.schema("k string, v string").option("maxFilesPerTrigger", 1).json(str(src))
              .selectExpr("CAST(k AS BINARY) AS key", "CAST(v AS BINARY) AS value"))
    q = (stream.writeStream.foreachBatch(SegmentLogSink(root, topic=TOPIC, partitions=2, config=CONFIG))
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None


def sidecar_clean(root: str) -> None:
    """The sidecar's clean job (a roll first: the active segment is never cleaned)."""
    lr = LogRoot(root)
    for p in range(2):
        with lr.open_log(TOPIC, p, outside_commit_log=True) as log:
            log.roll()
    result = Jobs(parse_config({"root": root}, source="test"), Metrics()).run("clean")
    assert result.ok and set(result.done) == {f"{TOPIC}-0", f"{TOPIC}-1"}, result.summary()


def test_state_restored_from_a_compacted_topic(spark, tmp_path):
    from seglog.source import register

    assert register(spark) == "jvm"                   # format("seglog") is the JVM reader here
    src, root = tmp_path / "changes", str(tmp_path / "log")
    src.mkdir()
    state: dict[str, str] = {}
    write_batches(spark, src, root, tmp_path / "ckpt", range(8), state)
    written = sum(len(changes(b)) for b in range(8))
    sidecar_clean(root)
    lr = LogRoot(root)
    kept = 0
    for p in range(2):
        with lr.open_log(TOPIC, p, readonly=True) as log:
            assert log.verify() == []
            kept += sum(1 for _ in log.read())
    assert kept < written / 2                        # compaction removed the superseded changes

    # "Restart": a fresh read of the topic restores exactly the state the job had.
    assert restore(spark, root) == state

    # A read positioned inside a cleaned range starts at the next surviving offset.
    with lr.open_log(TOPIC, 0, readonly=True) as log:
        offsets = [r.offset for r in log.read()]
    gap = next(o + 1 for o, n in zip(offsets, offsets[1:]) if n > o + 1)
    start = {TOPIC: {"0": gap, "1": -2}}
    rows = (spark.read.format("seglog").option("topic", TOPIC).option("startingOffsets", json.dumps(start))
            .load(root).where("partition = 0").select("offset").collect())
    assert sorted(r["offset"] for r in rows) == [o for o in offsets if o >= gap]

    # The job goes on, the sidecar cleans again (over a cleaned section): the state restores again, by a
    # batch read and by a stream (readStream.format("seglog"), availableNow) of the whole topic.
    write_batches(spark, src, root, tmp_path / "ckpt", range(8, 14), state)
    sidecar_clean(root)
    assert restore(spark, root) == state
    q = (spark.readStream.format("seglog").option("topic", TOPIC).option("startingOffsets", "earliest").load(root)
         .select("key", "value", "offset").writeStream.format("parquet").option("path", str(tmp_path / "replay"))
         .option("checkpointLocation", str(tmp_path / "replay-ckpt")).trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None
    assert latest_per_key(spark.read.parquet(str(tmp_path / "replay"))) == state


def test_sink_refuses_a_null_key_for_a_compacted_topic(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, writer_id="w0", topic=TOPIC, partitions=2, config=CONFIG)
    sink(spark.range(5).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST('v' AS BINARY) AS value"), 0)
    bad = spark.range(5).selectExpr("IF(id = 3, NULL, CAST(CAST(id AS STRING) AS BINARY)) AS key",
                                    "CAST('w' AS BINARY) AS value")
    with pytest.raises(MissingKeyError, match="'state' is compacted.*null key; .*nothing was written"):
        sink(bad, 1)
    with pytest.raises(MissingKeyError, match="no 'key' column"):
        sink(spark.range(2).selectExpr("CAST('w' AS BINARY) AS value"), 1)
    for p in range(2):
        with Log.open(tmp_path / f"{TOPIC}-{p}", readonly=True) as log:
            assert all(r.value == b"v" for r in log.read())
    assert sum(1 for p in range(2) for _ in Log.open(tmp_path / f"{TOPIC}-{p}", readonly=True).read()) == 5
