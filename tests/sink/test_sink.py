"""SegmentLogSink on a real local Spark with real files: placement, checks, idempotence, rollback."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time

import pyarrow as pa
import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.errors import RecordTooLargeError, TimestampOutOfRangeError
from seglog.indexer.log import Log
from seglog.indexer.topics import load_topic
from seglog.sink.input_schema import SinkInputError, SinkSchemaError
from tests.oracles.partitioner import partition_for_key
from seglog.sink.segment_log_sink import SegmentLogSink

pytestmark = pytest.mark.spark


def read_topic(root, topic, partitions):
    """{partition: [Record]} up to the committed end; also checks each log verifies clean."""
    ends = CommitLog(root, topic).end_offsets()
    out = {}
    for p in range(partitions):
        path = os.path.join(root, f"{topic}-{p}")
        if not os.path.isdir(path):
            out[p] = []
            continue
        with Log.open(path, outside_commit_log=True) as log:
            assert log.verify() == []
            assert log.log_end_offset == ends.get(p, 0)
            out[p] = list(log.read(0, ends.get(p, 0)))
        assert [r.offset for r in out[p]] == list(range(len(out[p])))   # dense from 0
    return out


def snapshot(root):
    """Every file under root except metadata, with its size: 'exactly as it was'."""
    files = {}
    for d, _, names in os.walk(root):
        if "_seglog" in d:
            continue
        for n in names:
            files[os.path.join(d, n)] = os.path.getsize(os.path.join(d, n))
    return files


def keyed_df(spark, n, start=0, ts=True):
    cols = ["CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST(concat('value-', id) AS BINARY) AS value"]
    if ts:
        cols.append("TIMESTAMP_MILLIS(1700000000000 + id) AS timestamp")
    return spark.range(start, start + n).selectExpr(*cols)


def test_keys_land_in_kafkas_partition(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, writer_id="w0", topic="ev", partitions=5, config={"segment.bytes": 4096})
    sink(keyed_df(spark, 3000), 0)
    got = read_topic(root, "ev", 5)
    assert sum(len(v) for v in got.values()) == 3000
    for p, recs in got.items():
        assert recs and all(partition_for_key(r.key, 5) == p for r in recs)
    every = {r.key: r for recs in got.values() for r in recs}
    assert len(every) == 3000
    r = every[b"42"]
    assert r.value == b"value-42" and r.timestamp == 1700000000042 and r.timestamp_type == 0
    # small segments rolled while writing
    with Log.open(os.path.join(root, "ev-0"), readonly=True) as log:
        assert len(log.segments()) > 1
    assert load_topic(root, "ev").config == {"segment.bytes": 4096}
    state = CommitLog(root, "ev").latest()
    assert state.writers == {"w0": 0} and sum(state.end_offsets.values()) == 3000


def test_redelivered_batch_is_skipped_and_next_appends(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, topic="ev", partitions=2, writer_id="w1")
    df = keyed_df(spark, 200)
    sink(df, 0)
    before = snapshot(root)
    sink(df, 0)                                # re-delivery: nothing happens
    assert snapshot(root) == before and CommitLog(root, "ev").latest().seq == 0
    sink(keyed_df(spark, 100, start=200), 1)
    got = read_topic(root, "ev", 2)
    assert sorted(int(r.key) for v in got.values() for r in v) == list(range(300))
    # another writer's batch 0 is not mistaken for w1's
    SegmentLogSink(root, topic="ev", writer_id="w2")(keyed_df(spark, 10, start=300), 0)
    assert sum(len(v) for v in read_topic(root, "ev", 2).values()) == 310
    assert CommitLog(root, "ev").latest().writers == {"w1": 1, "w2": 0}


def test_partly_written_batch_is_rolled_back(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, writer_id="w0", topic="ev", partitions=3)
    sink(keyed_df(spark, 300), 0)
    committed = CommitLog(root, "ev").end_offsets()
    # a crashed delivery of batch 1 left junk past the committed end in every partition
    for p in range(3):
        with Log.open(os.path.join(root, f"ev-{p}"), outside_commit_log=True) as log:
            log.append_columns(pa.array([b"junk"] * (p + 7)))
    # ... and its staged files (never published): a run folder of this writer and topic no driver holds
    # (<root>/_seglog/staging/<writer>/<topic key>-jvm, format.StagingRuns; a finished write leaves none of it)
    topic_key = hashlib.sha1(b"ev").hexdigest()[:16]
    leftover = os.path.join(root, "_seglog", "staging", "w0", f"{topic_key}-jvm")
    os.makedirs(os.path.join(leftover, "1-crashed", "t0-a0"))
    with open(os.path.join(leftover, "1-crashed", "t0-a0", "s0-0.log"), "wb") as f:
        f.write(b"junk")
    sink(keyed_df(spark, 300, start=300), 1)
    got = read_topic(root, "ev", 3)
    assert sorted(int(r.key) for v in got.values() for r in v) == list(range(600))
    assert all(r.value != b"junk" for v in got.values() for r in v)
    for p in range(3):   # batch 0 kept as it was, batch 1 follows it directly
        assert all(int(r.key) < 300 for r in got[p][:committed[p]])
        assert all(int(r.key) >= 300 for r in got[p][committed[p]:])
    assert not os.path.exists(leftover)   # the leftovers, this run's files, and the folders they leave empty


def test_partition_column_and_range(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, writer_id="w0", topic="ev", partitions=4)
    df = spark.range(100).selectExpr("CAST(id AS STRING) AS value", "CAST(id % 4 AS INT) AS partition",
                                     "CAST(id AS STRING) AS key")
    sink(df, 0)
    got = read_topic(root, "ev", 4)
    for p in range(4):
        assert sorted(int(r.value) for r in got[p]) == list(range(p, 100, 4))
    before = snapshot(root)
    bad = spark.range(10).selectExpr("CAST(id AS STRING) AS value", "CAST(id AS INT) AS partition")
    with pytest.raises(SinkInputError, match=r"4 partitions \(0 to 3\).*partition [4-9]; nothing was written$"):
        sink(bad, 1)
    assert snapshot(root) == before and CommitLog(root, "ev").last_batch("w0") == 0


def test_null_keys_spread_and_strings(spark, tmp_path):
    root = str(tmp_path)
    df = spark.range(4000).selectExpr("CAST(NULL AS STRING) AS key", "CAST(id AS STRING) AS value")
    SegmentLogSink(root, writer_id="w0", topic="ev", partitions=4)(df, 0)
    got = read_topic(root, "ev", 4)
    sizes = [len(got[p]) for p in range(4)]
    assert sum(sizes) == 4000 and min(sizes) > 800
    assert all(r.key is None and r.timestamp > 0 for v in got.values() for r in v)


def test_headers_and_topic_column(spark, tmp_path):
    root = str(tmp_path)
    df = spark.range(60).selectExpr(
        "CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b' ELSE 'c' END AS topic",
        "CAST(id AS STRING) AS key", "CAST(CAST(id AS STRING) AS BINARY) AS value",
        "array(named_struct('key', 'h', 'value', CAST(id AS STRING)::binary)) AS headers")
    SegmentLogSink(root, writer_id="w0", partitions=2)(df, 0)          # no topic= option: each row picks its topic
    for t, ids in (("a", range(0, 60, 3)), ("b", range(1, 60, 3)), ("c", range(2, 60, 3))):
        got = read_topic(root, t, 2)
        recs = [r for v in got.values() for r in v]
        assert sorted(int(r.key) for r in recs) == list(ids)
        assert all(r.headers == (("h", r.key),) for r in recs)
    with pytest.raises(SinkInputError, match="null 'topic'"):
        SegmentLogSink(root, writer_id="w0", partitions=2)(df.selectExpr("IF(key = '5', NULL, topic) AS topic", "value"), 1)


def test_topic_option_overrides_the_topic_column_as_sparks_kafka_sink(spark, tmp_path):
    """Spark's Kafka sink: "the topic configuration option overrides the topic column"."""
    root = str(tmp_path)
    df = spark.range(30).selectExpr("IF(id % 2 = 0, 'a', NULL) AS topic", "CAST(id AS STRING) AS key",
                                    "CAST(id AS STRING) AS value")
    SegmentLogSink(root, writer_id="w0", topic="z", partitions=2)(df, 0)
    got = read_topic(root, "z", 2)
    assert sorted(int(r.key) for v in got.values() for r in v) == list(range(30))
    assert not os.path.exists(os.path.join(root, "a-0")) and not os.path.exists(os.path.join(root, "a-1"))


