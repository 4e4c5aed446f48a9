"""The seglog data source end to end: real local Spark, real log files, compared with Log.read."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CONFIG = {"segment.bytes": 4096, "index.interval.bytes": 256}
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def timestamps_for(partition: int, n: int) -> np.ndarray:
    i = np.arange(n, dtype=np.int64)
    if partition == 0:   # non-decreasing, with ties (three records per millisecond step)
        return T0 + (i // 3) * 10
    # CreateTime going backwards and forwards, with ties
    return T0 + ((i * 37) % 150) * 10


def commit_all(root, topic, partition, end):
    """Commit `end` for one partition, as the sink would after a batch (readers see only committed records)."""
    commits = CommitLog(root, topic)
    last = commits.last_batch("tests")
    commits.commit("tests", 0 if last is None else last + 1, {partition: end})


def write_partition(root, topic, partition, n, *, headers=False, config=CONFIG, chunks=4, commit=True):
    with Log.open(root / f"{topic}-{partition}", config, outside_commit_log=True) as log:
        ts = timestamps_for(partition, n)
        for lo in range(0, n, max(1, n // chunks)):
            hi = min(n, lo + max(1, n // chunks))
            values = pa.array([f"{topic}-{partition}-value-{i:06d}".encode() * 2 for i in range(lo, hi)], pa.binary())
            keys = pa.array([None if i % 5 == 0 else f"k{i % 7}".encode() for i in range(lo, hi)], pa.binary())
            hdr = None
            if headers:
                hdr = pa.array([[{"key": "h", "value": str(i).encode()}] if i % 2 else [] for i in range(lo, hi)],
                               HEADERS)
            log.append_columns(values, keys=keys, timestamps=ts[lo:hi], headers=hdr)
        log.flush()
        if commit:
            commit_all(root, topic, partition, log.log_end_offset)


def write_old_then_recent(path, config):
    """200 records from 2023 (expired under a retention.ms of an hour), then 100 from now (kept)."""
    import time
    now = int(time.time() * 1000)
    with Log.open(path, config, outside_commit_log=True) as log:
        for lo, n, ts in ((0, 100, T0), (100, 100, T0), (200, 100, now)):
            log.append_columns(pa.array([b"v%06d" % i * 20 for i in range(lo, lo + n)]),
                               timestamps=np.full(n, ts, np.int64))
        log.flush()
        topic, partition = path.name.rsplit("-", 1)
        commit_all(path.parent, topic, int(partition), log.log_end_offset)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("seglog-source")
    write_partition(root, "events", 0, 400, headers=True)
    write_partition(root, "events", 1, 300, headers=True)
    write_partition(root, "events", 2, 0)       # an empty partition
    write_partition(root, "other", 0, 50)
    return root


def log_records(root, topic, partition):
    with Log.open(root / f"{topic}-{partition}", readonly=True) as log:
        return list(log.read())


def expected_rows(root, topic, partitions, keep=lambda p, r: True):
    rows = []
    for p in partitions:
        rows += [(topic, p, r.offset, r.key, r.value, r.timestamp, r.timestamp_type)
                 for r in log_records(root, topic, p) if keep(p, r)]
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def rows_of(df):
    t = df.toArrow()
    ts = t.column("timestamp").cast(pa.int64()).to_pylist()
    out = [(tp, p, o, k, v, None if us is None else us // 1000, tt) for tp, p, o, k, v, us, tt in zip(
        t.column("topic").to_pylist(), t.column("partition").to_pylist(), t.column("offset").to_pylist(),
        t.column("key").to_pylist(), t.column("value").to_pylist(), ts, t.column("timestampType").to_pylist())]
    return sorted(out, key=lambda r: (r[0], r[1], r[2]))


def reader(spark, root, **options):
    r = spark.read.format("seglog").option("topic", "events")
    for k, v in options.items():
        r = r.option(k, v if isinstance(v, str) else json.dumps(v) if isinstance(v, dict) else str(v))
    return r.load(str(root))


def tasks_of(df):
    """How many read tasks produced rows (the scan's partitions are cut by bytes)."""
    from pyspark.sql.functions import spark_partition_id
    return df.select(spark_partition_id().alias("task")).distinct().count()


def first_at_or_after(root, topic, p, ts):
    offs = [r.offset for r in log_records(root, topic, p) if r.timestamp >= ts]
    return min(offs) if offs else None


def test_full_read_matches_log_and_schema(spark, root):
    df = reader(spark, root)
    assert df.schema.simpleString() == ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
                                        "timestamp:timestamp,timestampType:int>")
    expected = expected_rows(root, "events", [0, 1, 2])
    assert len(expected) == 700
    assert rows_of(df) == expected
    # many segments per partition, so reads cross segment boundaries
    assert len(list((root / "events-0").glob("*.log"))) > 5


