"""The sink and the data source together (docs/spec.md §7, 8): what SegmentLogSink writes, spark.read.format('seglog')
reads back exactly: keys, values, millisecond timestamps, Kafka's murmur2 partition, dense offsets; from a
static DataFrame and from a streaming query (file source, availableNow, restarted from its checkpoint)."""
from __future__ import annotations

import json
import os
from collections import defaultdict

import pyarrow as pa
import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from tests.oracles.partitioner import partition_for_key
from seglog.sink.segment_log_sink import SegmentLogSink

pytestmark = pytest.mark.spark

PARTITIONS = 3
T0 = 1_700_000_000_000
CONFIG = {"segment.bytes": 8192, "segment.index.bytes": 4096, "index.interval.bytes": 512}


def row_for(i: int) -> tuple[str | None, bytes, int]:
    """(key, value, timestamp ms) of input row i: every 11th key null, CreateTime not monotonic, ties."""
    key = None if i % 11 == 0 else f"key-{i:05d}"
    value = f"value-{i}-".encode() * (1 + i % 4)
    ts = T0 + i * 3 - (i % 5) * 2 + (i % 7 == 0) * 1_000
    return key, value, ts


def static_df(spark, lo: int, hi: int):
    """The rows lo..hi-1 as Spark computes them (same formulas as row_for)."""
    return spark.range(lo, hi).selectExpr(
        "CASE WHEN id % 11 = 0 THEN NULL ELSE concat('key-', lpad(CAST(id AS STRING), 5, '0')) END AS key",
        "CAST(repeat(concat('value-', CAST(id AS STRING), '-'), CAST(1 + id % 4 AS INT)) AS BINARY) AS value",
        f"timestamp_millis({T0} + id * 3 - (id % 5) * 2 + CASE WHEN id % 7 = 0 THEN 1000 ELSE 0 END) AS timestamp")


def rows_of(df) -> list[tuple]:
    """(partition, offset, key, value, timestamp ms, timestampType, topic) sorted by partition, offset."""
    t = df.toArrow()
    ts = t.column("timestamp").cast(pa.int64()).to_pylist()       # microseconds, UTC
    assert all(us % 1000 == 0 for us in ts)
    out = list(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist(), t.column("key").to_pylist(),
                   t.column("value").to_pylist(), [us // 1000 for us in ts], t.column("timestampType").to_pylist(),
                   t.column("topic").to_pylist()))
    return sorted(out, key=lambda r: (r[0], r[1]))


def check_against_input(rows: list[tuple], ids: range, topic: str) -> None:
    """Exactly the input: one row per input row, placed by Kafka's partitioner, offsets dense per partition."""
    want = defaultdict(int)
    for i in ids:
        key, value, ts = row_for(i)
        want[(None if key is None else key.encode(), value, ts)] += 1
    got = defaultdict(int)
    per_partition = defaultdict(list)
    for p, off, key, value, ts, tt, tp in rows:
        assert tp == topic and tt == 0
        got[(key, value, ts)] += 1
        per_partition[p].append(off)
        if key is not None:
            assert p == partition_for_key(key, PARTITIONS), (key, p)
    assert got == want
    assert set(per_partition) <= set(range(PARTITIONS))
    for p, offs in per_partition.items():
        assert offs == list(range(len(offs))), f"partition {p}: offsets not dense from 0"
    # null keys are spread, not all in one partition
    assert len({p for p, _, key, *_ in rows if key is None}) > 1


def seglog(spark, root, topic, **options):
    r = spark.read.format("seglog").option("topic", topic)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(str(root))


