"""readStream.format("seglog"): real streams (availableNow + awaitTermination, and a processing-time
trigger) over real log folders, checked against the Python core's reads."""
from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from seglog.indexer.topics import create_topic

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CONFIG = {"segment.bytes": 4096, "index.interval.bytes": 256}


def append(root, topic, p, n, *, ts0=T0, commit=True):
    """n records to one partition (value names partition and offset); commit the log end if asked."""
    with Log.open(root / f"{topic}-{p}", CONFIG) as log:
        first = log.log_end_offset
        values = pa.array([b"%s-%d-%06d" % (topic.encode(), p, first + i) for i in range(n)], pa.binary())
        log.append_columns(values, timestamps=ts0 + np.arange(first, first + n, dtype=np.int64) * 10)
        log.flush()
        end = log.log_end_offset
    if commit:
        commit_end(root, topic, {p: end})
    return end


def commit_end(root, topic, ends):
    commits = CommitLog(root, topic)
    last = commits.last_batch("tests")
    commits.commit("tests", 0 if last is None else last + 1, ends)


def core_values(root, topic, p, start=0, end=None):
    with Log.open(root / f"{topic}-{p}", readonly=True) as log:
        return [r.value for r in log.read(max(start, log.log_start_offset), end)]


def stream(spark, root, topic, out, checkpoint, **options):
    """One availableNow run of readStream.format("seglog") into a Parquet folder; the query, finished."""
    r = spark.readStream.format("seglog").option("topic", topic)
    for k, v in options.items():
        r = r.option(k, v if isinstance(v, str) else json.dumps(v) if isinstance(v, dict) else str(v))
    q = (r.load(str(root)).select("partition", "offset", "value").writeStream.format("parquet")
         .option("path", str(out)).option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert not q.isActive
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return q


def offsets_of(source_progress, key="endOffset"):
    import ast

    v = source_progress[key]     # pyspark hands the offset back as a JSON string or a dict's repr
    return v if isinstance(v, dict) else ast.literal_eval(v) if v.startswith("{'") else json.loads(v)


def output(spark, out):
    rows = spark.read.parquet(str(out)).collect()
    return sorted((r.partition, r.offset, bytes(r.value)) for r in rows)


def test_committed_records_exactly_once_across_restarts_and_new_partitions(spark, tmp_path):
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    create_topic(root, "s", 3, CONFIG)
    append(root, "s", 0, 300)
    append(root, "s", 1, 200)
    append(root, "s", 1, 25, commit=False)              # written, not committed: invisible
    stream(spark, root, "s", out, cp, startingOffsets="earliest")
    got = output(spark, out)
    assert [v for p, _, v in got if p == 0] == core_values(root, "s", 0)
    assert [v for p, _, v in got if p == 1] == core_values(root, "s", 1, 0, 200)
    # more commits, the earlier uncommitted records committed now, and partition 2 written for the first time
    append(root, "s", 0, 50)
    with Log.open(root / "s-1", readonly=True) as log:
        commit_end(root, "s", {1: log.log_end_offset})
    append(root, "s", 2, 40)
    q = stream(spark, root, "s", out, cp, startingOffsets="earliest")
    got = output(spark, out)
    assert len(got) == len(set(got)) == 350 + 225 + 40
    for p in range(3):
        assert [v for q_, _, v in got if q_ == p] == core_values(root, "s", p)
    offsets = offsets_of(q.lastProgress["sources"][0])
    assert offsets == {"s": {"0": 350, "1": 225, "2": 40}}   # checkpointed per topic-partition, Kafka's JSON


def test_max_offsets_per_trigger_and_offsets_behind_metrics(spark, tmp_path):
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    append(root, "m", 0, 400)
    append(root, "m", 1, 200)
    q = stream(spark, root, "m", out, cp, startingOffsets="earliest", maxOffsetsPerTrigger=100)
    batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
    sizes = [p["numInputRows"] for p in batches]
    # admission control over 600 offsets: at most 100 a batch (shares rounded down, as Spark's Kafka source)
    assert sum(sizes) == 600 and max(sizes) <= 100 and len(sizes) == 7
    first = batches[0]["sources"][0]
    assert offsets_of(first) == {"m": {"0": 66, "1": 33}}   # shares in proportion to backlog
    assert int(first["metrics"]["maxOffsetsBehindLatest"]) == 400 - 66
    assert int(batches[-1]["sources"][0]["metrics"]["maxOffsetsBehindLatest"]) == 0
    assert len(output(spark, out)) == 600


def test_starting_positions(spark, tmp_path):
    root = tmp_path / "root"
    append(root, "t", 0, 100)
    # default (latest): nothing of what is there now, then what comes later
    stream(spark, root, "t", tmp_path / "o1", tmp_path / "c1")
    append(root, "t", 0, 30)
    stream(spark, root, "t", tmp_path / "o1", tmp_path / "c1")
    assert [o for _, o, _ in output(spark, tmp_path / "o1")] == list(range(100, 130))
    # startingTimestamp: from the first record at or after it
    stream(spark, root, "t", tmp_path / "o2", tmp_path / "c2", startingTimestamp=T0 + 555)
    assert [o for _, o, _ in output(spark, tmp_path / "o2")] == list(range(56, 130))
    stream(spark, root, "t", tmp_path / "o3", tmp_path / "c3", startingOffsetsByTimestamp={"t": {"0": T0 + 1000}})
    assert [o for _, o, _ in output(spark, tmp_path / "o3")] == list(range(100, 130))
    stream(spark, root, "t", tmp_path / "o4", tmp_path / "c4", startingOffsets={"t": {"0": 120}})
    assert [o for _, o, _ in output(spark, tmp_path / "o4")] == list(range(120, 130))
    with pytest.raises(Exception, match="'endingOffsets' is not valid for a streaming read"):
        stream(spark, root, "t", tmp_path / "o5", tmp_path / "c5", endingOffsets="latest")


def test_fail_on_data_loss(spark, tmp_path):
    """Retention deletes offsets a stream has not read yet: it fails naming them, or with
    failOnDataLoss=false goes on from the new log start."""
    root = tmp_path / "root"
    config = dict(CONFIG, **{"retention.ms": 3_600_000})
    now = int(time.time() * 1000)
    append(root, "r", 0, 10, ts0=T0)
    for cp in ("c1", "c2"):
        stream(spark, root, "r", tmp_path / f"o-{cp}", tmp_path / cp, startingOffsets="earliest")
    append(root, "r", 0, 190, ts0=T0)                       # old records...
    append(root, "r", 0, 100, ts0=now - 200 * 10 * 10)      # ...then recent ones
    with Log.open(root / "r-0", config) as log:
        log.roll()
        log.seal_inactive()
        log.apply_retention()
        log_start = log.log_start_offset
    assert 10 < log_start <= 200
    with pytest.raises(Exception, match=rf"r-0: offsets 10 to {log_start - 1} are no longer in the log"):
        stream(spark, root, "r", tmp_path / "o-c1", tmp_path / "c1", startingOffsets="earliest")
    stream(spark, root, "r", tmp_path / "o-c2", tmp_path / "c2", startingOffsets="earliest", failOnDataLoss="false")
    assert [o for _, o, _ in output(spark, tmp_path / "o-c2")] == list(range(10)) + list(range(log_start, 300))


def test_min_offsets_per_trigger_waits_for_max_trigger_delay(spark, tmp_path):
    root = tmp_path / "root"
    append(root, "w", 0, 50)
    started = time.time()
    q = (spark.readStream.format("seglog").option("topic", "w").option("startingOffsets", "earliest")
         .option("minOffsetsPerTrigger", 1000).option("maxTriggerDelay", "3s").load(str(root))
         .writeStream.format("memory").queryName("min_offsets").trigger(processingTime="200 milliseconds").start())
    try:
        deadline = time.time() + 90
        while time.time() < deadline and spark.table("min_offsets").count() < 50:
            time.sleep(0.5)
        assert spark.table("min_offsets").count() == 50
        first = next(p for p in q.recentProgress if p["numInputRows"] > 0)
        import datetime as dt
        at = dt.datetime.strptime(first["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
        assert at.timestamp() - started >= 3 - 0.5          # held back until maxTriggerDelay passed
    finally:
        q.stop()