def test_topic_list(spark, root):
    df = spark.read.format("seglog").option("topic", "events,other").load(str(root))
    assert rows_of(df) == sorted(expected_rows(root, "events", [0, 1, 2]) + expected_rows(root, "other", [0]),
                                 key=lambda r: (r[0], r[1], r[2]))


def test_offsets_json(spark, root):
    df = reader(spark, root, startingOffsets={"events": {"0": 23, "1": -2, "2": -2}},
                endingOffsets={"events": {"0": 250, "1": -1, "2": -1}})
    assert rows_of(df) == expected_rows(root, "events", [0, 1, 2],
                                        lambda p, r: (p != 0 or 23 <= r.offset < 250))


def test_offsets_json_missing_partition_refused(spark, root):
    with pytest.raises(Exception, match=r"missing: events-1, events-2"):
        reader(spark, root, startingOffsets={"events": {"0": 23}}).collect()


def test_starting_and_ending_timestamp(spark, root):
    t_start, t_end = T0 + 400, T0 + 1490  # CreateTime goes backwards in partition 1: later records may be older
    starts = {p: first_at_or_after(root, "events", p, t_start) for p in (0, 1)}
    ends = {p: first_at_or_after(root, "events", p, t_end) for p in (0, 1)}
    ends = {p: 1 << 62 if e is None else e for p, e in ends.items()}   # none at or after: the end
    assert ends[0] == 1 << 62 and ends[1] < 300
    df = reader(spark, root, startingTimestamp=t_start, endingTimestamp=t_end,
                startingOffsetsByTimestampStrategy="latest")  # events-2 is empty
    got = rows_of(df)
    assert got == expected_rows(root, "events", [0, 1], lambda p, r: starts[p] <= r.offset < ends[p])
    assert any(r[5] < t_start for r in got)
    with pytest.raises(Exception, match=r"events-2 has no record with a timestamp at or after"):
        reader(spark, root, startingTimestamp=t_start).collect()   # strategy error, as Kafka   # Kafka semantics: from the offset on, not a timestamp filter


def test_timestamp_tie_starts_at_first_of_equal_timestamps(spark, root):
    t = T0 + 50  # partition 0 holds three records at exactly this timestamp: offsets 15, 16, 17
    df = reader(spark, root, startingOffsetsByTimestamp={"events": {"0": t, "1": t, "2": t}},
                startingOffsetsByTimestampStrategy="latest").where("partition = 0")
    assert [r[2] for r in rows_of(df)][:3] == [15, 16, 17]


def test_timestamp_strategies(spark, root):
    late = T0 + 10_000  # beyond partition 1's largest timestamp
    opts = {"startingOffsetsByTimestamp": {"events": {"0": T0 + 100, "1": late, "2": T0}}}
    with pytest.raises(Exception, match=r"events-1 has no record with a timestamp at or after"):
        reader(spark, root, **opts).collect()
    df = reader(spark, root, startingOffsetsByTimestampStrategy="latest", **opts)
    s0 = first_at_or_after(root, "events", 0, T0 + 100)
    assert rows_of(df) == expected_rows(root, "events", [0], lambda p, r: r.offset >= s0)


def test_where_timestamp_is_pushed_and_exact(spark, root):
    # A fresh DataFrame per query: Spark 4.1 keeps one query's pushdown plan on the relation (see
    # test_dataframe_reuse_after_pushdown).
    def base():
        return reader(spark, root, maxBytesPerTask=2048)

    t = T0 + 1200
    df = base().where(f"timestamp >= timestamp_millis({t})")
    assert rows_of(df) == expected_rows(root, "events", [0, 1], lambda p, r: r.timestamp >= t)
    # the filter became a seek: fewer byte-sized tasks than the full scan, and no Filter left in the plan
    assert tasks_of(base().where(f"timestamp >= timestamp_millis({t})")) < tasks_of(base())
    assert "Filter" not in df._jdf.queryExecution().optimizedPlan().toString()
    lo, hi = T0 + 300, T0 + 600
    df = base().where(f"timestamp > timestamp_millis({lo}) and timestamp <= timestamp_millis({hi}) and partition = 1")
    assert rows_of(df) == expected_rows(root, "events", [1], lambda p, r: lo < r.timestamp <= hi)
    df = base().where(f"timestamp in (timestamp_millis({T0 + 20}), timestamp_millis({T0 + 30}))")
    assert rows_of(df) == expected_rows(root, "events", [0, 1, 2], lambda p, r: r.timestamp in (T0 + 20, T0 + 30))