def test_the_sources_output_is_written_back_as_is(spark, tmp_path):
    """The `seglog` source's rows (offset, timestampType, topic, partition, ... ) go into the sink
    unchanged: extra columns ignored, the topic= option over the topic column, partition and
    timestamp kept, as Spark's Kafka sink takes the Kafka source's rows."""
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    SegmentLogSink(src, writer_id="w0", topic="ev", partitions=3)(keyed_df(spark, 200), 0)
    replay = spark.read.format("seglog").option("topic", "ev").load(src)
    assert {"offset", "timestampType", "topic", "partition"} <= set(replay.columns)
    SegmentLogSink(dst, writer_id="w0", topic="copy", partitions=3)(replay, 0)
    a, b = read_topic(src, "ev", 3), read_topic(dst, "copy", 3)
    for p in range(3):
        assert [(r.key, r.value, r.timestamp, r.offset) for r in a[p]] == \
               [(r.key, r.value, r.timestamp, r.offset) for r in b[p]]


def test_the_jvm_write_places_keys_as_the_python_partitioner(spark, tmp_path):
    df = spark.range(500).selectExpr("CAST(id * 7919 AS STRING) AS key", "CAST(id AS STRING) AS value")
    SegmentLogSink(str(tmp_path / "j"), topic="t", partitions=7, writer_id="w0")(df, 0)
    j = read_topic(str(tmp_path / "j"), "t", 7)
    assert sum(len(v) for v in j.values()) == 500
    for i in range(7):
        assert all(partition_for_key(r.key, 7) == i for r in j[i])


