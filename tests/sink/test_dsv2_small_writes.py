"""Small `format("seglog")` writes leave no tiny segments (issue 25): the driver's publish copies staged segments
below 1 MiB onto each partition's active segment, as the Python sink does, so twenty micro-batches leave one
segment per partition, not twenty. Every row is read back by the core and by `format("seglog")`, and
`seglog verify` finds nothing wrong."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from seglog.indexer.topics import load_topic

pytestmark = pytest.mark.spark

PARTITIONS, BATCHES, ROWS = 2, 20, 15


def _segments(root: Path, topic: str) -> dict[int, list[str]]:
    return {p: sorted(f.name for f in (root / f"{topic}-{p}").glob("*.log")) for p in range(PARTITIONS)}


def _core_keys(root: Path, topic: str) -> list[bytes]:
    meta = load_topic(root, topic)
    ends = CommitLog(root, topic).end_offsets()
    keys = []
    for p in range(meta.partitions):
        with Log.open(root / f"{topic}-{p}", meta.config, readonly=True) as log:
            keys += [r.key for r in log.read(0, ends.get(p, 0))]
    return keys


def _verify_cli(root: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "seglog", "verify", str(root)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)


def _check(spark, root: Path, topic: str, expected: list[bytes]) -> None:
    assert sorted(_core_keys(root, topic)) == sorted(expected)
    read = spark.read.format("seglog").option("topic", topic).load(str(root))
    assert sorted(bytes(r.key) for r in read.collect()) == sorted(expected)
    _verify_cli(root)


def test_twenty_micro_batches_leave_one_segment_per_partition(spark, tmp_path):
    src, root, ckpt = tmp_path / "src", tmp_path / "log", tmp_path / "ckpt"
    src.mkdir()
    for f in range(BATCHES):
        path = src / f"part-{f:04d}.json"
        path.write_text("".join(json.dumps({"k": f"f{f}-{j}", "v": f"value {f} {j}" * 3}) + "\n" for j in range(ROWS)))
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))   # the file source orders by modification time
    q = (spark.readStream.schema("k string, v string").option("maxFilesPerTrigger", 1).json(str(src))
         .selectExpr("k AS key", "v AS value")
         .writeStream.format("seglog").option("topic", "ev").option("partitions", str(PARTITIONS))
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start(str(root)))
    q.awaitTermination()
    assert CommitLog(root, "ev").last_batch(q.id) == BATCHES - 1          # twenty micro-batches, each committed
    assert _segments(root, "ev") == {p: [f"{0:020d}.log"] for p in range(PARTITIONS)}
    _check(spark, root, "ev", [f"f{f}-{j}".encode() for f in range(BATCHES) for j in range(ROWS)])


def test_small_idempotent_batch_writes_copy_and_large_ones_rename(spark, tmp_path):
    root = tmp_path / "log"

    def write(v: int, **extra):
        df = spark.createDataFrame([(f"v{v}-{j}".encode(), b"x" * 50) for j in range(ROWS)], "key binary, value binary")
        w = (df.repartition(2).write.format("seglog").mode("append").option("topic", "b")
             .option("partitions", str(PARTITIONS)).option("txnAppId", "app").option("txnVersion", str(v)))
        for k, val in extra.items():
            w = w.option(k, val)
        w.save(str(root))

    for v in range(BATCHES):
        write(v)
    write(BATCHES - 1)                                                     # a re-run: skipped, nothing copied twice
    assert _segments(root, "b") == {p: [f"{0:020d}.log"] for p in range(PARTITIONS)}
    # renameMinBytes=0 (hidden, for tests): every staged segment is renamed in, a new segment each
    for v in range(BATCHES, BATCHES + 2):
        write(v, renameMinBytes="0")
    assert all(len(logs) >= 2 for logs in _segments(root, "b").values()), _segments(root, "b")
    _check(spark, root, "b", [f"v{v}-{j}".encode() for v in range(BATCHES + 2) for j in range(ROWS)])
