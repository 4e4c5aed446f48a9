"""Merging small segments (docs/spec.md §3.10) with Spark on both sides: the sink's JVM writer leaves a
32-partition topic with many small segments after several large batches, the sidecar's merge job
leaves fewer, larger ones, and the JVM reader (`spark.read.format("seglog")`) reads the same rows
before and after, and while merges run (a reader racing the swap)."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.indexer import Log
from seglog.indexer.compaction import segment_merge
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import create_topic

pytestmark = pytest.mark.slow


def summary(spark, root, topic: str):
    """(rows, distinct (partition, offset), a checksum of every column) of a JVM read of the topic."""
    df = spark.read.format("seglog").option("topic", topic).load(str(root))
    row = df.selectExpr("count(*) AS n", "count(DISTINCT partition, offset) AS d",
                        "sum(CAST(xxhash64(partition, offset, key, value, timestamp) % 1000000007 AS DECIMAL(38, 0))) AS h").collect()[0]
    return row["n"], row["d"], row["h"]


def segment_counts(root, topic: str, partitions: int) -> list[int]:
    out = []
    for p in range(partitions):
        with Log.open(root / f"{topic}-{p}", readonly=True) as log:
            out.append(len(log.segment_bases()))
    return out


def test_the_sink_then_merge_end_to_end(spark, tmp_path):
    from seglog.sink.segment_log_sink import SegmentLogSink

    root = tmp_path / "root"
    sink = SegmentLogSink(str(root), writer_id="w0", topic="big", partitions=32)
    rows = 0
    for batch in range(3):
        n = 300_000
        df = spark.range(batch * n, (batch + 1) * n, numPartitions=2).selectExpr(
            "CAST(id AS STRING) AS key", "CONCAT(CAST(id AS STRING), REPEAT('v', 240)) AS value")
        sink(df, batch)
        rows += n
    before_counts = segment_counts(root, "big", 32)
    before = summary(spark, root, "big")
    assert before[0] == before[1] == rows
    assert sum(before_counts) >= 32 * 4, before_counts      # the JVM writer's task outputs, one segment each
    res = Jobs(parse_config({"root": str(root)}, source="test"), Metrics()).run("merge")
    assert res.ok and len(res.done) == 32
    after_counts = segment_counts(root, "big", 32)
    assert all(a < b for a, b in zip(after_counts, before_counts)) and max(after_counts) <= 2, after_counts
    assert summary(spark, root, "big") == before
    for p in range(32):
        with Log.open(root / f"big-{p}", readonly=True) as log:
            assert log.verify() == []
    print(f"sink then merge: segments {sum(before_counts)} -> {sum(after_counts)} over 32 partitions, {rows} rows")


def test_the_jvm_reader_during_merges(spark, tmp_path):
    """A writer thread appends small segments, commits and merges in a loop while Spark reads the
    topic again and again: every read returns each committed offset once with its value."""
    root = tmp_path / "root"
    cfg = {"segment.bytes": 1 << 20, "index.interval.bytes": 512}
    create_topic(root, "t", 2, cfg)
    commits = CommitLog(root, "t")
    stop = threading.Event()
    merged = [0]
    errors = []

    def writer():
        batch = 0
        try:
            while not stop.is_set():
                ends = {}
                for p in range(2):
                    with Log.open(root / f"t-{p}", cfg, outside_commit_log=True) as log:
                        for _ in range(6):
                            start = log.log_end_offset
                            n = 300
                            log.append_columns(pa.array([b"%d" % (start + i) for i in range(n)], pa.binary()),
                                               timestamps=np.full(n, 1_700_000_000_000 + batch, np.int64))
                            log.roll()
                        log.flush()
                        ends[p] = log.log_end_offset
                commits.commit("w", batch, ends)
                batch += 1
                for p in range(2):
                    with Log.open(root / f"t-{p}", cfg, outside_commit_log=True) as log:
                        merged[0] += len(segment_merge.merge_log(log).groups)
        except Exception as exc:   # reported by the test thread
            errors.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    from pyspark.sql import functions as F

    reads = 0
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and (reads < 8 or merged[0] < 20):
            df = spark.read.format("seglog").option("topic", "t").load(str(root))
            got = df.groupBy("partition").agg(
                F.count("*").alias("n"), F.countDistinct("offset").alias("d"), F.max("offset").alias("top"),
                F.sum(F.expr("CAST(CAST(value AS STRING) != CAST(offset AS STRING) AS INT)")).alias("bad")).collect()
            for r in got:   # dense from 0, each offset once, with its own value
                assert r["n"] == r["d"] == r["top"] + 1 and r["bad"] == 0, r
            reads += 1
    finally:
        stop.set()
        thread.join(60)
    assert not errors, errors
    assert reads >= 8 and merged[0] >= 20, (reads, merged[0])
    ends = commits.end_offsets()
    n, d, _ = summary(spark, root, "t")
    assert n == d == sum(ends.values())


def test_a_jvm_read_between_any_two_renames_of_the_swap(spark, tmp_path, monkeypatch):
    """The merge paused before each rename of its swap while Spark reads the topic: every read
    returns exactly the committed rows, or fails naming the swap (the listing would lack the group:
    before the fix, it read a log that started after it); never fewer rows or a row twice."""
    from py4j.protocol import Py4JJavaError

    from seglog.indexer import recovery
    from seglog.indexer.compaction import clean_swap

    root = tmp_path / "root"
    cfg = {"segment.bytes": 1 << 20, "index.interval.bytes": 512}
    create_topic(root, "t", 1, cfg)
    with Log.open(root / "t-0", cfg, outside_commit_log=True) as log:
        for _ in range(3):
            start = log.log_end_offset
            log.append_columns(pa.array([b"%d" % (start + i) for i in range(200)], pa.binary()),
                               timestamps=np.full(200, 1_700_000_000_000, np.int64))
            log.roll()
        log.flush()
        end = log.log_end_offset
    CommitLog(root, "t").commit("w", 0, {0: end})
    expected = summary(spark, root, "t")
    assert expected[0] == end
    outcomes = {"rows": 0, "refused": 0}

    def hook(n):
        try:
            got = summary(spark, root, "t")
        except Exception as exc:     # a Spark job failure surfaces as Py4JJavaError or a captured exception
            text = str(exc.java_exception) if isinstance(exc, Py4JJavaError) else str(exc)
            assert "swapped in" in text, text[:2000]
            outcomes["refused"] += 1
            return
        assert got == expected, f"a read before rename {n} returned {got}, not {expected}"
        outcomes["rows"] += 1

    real_replace = os.replace

    class Pausing:
        calls = 0

        def replace(self, a, b):
            hook(self.calls)
            self.calls += 1
            return real_replace(a, b)

        def __getattr__(self, name):
            return getattr(os, name)

    fake = Pausing()
    monkeypatch.setattr(clean_swap, "os", fake)
    monkeypatch.setattr(recovery, "os", fake)
    with Log.open(root / "t-0", cfg, outside_commit_log=True) as log:
        res = segment_merge.merge_log(log)
    monkeypatch.undo()
    assert res.groups == [[0, 200, 400]] and fake.calls >= 12
    assert outcomes["rows"] and outcomes["refused"], outcomes
    assert summary(spark, root, "t") == expected
