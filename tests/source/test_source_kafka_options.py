"""Spark's Kafka-source options where a log root gives them meaning, through `format("seglog")` in real
local Spark over real log folders: subscribePattern / assign, maxRecordsPerPartition, -1 / -2 in the
by-timestamp JSONs, maxTriggerDelay's units and minOffsetsPerTrigger as Spark applies it (the first
trigger of a run never held; AvailableNow included), a stream waiting for a topic not created yet, and
the options only a broker gives meaning refused."""
from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CONFIG = {"segment.bytes": 4096, "index.interval.bytes": 256}


def append(root, topic, p, n):
    """n committed records (timestamps T0 + 10 * offset) to topic-p; the new log end."""
    with Log.open(root / f"{topic}-{p}", CONFIG, outside_commit_log=True) as log:
        first = log.log_end_offset
        values = pa.array([b"%s-%d-%06d" % (topic.encode(), p, first + i) for i in range(n)], pa.binary())
        log.append_columns(values, timestamps=T0 + np.arange(first, first + n, dtype=np.int64) * 10)
        log.flush()
        end = log.log_end_offset
    commits = CommitLog(root, topic)
    last = commits.last_batch("tests")
    commits.commit("tests", 0 if last is None else last + 1, {p: end})
    return end


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("kafka-options")
    append(root, "events", 0, 120)
    append(root, "events", 1, 80)
    append(root, "events.eu", 0, 30)
    append(root, "other", 0, 20)
    return root


def _opt(v):
    return v if isinstance(v, str) else json.dumps(v) if isinstance(v, (dict, list)) else str(v)


def read(spark, root, **options):
    r = spark.read.format("seglog")
    for k, v in options.items():
        r = r.option(k, _opt(v))
    return r.load(str(root))


def topic_partitions(df):
    return sorted({(r.topic, r.partition) for r in df.select("topic", "partition").collect()})