def test_where_offset_is_pushed(spark, root):
    def base():
        return reader(spark, root, maxBytesPerTask=2048)

    df = base().where("offset >= 100 and offset < 120")
    assert rows_of(df) == expected_rows(root, "events", [0, 1], lambda p, r: 100 <= r.offset < 120)
    assert tasks_of(base().where("offset >= 100 and offset < 120")) == 1 < tasks_of(base())
    df = base().where("offset in (3, 299, 399) and offset != 299")
    assert rows_of(df) == expected_rows(root, "events", [0, 1], lambda p, r: r.offset in (3, 399))


def test_dataframe_reuse_after_pushdown(spark, root):
    """Spark 4.1 stores the read plan made during filter pushdown on the relation, and a later query
    on the same DataFrame with no pushable filter reuses it. With filterPushdown=false the reader keeps
    no state from pushdown, so reuse is exact."""
    df = reader(spark, root, filterPushdown="false")
    assert df.where("offset < 10").count() == 20
    assert df.count() == 700
    assert "Filter" in df.where("offset < 10")._jdf.queryExecution().optimizedPlan().toString()


def test_include_headers(spark, root):
    df = reader(spark, root, includeHeaders="true", endingOffsets={"events": {"0": 10, "1": 10, "2": -1}})
    assert df.schema.simpleString().endswith(",headers:array<struct<key:string,value:binary>>>")
    got = sorted(((r.partition, r.offset, [(h.key, bytes(h.value)) for h in r.headers]) for r in df.collect()))
    want = sorted((p, r.offset, [(k, v) for k, v in r.headers]) for p in (0, 1)
                  for r in log_records(root, "events", p) if r.offset < 10)
    assert got == want and any(h for _, _, h in got)


def test_sql_temporary_view(spark, root):
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW seglog_events USING seglog "
              f"OPTIONS (path '{root}', topic 'events', startingOffsets 'earliest')")
    n = spark.sql(f"SELECT count(*) AS n FROM seglog_events WHERE timestamp >= timestamp_millis({T0 + 700})").first().n
    assert n == len(expected_rows(root, "events", [0, 1], lambda p, r: r.timestamp >= T0 + 700))


@pytest.mark.parametrize("key,value,needle", [
    ("failOnDataLoss", "maybe", "failOnDataLoss"),
    ("startingOffsetsByTimestampStrategy", "first", "'error' or 'latest'"),
    ("startingTimestamp", "noon", "startingTimestamp"),
    ("startingOffset", "earliest", "did you mean 'startingOffsets'"),
])
def test_bad_options_refused_at_load(spark, root, key, value, needle):
    with pytest.raises(Exception, match=needle):
        reader(spark, root, **{key: value})


def test_unknown_topic_refused(spark, root):
    # Refused when the batch read is planned, not at load(): a stream of the same options waits for the topic.
    df = spark.read.format("seglog").option("topic", "nope").load(str(root))
    with pytest.raises(Exception, match=r"topic 'nope' not found.*events, other") as caught:
        df.collect()
    assert caught.value._origin.getClass().getName() == "io.seglog.spark.read.NoSuchTopicException"


def test_read_bounded_by_committed_end(spark, tmp_path):
    write_partition(tmp_path, "committed", 0, 100, commit=False)
    write_partition(tmp_path, "committed", 1, 100, commit=False)
    CommitLog(tmp_path, "committed").commit("w", 0, {0: 60, 1: 100})
    with Log.open(tmp_path / "committed-1", CONFIG, outside_commit_log=True) as log:   # appended, never committed
        log.append_columns(pa.array([b"uncommitted"] * 20), timestamps=np.full(20, T0 + 50_000, np.int64))

    def read(**options):
        r = spark.read.format("seglog").option("topic", "committed")
        for k, v in options.items():
            r = r.option(k, json.dumps(v) if isinstance(v, dict) else str(v))
        return rows_of(r.load(str(tmp_path)))

    assert read() == expected_rows(tmp_path, "committed", [0, 1], lambda p, r: r.offset < (60 if p == 0 else 100))
    got = read(endingOffsets={"committed": {"0": 90, "1": 110}})      # asked past the committed end: capped
    assert max(o for _, p, o, *_ in got if p == 0) == 59 and max(o for _, p, o, *_ in got if p == 1) == 99
    # the only records at or after this timestamp are uncommitted: no offset for it
    with pytest.raises(Exception, match=r"committed-1 has no record with a timestamp at or after"):
        read(startingOffsetsByTimestamp={"committed": {"0": T0, "1": T0 + 50_000}})