@pytest.mark.parametrize("select,match", [
    (["CAST(CAST(id AS STRING) AS BINARY) AS key"], "no 'value' column"),
    (["id AS value"], r"column 'value' is bigint; expected binary or string"),
    (["'v' AS value", "id AS key"], r"column 'key' is bigint"),
    (["'v' AS value", "1 AS topic"], r"column 'topic' is int; expected string"),
    (["'v' AS value", "'1' AS partition"], r"column 'partition' is string; expected int"),
    (["'v' AS value", "1700000000000 AS timestamp"], r"column 'timestamp' is int|bigint"),
    (["'v' AS value", "array('x') AS headers"], r"column 'headers' is array<string>"),
])
def test_bad_schema_refused_before_any_write(spark, tmp_path, select, match):
    sink = SegmentLogSink(str(tmp_path), writer_id="w0", topic="ev", partitions=1)
    with pytest.raises(SinkSchemaError, match=match):
        sink(spark.range(3).selectExpr(*select), 0)
    assert not os.path.exists(tmp_path / "ev-0") and load_topic(str(tmp_path), "ev") is None


def test_bad_sink_arguments(tmp_path):
    from seglog.errors import ConfigError, InvalidTopicError
    with pytest.raises(InvalidTopicError):
        SegmentLogSink(str(tmp_path), topic="../x")
    with pytest.raises(ConfigError, match="segment.byte"):
        SegmentLogSink(str(tmp_path), topic="x", config={"segment.byte": 1})
    with pytest.raises(SinkInputError):
        SegmentLogSink(str(tmp_path), topic="x", partitions=0)
    with pytest.raises(SinkInputError):
        SegmentLogSink(str(tmp_path), topic="x", writer_id="a/b")


def test_existing_topic_conflicts(spark, tmp_path):
    root = str(tmp_path)
    SegmentLogSink(root, writer_id="w0", topic="ev", partitions=2)(keyed_df(spark, 10), 0)
    from seglog.errors import InvalidTopicError
    with pytest.raises(InvalidTopicError, match="2 partitions, 3 were asked"):
        SegmentLogSink(root, topic="ev", partitions=3, writer_id="x")(keyed_df(spark, 10), 0)
    SegmentLogSink(root, topic="ev", writer_id="y")(keyed_df(spark, 10), 0)   # keeps its own count
    with pytest.raises(SinkInputError, match="does not exist"):
        SegmentLogSink(root, writer_id="w0", topic="nope")(keyed_df(spark, 10), 0)


def test_oversized_record_refused_whole(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, writer_id="w0", topic="ev", partitions=2, config={"max.message.bytes": 2000})
    sink(keyed_df(spark, 50), 0)
    before = snapshot(root)
    df = spark.range(50).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key",
                                    "CASE WHEN id = 33 THEN repeat('x', 3000) ELSE 'small' END AS value")
    with pytest.raises(RecordTooLargeError, match=r"key b'33'.*max.message.bytes=2000"):
        sink(df, 1)
    assert snapshot(root) == before and CommitLog(root, "ev").last_batch("w0") == 0
    # the driver's size formula agrees with the storage layer's at the boundary
    ok = spark.range(1).selectExpr("CAST('k' AS BINARY) AS key", f"repeat('x', {2000 - 61 - 11}) AS value")
    sink(ok, 2)
    assert sum(len(v) for v in read_topic(root, "ev", 2).values()) == 51