def run_available_now(spark, root, out, checkpoint, **options):
    """One availableNow run of readStream.format("seglog") into Parquet; the finished query."""
    r = spark.readStream.format("seglog")
    for k, v in options.items():
        r = r.option(k, _opt(v))
    q = (r.load(str(root)).select("topic", "partition", "offset").writeStream.format("parquet")
         .option("path", str(out)).option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert not q.isActive
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return q


def written(spark, out):
    if not out.exists() or not any(out.glob("*.parquet")):
        return []
    return sorted((r.topic, r.partition, r.offset) for r in spark.read.parquet(str(out)).collect())


def jvm_class(caught) -> str:
    """The JVM exception's class: PySpark shows an IllegalArgumentException's message alone."""
    return caught.value._origin.getClass().getName()


def batch_sizes(q):
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"] > 0]


# ------------------------------------------------------------------ which topics

def test_subscribe_pattern_reads_every_topic_of_the_root_it_matches_whole(spark, root):
    assert topic_partitions(read(spark, root, subscribePattern="events.*")) == [
        ("events", 0), ("events", 1), ("events.eu", 0)]
    assert topic_partitions(read(spark, root, subscribePattern="events")) == [("events", 0), ("events", 1)]
    assert read(spark, root, subscribePattern="other|.*\\.eu").count() == 30 + 20
    assert read(spark, root, subscribePattern="nothing.*").count() == 0      # matches no topic: reads nothing


def test_assign_reads_only_the_partitions_it_names(spark, root):
    df = read(spark, root, assign={"events": [1], "other": [0]})
    assert topic_partitions(df) == [("events", 1), ("other", 0)]
    assert df.count() == 80 + 20
    df = read(spark, root, assign={"events": [1]}, startingOffsets={"events": {"1": 70}})
    assert [r.offset for r in df.collect()] == list(range(70, 80))
    with pytest.raises(Exception, match=r"'assign' names partitions that topic 'events' does not have: events-7") as caught:
        read(spark, root, assign={"events": [0, 7]}).count()
    assert jvm_class(caught) == "io.seglog.spark.read.NoSuchTopicException"


@pytest.mark.parametrize("options,needle", [
    ({"topic": "events", "subscribePattern": "e.*"}, "exactly one of 'subscribe' .*given: topic, subscribePattern"),
    ({"subscribe": "events", "assign": {"events": [0]}}, "exactly one of"),
    ({"subscribePattern": "events-(["}, "for option 'subscribePattern'"),
    ({"assign": "events"}, "for option 'assign'.*e.g."),
    ({"assign": {"events": []}}, "for option 'assign'"),
    ({"subscribePattern": "events.*", "startingOffsets": {"other": {"0": 1}}}, "'startingOffsets' names topic 'other'"),
    ({"topic": "events", "maxRecordsPerPartition": 0}, "for option 'maxRecordsPerPartition'"),
    ({"topic": "events", "maxTriggerDelay": "1.5s"}, "for option 'maxTriggerDelay'"),
    ({"topic": "events", "startingOffsetsByTimestamp": {"events": {"0": -3, "1": 0}}},
     "for option 'startingOffsetsByTimestamp'.*-1 for the latest"),
])
def test_bad_values_refused_at_load_naming_the_option(spark, root, options, needle):
    with pytest.raises(Exception, match=needle):
        read(spark, root, **options)
    with pytest.raises(Exception, match=needle):
        r = spark.readStream.format("seglog")
        for k, v in options.items():
            r = r.option(k, _opt(v))
        r.load(str(root))


@pytest.mark.parametrize("key", ["kafka.bootstrap.servers", "kafka.group.id", "groupIdPrefix"])
def test_options_that_need_a_broker_are_refused_saying_why(spark, root, key):
    with pytest.raises(Exception, match=rf"seglog source: option '{key}' configures Spark's Kafka source's use of a "
                                        r"broker, and seglog has none: it reads the segment files of the log root") as caught:
        read(spark, root, topic="events", **{key: "localhost:9092"})
    assert jvm_class(caught) == "io.seglog.spark.read.BrokerOptionException"
    # The consumer setting seglog honours is still taken; other unknown options stay unknown.
    assert read(spark, root, topic="other", **{"kafka.isolation.level": "read_committed"}).count() == 20
    with pytest.raises(Exception, match="unknown option 'bootstrapservers'"):
        read(spark, root, topic="events", bootstrapServers="x")


def test_a_batch_read_of_a_missing_topic_keeps_its_typed_error(spark, root):
    df = read(spark, root, topic="nope")       # defined: a stream of the same options would wait for the topic
    with pytest.raises(Exception, match=r"seglog source: topic 'nope' not found under .*events, events.eu, other") as caught:
        df.collect()
    assert jvm_class(caught) == "io.seglog.spark.read.NoSuchTopicException"


# ------------------------------------------------------------------ ranges and tasks

def test_minus_one_and_minus_two_in_the_by_timestamp_jsons(spark, root):
    def offsets(**o):
        return [(r.partition, r.offset) for r in read(spark, root, topic="events", **o).orderBy("partition", "offset")
                .select("partition", "offset").collect()]

    everything = [(0, o) for o in range(120)] + [(1, o) for o in range(80)]
    assert offsets(startingOffsetsByTimestamp={"events": {"0": -2, "1": -2}}) == everything
    # -1: from the latest offset (nothing of partition 1); a timestamp for partition 0
    assert offsets(startingOffsetsByTimestamp={"events": {"0": T0 + 1000, "1": -1}}) == [(0, o) for o in range(100, 120)]
    assert offsets(endingOffsetsByTimestamp={"events": {"0": -1, "1": -2}}) == [(0, o) for o in range(120)]


def test_max_records_per_partition_cuts_tasks(spark, root):
    from pyspark.sql.functions import spark_partition_id

    df = read(spark, root, topic="events", maxRecordsPerPartition=30)
    per_task = df.groupBy(spark_partition_id().alias("task")).count().collect()
    assert sum(r["count"] for r in per_task) == 200
    assert len(per_task) == 7 and max(r["count"] for r in per_task) <= 30     # ceil(200 / 30) tasks
    assert sorted(r.offset for r in df.where("partition = 0").collect()) == list(range(120))


# ------------------------------------------------------------------ streams

def test_a_stream_started_before_its_topic_exists_waits_for_it(spark, tmp_path):
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    append(root, "present", 0, 5)
    q = run_available_now(spark, root, out, cp, subscribe="later")
    assert q.exception() is None and written(spark, out) == []
    append(root, "later", 0, 40)
    append(root, "later", 1, 10)
    run_available_now(spark, root, out, cp, subscribe="later")
    # A topic found later is read from its start (new partitions start at the earliest offset, as in Spark).
    assert written(spark, out) == [("later", 0, o) for o in range(40)] + [("later", 1, o) for o in range(10)]


def test_a_pattern_stream_takes_topics_created_later(spark, tmp_path):
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    append(root, "logs-a", 0, 10)
    append(root, "metrics", 0, 10)
    run_available_now(spark, root, out, cp, subscribePattern="logs-.*", startingOffsets="earliest")
    append(root, "logs-b", 0, 7)
    append(root, "logs-a", 0, 3)
    run_available_now(spark, root, out, cp, subscribePattern="logs-.*", startingOffsets="earliest")
    assert written(spark, out) == [("logs-a", 0, o) for o in range(13)] + [("logs-b", 0, o) for o in range(7)]


def test_min_offsets_per_trigger_under_available_now_as_spark_applies_it(spark, tmp_path):
    """Spark passes the source's default limit under AvailableNow: the run's first trigger is never held, a
    later one with fewer than minOffsetsPerTrigger offsets left is (maxTriggerDelay not passed), and the run
    ends there; the next run's first trigger takes the rest."""
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    append(root, "a", 0, 250)
    opts = dict(topic="a", startingOffsets="earliest", maxOffsetsPerTrigger=100, minOffsetsPerTrigger=60,
                maxTriggerDelay="1h")
    q = run_available_now(spark, root, out, cp, **opts)
    assert batch_sizes(q) == [100, 100]
    assert len(written(spark, out)) == 200
    q = run_available_now(spark, root, out, cp, **opts)
    assert batch_sizes(q) == [50]
    assert written(spark, out) == [("a", 0, o) for o in range(250)]


def test_the_first_trigger_after_a_restart_is_not_delayed(spark, tmp_path):
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    append(root, "f", 0, 50)
    opts = dict(topic="f", startingOffsets="earliest", minOffsetsPerTrigger=1000, maxTriggerDelay="1d")
    assert batch_sizes(run_available_now(spark, root, out, cp, **opts)) == [50]
    append(root, "f", 0, 20)
    assert batch_sizes(run_available_now(spark, root, out, cp, **opts)) == [20]
    assert written(spark, out) == [("f", 0, o) for o in range(70)]


def test_min_offsets_per_trigger_waits_for_max_trigger_delay_after_the_first_trigger(spark, tmp_path):
    root = tmp_path / "root"
    append(root, "w", 0, 50)
    q = (spark.readStream.format("seglog").option("topic", "w").option("startingOffsets", "earliest")
         .option("minOffsetsPerTrigger", 1000).option("maxTriggerDelay", "3000ms").load(str(root))
         .writeStream.format("memory").queryName("min_offsets_delay").trigger(processingTime="200 milliseconds").start())
    try:
        def rows():
            return spark.table("min_offsets_delay").count()

        deadline = time.time() + 90
        while time.time() < deadline and rows() < 50:
            time.sleep(0.2)
        assert rows() == 50                                  # the first trigger went ahead with 50 < 1000
        append(root, "w", 0, 30)
        while time.time() < deadline and rows() < 80:
            time.sleep(0.2)
        assert rows() == 80
        batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
        assert [p["numInputRows"] for p in batches] == [50, 30]

        import datetime as dt

        def at(p):
            return dt.datetime.strptime(p["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)

        # held back until maxTriggerDelay passed since the first trigger (less the second trigger's own start-up)
        assert (at(batches[1]) - at(batches[0])).total_seconds() >= 3 - 1
    finally:
        q.stop()