def check_timestamp_reads(spark, root, topic, everything: list[tuple]) -> None:
    stamps = sorted({r[4] for r in everything})
    t = stamps[len(stamps) // 2] + 1     # between records: a tie-free cut in the middle
    # startingTimestamp: Kafka semantics, per partition from the first offset whose timestamp >= T on
    first = {}
    for p, off, _, _, ts, *_ in everything:
        if ts >= t and (p not in first or off < first[p]):
            first[p] = off
    want = [r for r in everything if r[0] in first and r[1] >= first[r[0]]]
    got = rows_of(seglog(spark, root, topic, startingTimestamp=t, startingOffsetsByTimestampStrategy="latest"))
    assert got == want
    assert any(r[4] < t for r in got)      # CreateTime goes backwards: a seek, not a filter
    assert all(r[4] >= t for r in want if r[1] == first[r[0]])
    # where(timestamp >= T): exactly the rows at or after T (pushed down as a seek plus a row filter)
    from pyspark.sql import functions as F
    df = seglog(spark, root, topic).where(F.col("timestamp") >= F.timestamp_millis(F.lit(t)))
    assert rows_of(df) == [r for r in everything if r[4] >= t]
    # and an upper bound
    hi = stamps[(3 * len(stamps)) // 4]
    df = seglog(spark, root, topic).where(f"timestamp >= timestamp_millis({t}) AND timestamp < timestamp_millis({hi})")
    assert rows_of(df) == [r for r in everything if t <= r[4] < hi]


def test_static_dataframe_round_trip(spark, tmp_path):
    root, n = tmp_path / "log", 3000
    sink = SegmentLogSink(str(root), writer_id="w0", topic="events", partitions=PARTITIONS, config=CONFIG)
    sink(static_df(spark, 0, n), 0)
    everything = rows_of(seglog(spark, root, "events", startingOffsets="earliest"))
    check_against_input(everything, range(n), "events")
    # the same through the storage API, and small segments were rolled
    ends = CommitLog(str(root), "events").end_offsets()
    assert sum(ends.values()) == n
    for p in range(PARTITIONS):
        with Log.open(root / f"events-{p}", readonly=True) as log:
            recs = list(log.read(0, ends[p]))
            assert len(log.segments()) > 2
            assert log.verify() == []
        assert [(r.offset, r.key, r.value, r.timestamp) for r in recs] == \
               [(o, k, v, ts) for pp, o, k, v, ts, *_ in everything if pp == p]
    check_timestamp_reads(spark, root, "events", everything)
    # SQL: a temporary view over the same log
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW e2e_events USING seglog "
              f"OPTIONS (path '{root}', topic 'events', startingOffsets 'earliest')")
    try:
        assert rows_of(spark.sql("SELECT * FROM e2e_events")) == everything
        t = everything[len(everything) // 2][4]
        got = rows_of(spark.sql(f"SELECT * FROM e2e_events WHERE timestamp >= timestamp_millis({t})"))
        assert got == [r for r in everything if r[4] >= t]
    finally:
        spark.sql("DROP VIEW IF EXISTS e2e_events")
    # a second batch appends after the first
    sink(static_df(spark, n, n + 300), 1)
    check_against_input(rows_of(seglog(spark, root, "events")), range(n + 300), "events")

def write_json(src, index: int, lo: int, hi: int) -> None:
    f = src / f"part-{index:03d}.json"
    lines = []
    for i in range(lo, hi):
        key, value, ts = row_for(i)
        lines.append(json.dumps({"k": key, "v": value.decode(), "ts": ts}))
    tmp = src / f".part-{index:03d}.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.utime(tmp, (1_700_000_000 + index, 1_700_000_000 + index))   # the file source orders by mtime
    tmp.rename(f)


def run_available_now(spark, src, root, ckpt, sink):
    stream = (spark.readStream.schema("k string, v string, ts long").option("maxFilesPerTrigger", 1).json(str(src))
              .selectExpr("k AS key", "CAST(v AS BINARY) AS value", "timestamp_millis(ts) AS timestamp"))
    q = (stream.writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert not q.isActive
    assert q.exception() is None
    return q.id


def test_streaming_query_round_trip(spark, tmp_path):
    src, root, ckpt = tmp_path / "in", tmp_path / "log", tmp_path / "ckpt"
    src.mkdir()
    per_file = 400
    for i in range(3):
        write_json(src, i, i * per_file, (i + 1) * per_file)
    sink = SegmentLogSink(str(root), topic="stream", partitions=PARTITIONS, config=CONFIG)
    qid = run_available_now(spark, src, root, ckpt, sink)
    everything = rows_of(seglog(spark, root, "stream"))
    check_against_input(everything, range(3 * per_file), "stream")
    state = CommitLog(str(root), "stream").latest()
    assert state.writers == {str(qid): 2}              # one micro-batch per file, writer = the query's id
    # restart from the checkpoint with one more file: it follows, nothing is written twice
    write_json(src, 3, 3 * per_file, 4 * per_file)
    assert run_available_now(spark, src, root, ckpt, sink) == qid
    everything = rows_of(seglog(spark, root, "stream"))
    check_against_input(everything, range(4 * per_file), "stream")
    assert CommitLog(str(root), "stream").latest().writers == {str(qid): 3}
    t = everything[len(everything) // 2][4]
    got = rows_of(seglog(spark, root, "stream", startingOffsets="earliest").where(f"timestamp >= timestamp_millis({t})"))
    assert got == [r for r in everything if r[4] >= t]