def _ts_df(spark, now_ms, offsets):
    rows = [(str(i).encode(), f"v{i}".encode(), dt.datetime.fromtimestamp((now_ms + o) / 1000, dt.timezone.utc))
            for i, o in enumerate(offsets)]
    return spark.createDataFrame(rows, "key binary, value binary, timestamp timestamp")


def test_timestamp_out_of_range_fail(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, writer_id="w0", topic="ev", partitions=2,
                          config={"max.message.time.difference.ms": 3_600_000})
    now = int(time.time() * 1000)
    sink(_ts_df(spark, now, [0, -1000, 1000]), 0)
    before = snapshot(root)
    with pytest.raises(TimestampOutOfRangeError, match=r"key b'2'.*message.timestamp.after.max.ms=3600000"):
        sink(_ts_df(spark, now, [0, 5, 86_400_000, 7]), 1)
    assert snapshot(root) == before and CommitLog(root, "ev").last_batch("w0") == 0


def test_timestamp_out_of_range_quarantine(spark, tmp_path):
    root = str(tmp_path)
    sink = SegmentLogSink(root, writer_id="w0", topic="ev", partitions=2, config={
        "max.message.time.difference.ms": 3_600_000, "message.timestamp.out.of.range.policy": "quarantine",
        "quarantine.topic": "ev.quarantine"})
    now = int(time.time() * 1000)
    sink(_ts_df(spark, now, [0, -86_400_000, 5, 86_400_000 * 30, 9]), 0)
    good = [r for v in read_topic(root, "ev", 2).values() for r in v]
    bad = [r for v in read_topic(root, "ev.quarantine", 2).values() for r in v]
    assert sorted(r.key for r in good) == [b"0", b"2", b"4"]
    assert sorted(r.key for r in bad) == [b"1", b"3"]
    assert {r.timestamp - now for r in bad} == {-86_400_000, 86_400_000 * 30}


def test_log_append_time(spark, tmp_path):
    root = str(tmp_path)
    before = int(time.time() * 1000)
    SegmentLogSink(root, writer_id="w0", topic="ev", partitions=1, config={"message.timestamp.type": "LogAppendTime"})(
        keyed_df(spark, 20), 0)
    recs = read_topic(root, "ev", 1)[0]
    assert len(recs) == 20 and all(r.timestamp_type == 1 and r.timestamp >= before for r in recs)


