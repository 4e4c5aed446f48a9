"""KAFKA-506's use case end to end (docs/compaction.md, "Restoring state"): a streaming job writes its
state changes as keyed records (a null value deletes the key) to a compacted topic through
SegmentLogSink; the sidecar's clean keeps the latest record per key; after a restart,
`spark.read.format("seglog")` of that topic reduced to the latest value per key equals the state
the job had (read by the Python Spark source, seglog.source, in a new process). Also: the sink
refuses a null key for a compacted topic before writing anything."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

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


RESTART = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from seglog.source import register
    root, topic, gap = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    print("reader:", register(spark, python_fallback=True), flush=True)
    df = spark.read.format("seglog").option("topic", topic).load(root)
    latest = df.groupBy("key").agg({"offset": "max"}).withColumnRenamed("max(offset)", "offset")
    rows = df.join(latest, ["key", "offset"]).where("value IS NOT NULL").collect()
    print(json.dumps({bytes(r["key"]).decode(): bytes(r["value"]).decode() for r in rows}), flush=True)
    start = json.dumps({topic: {"0": gap, "1": -2}})
    from_gap = (spark.read.format("seglog").option("topic", topic).option("startingOffsets", start).load(root)
                .where("partition = 0").select("offset").collect())
    print(json.dumps(sorted(r["offset"] for r in from_gap)), flush=True)
""")


def restart_and_restore(root: str, gap: int) -> tuple[str, dict[str, str], list[int]]:
    """A new process (the restarted job) reads the topic through the Python Spark source
    (seglog.source, in a session without the connector jar) and reduces it to the latest value per
    key, deleted keys dropped; it also reads partition 0 from `gap`, an offset the clean removed."""
    out = subprocess.run([sys.executable, "-c", RESTART, root, TOPIC, str(gap)], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    reader, state, from_gap = out.stdout.strip().splitlines()[-3:]
    return reader, json.loads(state), json.loads(from_gap)


def test_state_restored_from_a_compacted_topic(spark, tmp_path):
    src, root = tmp_path / "changes", str(tmp_path / "log")
    src.mkdir()
    state: dict[str, str] = {}
    for b in range(8):
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
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    q.awaitTermination()
    written = sum(len(changes(b)) for b in range(8))

    # The sidecar's clean job (a roll first: the active segment is never cleaned).
    lr = LogRoot(root)
    for p in range(2):
        with lr.open_log(TOPIC, p) as log:
            log.roll()
    result = Jobs(parse_config({"root": root}, source="test"), Metrics()).run("clean")
    assert result.ok and set(result.done) == {f"{TOPIC}-0", f"{TOPIC}-1"}, result.summary()
    kept = 0
    for p in range(2):
        with lr.open_log(TOPIC, p, readonly=True) as log:
            assert log.verify() == []
            kept += sum(1 for _ in log.read())
    assert kept < written / 2                        # compaction removed the superseded changes

    # "Restart": a new process reads the topic and restores exactly the state the job had; a read
    # positioned inside a cleaned range starts at the next surviving offset.
    with lr.open_log(TOPIC, 0, readonly=True) as log:
        offsets = [r.offset for r in log.read()]
    gap = next(o + 1 for o, n in zip(offsets, offsets[1:]) if n > o + 1)
    reader, restored, from_gap = restart_and_restore(root, gap)
    assert reader == "reader: python"
    assert restored == state
    assert from_gap == [o for o in offsets if o >= gap]


def test_sink_refuses_a_null_key_for_a_compacted_topic(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, topic=TOPIC, partitions=2, config=CONFIG)
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