def test_retention_deleted_start(spark, tmp_path):
    config = dict(CONFIG, **{"retention.ms": 3_600_000})
    write_old_then_recent(tmp_path / "retained-0", config)
    with Log.open(tmp_path / "retained-0", config, outside_commit_log=True) as log:
        log.seal_inactive()
        result = log.apply_retention()
        log_start = log.log_start_offset
    assert result.deleted_bases and 5 < log_start <= 200

    def read(**options):
        r = spark.read.format("seglog").option("topic", "retained")
        for k, v in options.items():
            r = r.option(k, json.dumps(v) if isinstance(v, dict) else str(v))
        return rows_of(r.load(str(tmp_path)))

    with pytest.raises(Exception, match=rf"retained-0: offsets 5 to {log_start - 1} are no longer in the log"):
        read(startingOffsets={"retained": {"0": 5}})
    want = expected_rows(tmp_path, "retained", [0])
    assert want[0][2] == log_start
    assert read(startingOffsets={"retained": {"0": 5}}, failOnDataLoss="false") == want
    assert read() == want   # earliest is the log start: no data loss


def test_nothing_committed_means_nothing_visible(spark, tmp_path):
    # A new topic's first batch written but not (yet) committed: readers see none of it; a
    # re-delivery may write different rows, and a reader must never have seen the first ones.
    write_partition(tmp_path, "fresh", 0, 40, commit=False)
    df = spark.read.format("seglog").option("topic", "fresh").load(str(tmp_path))
    assert df.count() == 0
    commit_all(tmp_path, "fresh", 0, 25)
    got = rows_of(spark.read.format("seglog").option("topic", "fresh").load(str(tmp_path)))
    assert [o for _, _, o, *_ in got] == list(range(25))


def test_never_written_partition_reads_as_empty(spark, tmp_path):
    from seglog.indexer.topics import create_topic

    create_topic(tmp_path, "sparse", 3, {"segment.bytes": 4096})
    write_partition(tmp_path, "sparse", 0, 30)
    write_partition(tmp_path, "sparse", 2, 20)
    assert not (tmp_path / "sparse-1").exists()
    df = spark.read.format("seglog").option("topic", "sparse").load(str(tmp_path))
    got = rows_of(df)
    assert sorted({p for _, p, *_ in got}) == [0, 2] and len(got) == 50
    assert got == expected_rows(tmp_path, "sparse", [0, 2])
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW sparse_v USING seglog OPTIONS (path '{tmp_path}', topic 'sparse')")
    assert spark.sql("SELECT partition, count(*) AS n FROM sparse_v GROUP BY partition ORDER BY partition").collect() \
        == [(0, 30), (2, 20)]
    # a partition whose folder vanished after records were committed there is data loss, not "empty"
    commit_all(tmp_path, "sparse", 1, 5)
    with pytest.raises(Exception, match=r"sparse-1: the commit log says offsets 0 to 4 were committed"):
        spark.read.format("seglog").option("topic", "sparse").load(str(tmp_path)).count()
    lenient = spark.read.format("seglog").option("topic", "sparse").option("failOnDataLoss", "false")
    assert lenient.load(str(tmp_path)).count() == 50


def test_reads_through_the_jvm_reader(spark, root):
    """format("seglog") is the connector jar's DataSource V2 reader (source/register.py), with the
    pushed filters and pruned columns in its scan."""
    df = reader(spark, root).where(f"timestamp >= timestamp_millis({T0 + 1200})").select("offset")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan seglog[" in plan and "PythonDataSource" not in plan
    assert "pushed=[timestamp>=" in plan
    scan_schema = df._jdf.queryExecution().optimizedPlan().collectLeaves().head().schema().simpleString()
    assert scan_schema == "struct<offset:bigint>"   # only the column asked for is read
    from seglog.source import register
    assert register(spark) == "jvm"