def test_file_source_stream(spark, tmp_path):
    src, root = tmp_path / "in", str(tmp_path / "log")
    src.mkdir()
    for i in range(3):
        f = src / f"part-{i}.json"
        f.write_text("".join(json.dumps({"k": f"{i}-{j}", "v": f"val-{i}-{j}"}) + "\n" for j in range(50)))
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))
    stream = (spark.readStream.schema("k string, v string").option("maxFilesPerTrigger", 1).json(str(src))
              .selectExpr("k AS key", "v AS value"))
    q = (stream.writeStream.foreachBatch(SegmentLogSink(root, topic="ev", partitions=3))
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    q.awaitTermination()
    state = CommitLog(root, "ev").latest()
    assert list(state.writers) == [q.id] and state.writers[q.id] == 2
    got = read_topic(root, "ev", 3)
    assert sorted(r.key.decode() for v in got.values() for r in v) == sorted(
        f"{i}-{j}" for i in range(3) for j in range(50))


def test_a_refused_first_batch_leaves_no_topic_behind(spark, tmp_path):
    root = str(tmp_path)
    bad = spark.range(10).selectExpr("CAST(id AS STRING) AS value", "CAST(id AS INT) AS partition")
    with pytest.raises(SinkInputError, match=r"partition [4-9]; nothing was written$"):
        SegmentLogSink(root, writer_id="w0", topic="ev", partitions=4)(bad, 0)
    assert load_topic(root, "ev") is None and not any(tmp_path.glob("ev-*"))
    # the corrected request (more partitions) is not refused as "already exists and differs"
    SegmentLogSink(root, writer_id="w0", topic="ev", partitions=10)(bad, 0)
    assert load_topic(root, "ev").partitions == 10
    assert sum(len(v) for v in read_topic(root, "ev", 10).values()) == 10


def test_timestamp_ntz_is_read_in_the_session_time_zone(spark, tmp_path):
    # Spark reads a TimestampNTZ as a wall time in the session time zone (CAST AS TIMESTAMP); the
    # sink stores the instant that CAST gives, the same one its quarantine rule judges.
    root = str(tmp_path)
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.sql("SELECT 'v' AS value, TIMESTAMP_NTZ '2024-01-01 00:00:00' AS timestamp")
        SegmentLogSink(root, writer_id="w0", topic="ntz", partitions=1)(df, 0)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    (rec,) = read_topic(root, "ntz", 1)[0]
    assert rec.timestamp == int(dt.datetime(2024, 1, 1, 5, 0, tzinfo=dt.timezone.utc).timestamp() * 1000)


def test_no_shuffle_each_partition_holds_its_rows_in_task_order(spark, tmp_path):
    """The write has no shuffle (without tasks=): each input task stages its own rows for every log
    partition, and each partition holds them in task order, then in input order, with dense offsets.
    tasks=N repartitions first (one shuffle) and every row still lands once."""
    root = str(tmp_path)
    df = spark.range(0, 4000, numPartitions=4).selectExpr(
        "CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST(concat('value-', id) AS BINARY) AS value")
    SegmentLogSink(root, writer_id="w0", topic="ev", partitions=3)(df, 0)
    got = read_topic(root, "ev", 3)
    for p in range(3):
        ids = [int(r.key) for r in got[p]]
        assert ids == sorted(ids) and all(partition_for_key(r.key, 3) == p for r in got[p])
        assert [r.offset for r in got[p]] == list(range(len(ids)))
    assert sum(len(v) for v in got.values()) == 4000
    SegmentLogSink(root, writer_id="w0", topic="ev", tasks=3)(df, 1)
    got = read_topic(root, "ev", 3)
    assert sorted(int(r.key) for v in got.values() for r in v) == sorted(list(range(4000)) * 2)


def test_two_checkpoints_into_one_topic_both_land(spark, tmp_path):
    """The writer of a foreachBatch call is its query's id (the driver thread's sql.streaming.queryId): a new
    checkpoint's batch ids restart at 0 under a new id, so they are not skipped as the first query's."""
    root, ids = str(tmp_path / "log"), []
    for run in ("a", "b"):
        src = tmp_path / f"in-{run}"
        src.mkdir()
        for i in range(2):
            f = src / f"part-{i}.json"
            f.write_text("".join(json.dumps({"k": f"{run}{i}-{j}"}) + "\n" for j in range(5)))
            os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))
        stream = spark.readStream.schema("k string").option("maxFilesPerTrigger", 1).json(str(src)).selectExpr(
            "k AS key", "k AS value")
        q = (stream.writeStream.foreachBatch(SegmentLogSink(root, topic="ev", partitions=2))
             .option("checkpointLocation", str(tmp_path / f"ckpt-{run}")).trigger(availableNow=True).start())
        q.awaitTermination()
        ids.append(q.id)
    assert CommitLog(root, "ev").latest().writers == {ids[0]: 1, ids[1]: 1}
    got = read_topic(root, "ev", 2)
    assert sorted(r.key.decode() for v in got.values() for r in v) == sorted(
        f"{run}{i}-{j}" for run in "ab" for i in range(2) for j in range(5))


def test_a_sink_called_outside_a_query_is_refused_asking_for_writer_id(spark, tmp_path):
    """A plain call on a static DataFrame is no query's micro-batch: its writer is not known, so the call is
    refused naming writer_id, nothing written (it once recorded the writer `default`, which a later query's call
    from a worker thread shared: issue 36). With writer_id it writes, and a repeated batch id is skipped."""
    root = str(tmp_path)
    with pytest.raises(SinkInputError, match=r"option 'foreachBatchId' = 0: the writer is the calling streaming "
                                             r"query's id.*give option 'writerId' \(SegmentLogSink\(writer_id=\.\.\.\)\)"):
        SegmentLogSink(root, topic="ev", partitions=1)(keyed_df(spark, 3), 0)
    assert CommitLog(root, "ev").latest() is None
    sink = SegmentLogSink(root, topic="ev", partitions=1, writer_id="backfill")
    sink(keyed_df(spark, 3), 0)
    sink(keyed_df(spark, 3), 0)
    sink(keyed_df(spark, 2), 1)
    assert CommitLog(root, "ev").latest().writers == {"backfill": 1}
    assert sum(map(len, read_topic(root, "ev", 1).values())) == 5
