"""Tiering with Spark on both sides of one root (docs/tiered-storage.md §5-§6): a writer appends and commits,
the sidecar's tier job (its own Jobs, as the scheduler runs them) copies sealed segments to the remote tier
and deletes their local copies, while the JVM reader reads the topic again and again and a JVM stream
consumes it: every read returns each committed offset once with its own value, and the stream writes each
record once, whatever tier each record was on when its trigger planned and read it."""
from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.indexer import Log
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.remote import metadata
from seglog.indexer.topics import create_topic

pytestmark = pytest.mark.slow

CFG = {"segment.bytes": 64 << 10, "index.interval.bytes": 1024, "remote.storage.enable": True,
       "retention.ms": -1, "local.retention.bytes": 0, "file.delete.delay.ms": 0}


def check_read(spark, root):
    """One batch read: per partition dense from 0, each offset once, with its own value; the offsets read."""
    got = spark.read.format("seglog").option("topic", "t").load(str(root)).groupBy("partition").agg(
        F.count("*").alias("n"), F.countDistinct("offset").alias("d"), F.max("offset").alias("top"),
        F.sum(F.expr("CAST(CAST(value AS STRING) != CAST(offset AS STRING) AS INT)")).alias("bad")).collect()
    for r in got:
        assert r["n"] == r["d"] == r["top"] + 1 and r["bad"] == 0, r
    return sum(r["n"] for r in got)


def test_readers_and_a_stream_while_the_tier_job_moves_segments(spark, tmp_path):
    root, remote = tmp_path / "root", tmp_path / "remote"
    remote.mkdir()
    create_topic(root, "t", 2, CFG)
    commits = CommitLog(root, "t")
    jobs = Jobs(parse_config({"root": str(root), "remote": {"uri": f"file://{remote}"}}, source="test"), Metrics())
    stop = threading.Event()
    tiered = [0]
    errors = []

    def writer_and_sidecar():
        batch = 0
        try:
            while not stop.is_set():
                ends = {}
                for p in range(2):
                    with Log.open(root / f"t-{p}", CFG, outside_commit_log=True) as log:
                        for _ in range(4):
                            start = log.log_end_offset
                            log.append_columns(pa.array([b"%d" % (start + i) for i in range(200)], pa.binary()),
                                               timestamps=np.full(200, 1_700_000_000_000 + batch, np.int64))
                            log.roll()
                        log.seal_inactive()
                        log.flush()
                        ends[p] = log.log_end_offset
                commits.commit("w", batch, ends)
                batch += 1
                res = jobs.run("tier")
                assert res.ok, res
                tiered[0] = sum(len(metadata.read_state(root, "t", p).segments()) for p in range(2))
                time.sleep(0.05)
        except Exception as exc:   # reported by the test thread
            errors.append(exc)

    out, cp = tmp_path / "out", tmp_path / "cp"
    query = (spark.readStream.format("seglog").option("topic", "t").option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", 300).load(str(root)).selectExpr("partition", "offset", "value")
             .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(cp))
             .trigger(processingTime="100 milliseconds").start())
    thread = threading.Thread(target=writer_and_sidecar, daemon=True)
    thread.start()
    reads = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (reads < 4 or tiered[0] < 24) and not errors:
            check_read(spark, root)
            reads += 1
            assert query.exception() is None, query.exception()
    finally:
        stop.set()
        thread.join(60)
    assert not errors, errors
    assert reads >= 4 and tiered[0] >= 24, (reads, tiered[0])
    assert jobs.run("tier").ok
    ends = commits.end_offsets()
    with Log.open(root / "t-0", CFG, readonly=True) as log:
        assert log.log_start_offset > 0                          # local copies were deleted under the readers
    assert check_read(spark, root) == sum(ends.values())
    query.processAllAvailable()
    query.stop()
    assert query.exception() is None
    rows = spark.read.parquet(str(out)).collect()
    for p in range(2):
        offsets = sorted(r.offset for r in rows if r.partition == p)
        assert offsets == list(range(ends[p])), (p, len(offsets), ends[p])     # each record once
    assert all(bytes(r.value) == b"%d" % r.offset for r in rows)
