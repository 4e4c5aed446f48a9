"""`df.write.format("seglog")`: the DataSource V2 batch write in the connector jar (issue 25), through
PySpark in local[2]. Rows written are read back equal by the Python core and by `spark.read.format("seglog")`;
txnAppId + txnVersion make a write idempotent; every bad option is refused before anything is written."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from seglog.indexer.names import partition_dir_name
from seglog.indexer.topics import load_topic
from tests.oracles.partitioner import partition_for_key

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def _df(spark, n: int, *, start: int = 0, keyed: bool = True):
    rows = [((f"k{i}".encode() if keyed or i % 3 else None), f"value-{i}".encode() * (1 + i % 5),
             T0 + dt.timedelta(milliseconds=37 * i)) for i in range(start, start + n)]
    return spark.createDataFrame(rows, "key binary, value binary, timestamp timestamp").repartition(3)


def _write(df, root: Path, **options):
    w = df.write.format("seglog").mode("append")
    for k, v in options.items():
        w = w.option(k, str(v))
    w.save(str(root))


def _core_records(root: Path, topic: str) -> dict[int, list]:
    """Every committed record of `topic`, by partition, read by the Python core."""
    meta = load_topic(root, topic)
    ends = CommitLog(root, topic).end_offsets()
    out = {}
    for p in range(meta.partitions):
        path = root / partition_dir_name(topic, p)
        if not path.is_dir():
            out[p] = []
            continue
        with Log.open(path, meta.config, readonly=True) as log:
            assert log.verify() == []
            out[p] = [(r.key, r.value, r.timestamp) for r in log.read(0, ends.get(p, 0))]
    return out


def _staging_left(root: Path) -> list[Path]:
    staging = root / "_seglog" / "staging"
    return [p for p in staging.rglob("*") if p.is_file()] if staging.exists() else []


def test_rows_written_read_back_equal(spark, tmp_path):
    root = tmp_path / "log"
    _write(_df(spark, 500, keyed=False), root, topic="events", partitions=3, **{"segment.bytes": 4096})
    meta = load_topic(root, "events")
    assert meta.partitions == 3 and meta.config == {"segment.bytes": 4096}
    by_partition = _core_records(root, "events")
    expected = {(r[0], r[1], int(r[2].timestamp() * 1000)) for r in _df(spark, 500, keyed=False).collect()}
    assert sorted((x for recs in by_partition.values() for x in recs), key=repr) == sorted(expected, key=repr)
    for p, recs in by_partition.items():                   # Kafka's default partitioner for keyed rows
        assert all(partition_for_key(k, 3) == p for k, _, _ in recs if k is not None)
    assert sum(map(len, by_partition.values())) == 500
    # and the seglog source reads what the core reads
    read = spark.read.format("seglog").option("topic", "events").load(str(root))
    assert sorted(((bytes(r.key) if r.key is not None else None, bytes(r.value), r.partition) for r in read.collect()),
                  key=repr) == sorted(((k, v, p) for p, recs in by_partition.items() for k, v, _ in recs), key=repr)
    assert _staging_left(root) == []
    # a second plain append goes after the first
    _write(_df(spark, 100, start=500), root, topic="events")
    assert sum(map(len, _core_records(root, "events").values())) == 600
    assert CommitLog(root, "events").latest().writers == {"@append": 1}   # seglog's namespace: no txnAppId's


def test_txn_version_makes_a_write_idempotent(spark, tmp_path):
    root = tmp_path / "log"
    df = _df(spark, 50)
    _write(df, root, topic="t", partitions=2, txnAppId="app", txnVersion=0)
    _write(df, root, topic="t", txnAppId="app", txnVersion=0)           # a re-run: skipped
    assert sum(map(len, _core_records(root, "t").values())) == 50
    _write(_df(spark, 20, start=50), root, topic="t", txnAppId="app", txnVersion=1)
    _write(df, root, topic="t", txnAppId="app", txnVersion=0)           # older: skipped
    _write(df, root, topic="t", txnAppId="other", txnVersion=0)         # another app: written
    assert sum(map(len, _core_records(root, "t").values())) == 120
    assert CommitLog(root, "t").latest().writers == {"app": 1, "other": 0}


def test_a_txn_app_id_never_reads_a_plain_appends_counter(spark, tmp_path):
    """Plain appends count their writes in seglog's namespace (`@append`, `@append.<writerId>`), which no
    txnAppId can name: three plain appends (named `nightly` or not), then txnAppId=nightly, txnVersion=1 writes
    its rows (issue 36: it once read the appends' counter as its own versions and wrote 0 rows, no error); the
    names earlier versions used for their own writers are refused by name (above)."""
    root = tmp_path / "log"
    _write(_df(spark, 10), root, topic="t", partitions=2)
    for i in range(3):
        _write(_df(spark, 10, start=10 * i), root, topic="t", writerId="nightly")
    _write(_df(spark, 7, start=100), root, topic="t", txnAppId="nightly", txnVersion=1)
    assert sum(map(len, _core_records(root, "t").values())) == 47
    _write(_df(spark, 7, start=100), root, topic="t", txnAppId="nightly", txnVersion=1)    # its own re-run: skipped
    assert sum(map(len, _core_records(root, "t").values())) == 47
    assert CommitLog(root, "t").latest().writers == {"@append": 0, "@append.nightly": 2, "nightly": 1}


def test_rows_pick_existing_topics_with_a_topic_column(spark, tmp_path):
    root = tmp_path / "log"
    _write(_df(spark, 1), root, topic="a", partitions=1)
    _write(_df(spark, 1), root, topic="b", partitions=2)
    rows = [("a" if i % 2 else "b", f"k{i}".encode(), f"v{i}".encode()) for i in range(40)]
    df = spark.createDataFrame(rows, "topic string, key binary, value binary")
    _write(df, root)
    assert sum(map(len, _core_records(root, "a").values())) == 1 + 20
    assert sum(map(len, _core_records(root, "b").values())) == 1 + 20
    _write(df, root, topic="a")                                          # the option wins over the column
    assert sum(map(len, _core_records(root, "a").values())) == 1 + 20 + 40


def _refused(spark, root: Path, df, says: str, mode: str = "append", **options) -> None:
    before = sorted(p.relative_to(root) for p in root.rglob("*")) if root.exists() else []
    w = df.write.format("seglog").mode(mode)
    for k, v in options.items():
        w = w.option(k, str(v))
    with pytest.raises(Exception) as info:
        w.save(str(root))
    assert says in str(info.value), str(info.value)[:2000]
    after = sorted(p.relative_to(root) for p in root.rglob("*")) if root.exists() else []
    assert after == before, "a refused write changed files"


def test_bad_options_are_refused_by_name_and_nothing_is_written(spark, tmp_path):
    root = tmp_path / "log"
    df = _df(spark, 10)
    _write(df, root, topic="t", partitions=2)
    _refused(spark, root, df, "no topic: give option 'topic' or a 'topic' column")
    _refused(spark, root, df, "option 'txnVersion' needs option 'txnAppId'", topic="t", txnVersion=3)
    _refused(spark, root, df, "option 'txnAppId' needs option 'txnVersion'", topic="t", txnAppId="a")
    _refused(spark, root, df, "option 'txnVersion' = '-1'; allowed: an integer >= 0", topic="t", txnAppId="a", txnVersion=-1)
    _refused(spark, root, df, "option 'txnVersion' = 'x'", topic="t", txnAppId="a", txnVersion="x")
    _refused(spark, root, df, "'segment.bytes' = -5 is out of range", topic="new", partitions=1, **{"segment.bytes": -5})
    _refused(spark, root, df, "it has 2 partitions, 3 were asked", topic="t", partitions=3)
    _refused(spark, root, df, "option 'partitions' = '0'", topic="new", partitions=0)
    _refused(spark, root, df, "topic 'new' does not exist", topic="new")
    _refused(spark, root, df, "unknown option 'partition'", topic="t", partition=1)
    _refused(spark, root, df, "unknown option 'foreachBatchLookup'", topic="t", foreachBatchId=0,
             foreachBatchLookup="activeTrigger")
    _refused(spark, root, df, "option 'foreachBatchId' = 0: the writer is the calling streaming query's id, and the "
             "write's DataFrame is no streaming query's micro-batch", topic="t", foreachBatchId=0)
    for name in ("append", "default", "seglog-import", ".."):
        _refused(spark, root, df, f"option 'txnAppId' = '{name}'; reserved", topic="t", txnAppId=name, txnVersion=0)
        _refused(spark, root, df, f"option 'writerId' = '{name}'; reserved", topic="t", writerId=name)
    _refused(spark, root, df, "mode 'overwrite' (and a stream's outputMode 'complete') is not supported", mode="overwrite", topic="t")
    _refused(spark, root, df, "ErrorIfExists", mode="errorifexists", topic="t")
    _refused(spark, root, df.selectExpr("key", "CAST(1 AS INT) AS value"), "column 'value' is int", topic="t")
    assert not (root / "_seglog" / "topics" / "new.json").exists()
    assert CommitLog(root, "t").latest().seq == 0


def test_a_bad_row_fails_the_write_and_nothing_is_written(spark, tmp_path):
    root = tmp_path / "log"
    _write(_df(spark, 10), root, topic="t", partitions=2)
    bad = spark.createDataFrame([(b"k", b"v", 5)], "key binary, value binary, partition int")
    _refused(spark, root, bad, "partition out of range: topic t has 2 partitions", topic="t")
    _write(_df(spark, 2), root, topic="small", partitions=1, **{"max.message.bytes": 200})
    big = spark.createDataFrame([(b"k", b"x" * 500)], "key binary, value binary")
    _refused(spark, root, big, "RecordTooLargeError", topic="small")
    late = spark.createDataFrame([(b"k", b"v", dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc))],
                                 "key binary, value binary, timestamp timestamp")
    _write(_df(spark, 2).drop("timestamp"), root, topic="recent", partitions=1,
           **{"message.timestamp.before.max.ms": 86_400_000})
    _refused(spark, root, late, "TimestampOutOfRangeError", topic="recent")
    assert _staging_left(root) == []
    assert sum(map(len, _core_records(root, "t").values())) == 10


def test_the_python_sink_and_the_dsv2_write_share_the_writers_map(spark, tmp_path):
    from seglog.sink import SegmentLogSink

    root = tmp_path / "log"
    SegmentLogSink(str(root), topic="t", partitions=2, writer_id="q")(_df(spark, 10), 0)
    _write(_df(spark, 10), root, topic="t", txnAppId="q", txnVersion=0)    # the sink's batch 0: skipped
    assert sum(map(len, _core_records(root, "t").values())) == 10
    _write(_df(spark, 5, start=10), root, topic="t", txnAppId="q", txnVersion=1)
    SegmentLogSink(str(root), topic="t", writer_id="q")(_df(spark, 10), 1)   # the write's version 1: skipped
    assert sum(map(len, _core_records(root, "t").values())) == 15


def _json_files(src: Path, first: int, count: int, rows: int) -> None:
    import json
    import os

    src.mkdir(exist_ok=True)
    for f in range(first, first + count):
        path = src / f"part-{f:04d}.json"
        path.write_text("".join(json.dumps({"k": f"f{f}-{j}", "v": f"value {f} {j}"}) + "\n" for j in range(rows)))
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))   # the file source orders by modification time


def test_write_stream_commits_each_micro_batch_once_across_restarts(spark, tmp_path):
    src, root, ckpt = tmp_path / "src", tmp_path / "log", tmp_path / "ckpt"

    def run():
        q = (spark.readStream.schema("k string, v string").option("maxFilesPerTrigger", 1).json(str(src))
             .selectExpr("k AS key", "v AS value")
             .writeStream.format("seglog").option("topic", "ev").option("partitions", "2")
             .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start(str(root)))
        q.awaitTermination()
        return q

    _json_files(src, 0, 3, 25)
    q = run()
    _json_files(src, 3, 2, 25)
    run()
    keys = sorted(k for recs in _core_records(root, "ev").values() for k, _, _ in recs)
    assert keys == sorted(f"f{f}-{j}".encode() for f in range(5) for j in range(25))
    # the writer is the query (its id is kept in the checkpoint), the version its batch id, as the Python sink
    assert CommitLog(root, "ev").last_batch(q.id) == 4
    assert _staging_left(root) == []


def test_write_stream_refuses_batch_only_options(spark, tmp_path):
    src = tmp_path / "src"
    _json_files(src, 0, 1, 1)
    stream = spark.readStream.schema("k string, v string").json(str(src)).selectExpr("k AS key", "v AS value")
    with pytest.raises(Exception, match="option 'txn(AppId|Version)' is for batch writes"):
        (stream.writeStream.format("seglog").option("topic", "ev").option("partitions", "1")
         .option("txnAppId", "a").option("txnVersion", "1")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start(str(tmp_path / "log"))
         .awaitTermination())
    assert not (tmp_path / "log" / "_seglog" / "commits").exists()


def test_headers_timestamp_ntz_string_columns_and_compacted_topics(spark, tmp_path):
    root = tmp_path / "log"
    rows = [(f"k{i}", f"v{i}", dt.datetime(2024, 5, 6, 7, 8, 9) + dt.timedelta(seconds=i),
             [("h", f"x{i}".encode()), ("n", None)] if i % 2 else None) for i in range(10)]
    df = spark.createDataFrame(rows, "key string, value string, timestamp timestamp_ntz, "
                                     "headers array<struct<key: string, value: binary>>")
    _write(df, root, topic="t", partitions=1)
    recs = []
    with Log.open(root / "t-0", readonly=True) as log:
        recs = list(log.read(0))
    assert [r.key for r in recs] == [f"k{i}".encode() for i in range(10)]
    assert [r.value for r in recs] == [f"v{i}".encode() for i in range(10)]
    # timestamp_ntz: a wall time in the session time zone (UTC in the tests' session), as the Python sink
    assert [r.timestamp for r in recs] == [int(dt.datetime(2024, 5, 6, 7, 8, 9 + i, tzinfo=dt.timezone.utc).timestamp()
                                               * 1000) for i in range(10)]
    assert [tuple(r.headers) for r in recs] == [((("h", f"x{i}".encode()), ("n", None)) if i % 2 else ()) for i in range(10)]
    keyless = spark.createDataFrame([(None, b"v")], "key binary, value binary")
    _write(_df(spark, 3), root, topic="c", partitions=1, **{"cleanup.policy": "compact"})
    _refused(spark, root, keyless, "MissingKeyError: topic 'c' is compacted", topic="c")
    assert sum(map(len, _core_records(root, "c").values())) == 3


def test_a_write_failing_in_its_commit_leaves_no_topic_and_no_folder(spark, tmp_path):
    """The commit creates the new topic, then finds a partition folder it must not touch (a clean's
    interrupted swap, which only the core finishes): it fails naming it, and forgets the topic and the
    folders it made, so the corrected request (another partition count) is not refused as a conflict."""
    root = tmp_path / "log"
    (root / "new-2").mkdir(parents=True)
    swap = root / "new-2" / "00000000000000000000.log.swap"
    swap.write_bytes(b"")
    with pytest.raises(Exception, match="log.swap"):
        _write(_df(spark, 30), root, topic="new", partitions=3)
    assert load_topic(root, "new") is None
    assert not (root / "new-0").exists() and not (root / "new-1").exists()
    swap.unlink()
    (root / "new-2").rmdir()
    _write(_df(spark, 30), root, topic="new", partitions=2)
    assert sum(map(len, _core_records(root, "new").values())) == 30


def test_a_write_removes_crashed_runs_but_not_a_live_one(spark, tmp_path):
    """Writes stage without the writer lock, so two runs of one writer and topic may stage side by side:
    the commit removes only run folders whose run lock no driver holds (a killed driver's is dropped)."""
    import hashlib

    from seglog.indexer.locks import FileLock

    root = tmp_path / "log"
    _write(_df(spark, 5), root, topic="t", partitions=1)
    runs = root / "_seglog" / "staging" / "@append" / (hashlib.sha1(b"t").hexdigest()[:16] + "-jvm")
    crashed, live = runs / "append-crashed", runs / "append-live"
    for run in (crashed, live):
        (run / "t0-1").mkdir(parents=True)
        (run / "t0-1" / "s0-0.log").write_bytes(b"staged")
    with FileLock(live / ".run.lock").acquire(0):         # another driver, its tasks staging now
        _write(_df(spark, 5, start=5), root, topic="t")
        assert not crashed.exists()
        assert (live / "t0-1" / "s0-0.log").exists()
    _write(_df(spark, 5, start=10), root, topic="t")        # that driver gone: its run is removed too
    assert not live.exists()
    assert sum(map(len, _core_records(root, "t").values())) == 15


def _staging_folders(root: Path) -> list[str]:
    staging = root / "_seglog" / "staging"
    return sorted(str(p.relative_to(staging)) for p in staging.rglob("*")) if staging.exists() else []


def test_a_write_failing_in_a_task_leaves_no_staging_folder(spark, tmp_path):
    """A write whose task raises (a UDF, on one row) is aborted: its run's folder goes, and with it the writer's
    folders the run made (the topic's first write), so the staging area holds nothing of it."""
    from pyspark.sql.functions import udf

    @udf("binary")
    def value(i):
        if i == 7:
            raise ValueError("no value for row 7")
        return b"v%d" % i

    root = tmp_path / "log"
    rows = spark.range(20).repartition(2).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key", "id")
    with pytest.raises(Exception, match="no value for row 7"):
        _write(rows.withColumn("value", value("id")).drop("id"), root, topic="t", partitions=1)
    assert load_topic(root, "t") is None
    assert _staging_folders(root) == []
    # a writer's later run is unaffected, and its end leaves nothing either
    _write(_df(spark, 10), root, topic="t", partitions=1)
    assert sum(map(len, _core_records(root, "t").values())) == 10
    assert _staging_folders(root) == []


def _tasks_running(spark) -> int:
    return sum(e.numRunningTasks() for e in spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos())


def test_a_task_still_running_after_the_abort_stages_nothing_again(spark, tmp_path):
    """Spark aborts a failed job's write while its other tasks still run (a killed task stops at its next check): a
    straggler that flushes its first batch after the driver removed the run must not make the run's folder again.
    Task 0 fails on its second row; task 1's first row is ten times slower to compute (CPU, which no kill stops),
    so its first staged segment is made after the abort, when its second row arrives."""
    import time

    root = tmp_path / "log"
    _write(_df(spark, 1), root, topic="t", partitions=1, **{"segment.bytes": 1024})   # 2 KiB records: a batch each
    slow = "aggregate(sequence(1, {n}), 0L, (a, x) -> a + aggregate(sequence(1, {n}), 0L, (b, y) -> b + y))"
    rows = spark.range(0, 8, 1, 2).selectExpr(     # task 0: rows 0-3, task 1: rows 4-7
        "CAST(CAST(id AS STRING) AS BINARY) AS key",
        f"CAST(CASE WHEN id = 1 THEN raise_error('row 1 fails') "
        f"WHEN id = 0 THEN concat(CAST({slow.format(n=800)} AS STRING), repeat('v', 2000)) "
        f"WHEN id = 4 THEN concat(CAST({slow.format(n=2500)} AS STRING), repeat('v', 2000)) "
        f"ELSE repeat('v', 2000) END AS BINARY) AS value")
    with pytest.raises(Exception, match="row 1 fails"):
        _write(rows, root, topic="t")
    deadline = time.monotonic() + 300
    while _tasks_running(spark) and time.monotonic() < deadline:     # the straggler ends (it fails, or is killed)
        time.sleep(0.2)
    assert _tasks_running(spark) == 0
    assert [f for f in _staging_folders(root) if "append-" in f] == []
    assert sum(map(len, _core_records(root, "t").values())) == 1


def test_a_commit_lists_and_opens_each_written_partition_once_for_its_roll_back_and_publish(spark, tmp_path):
    """Issue 41: a written partition's lock is held from its roll back to the commit, so its publish starts from the
    folder as the roll back read it: per written partition one listing (the roll back's) and two segment opens (the
    roll back's, then the active segment the copy appends to), where the publish listed and opened it again."""
    root = tmp_path / "log"
    df = _df(spark, 60)
    _write(df, root, topic="t", partitions=4, txnAppId="a", txnVersion=0)
    written = sum(1 for recs in _core_records(root, "t").values() if recs)
    fmt = spark.sparkContext._jvm.io.seglog.spark.format
    listings, opens = fmt.PartitionLog.listings(), fmt.Segment.opens()
    _write(df, root, topic="t", partitions=4, txnAppId="a", txnVersion=1)
    assert (fmt.PartitionLog.listings() - listings, fmt.Segment.opens() - opens) == (written, 2 * written)
    assert sum(map(len, _core_records(root, "t").values())) == 120
