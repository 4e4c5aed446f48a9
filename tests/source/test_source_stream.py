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
from seglog.indexer.topics import create_topic, load_topic

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CONFIG = {"segment.bytes": 4096, "index.interval.bytes": 256}


def append(root, topic, p, n, *, ts0=T0, commit=True):
    """n records to one partition (value names partition and offset); commit the log end if asked."""
    with Log.open(root / f"{topic}-{p}", CONFIG, outside_commit_log=True) as log:
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
    return sorted((r.partition, r.offset, None if r.value is None else bytes(r.value)) for r in rows)


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
    # checkpointed per topic-partition, Kafka's JSON, with the topic's id beside (docs/spec.md §8)
    assert offsets == {"s": {"0": 350, "1": 225, "2": 40}, "@topicIds": {"s": load_topic(root, "s").topic_id}}


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
    assert offsets_of(first)["m"] == {"0": 66, "1": 33}   # shares in proportion to backlog
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
    with Log.open(root / "r-0", config, outside_commit_log=True) as log:
        log.roll()
        log.seal_inactive()
        log.apply_retention()
        log_start = log.log_start_offset
    assert 10 < log_start <= 200
    with pytest.raises(Exception, match=rf"r-0: offsets 10 to {log_start - 1} are no longer in the log"):
        stream(spark, root, "r", tmp_path / "o-c1", tmp_path / "c1", startingOffsets="earliest")
    stream(spark, root, "r", tmp_path / "o-c2", tmp_path / "c2", startingOffsets="earliest", failOnDataLoss="false")
    assert [o for _, o, _ in output(spark, tmp_path / "o-c2")] == list(range(10)) + list(range(log_start, 300))


@pytest.mark.kafka
def test_read_committed_stream_holds_back_at_an_open_transaction(spark, kafka_broker, tmp_path):
    """A real broker's partition with a transaction still open: a read_committed stream stops before it
    (the last stable offset) instead of moving past it; once the transaction ends (aborted here), the
    next run reads on, and the whole is what the Python core reads under read_committed."""
    import random
    import shutil

    from tests.indexer.test_kafka_broker_read import transaction_producers
    from tests.kafka_clients import create_topic as broker_topic

    topic = "stream-open-txn"
    broker_topic(kafka_broker, topic)
    rng = random.Random(4)
    plain, committed, open_, send = transaction_producers(kafka_broker, topic, rng)

    def snapshot():
        shutil.rmtree(tmp_path / "root", ignore_errors=True)
        shutil.copytree(kafka_broker.partition_dir(topic), tmp_path / "root" / f"{topic}-0")
        with Log.open(tmp_path / "root" / f"{topic}-0", readonly=True) as log:
            commit_end(tmp_path / "root", topic, {0: log.log_end_offset})

    committed.begin_transaction()
    send(committed, 20)
    committed.commit_transaction(60)
    send(plain, 10)
    open_.begin_transaction()
    send(open_, 15)
    send(plain, 10)
    snapshot()
    opts = {"startingOffsets": "earliest", "kafka.isolation.level": "read_committed"}
    stream(spark, tmp_path / "root", topic, tmp_path / "out", tmp_path / "cp", **opts)
    first = output(spark, tmp_path / "out")
    assert len(first) == 30                                 # up to the open transaction, no further
    open_.abort_transaction(60)
    send(plain, 5)
    snapshot()
    stream(spark, tmp_path / "root", topic, tmp_path / "out", tmp_path / "cp", **opts)
    with Log.open(tmp_path / "root" / f"{topic}-0", readonly=True) as log:
        want = [(0, r.offset, r.value) for r in log.read(isolation_level="read_committed")]
    got = output(spark, tmp_path / "out")
    assert [(p, o, v) for p, o, v in got] == want and len(want) == 30 + 10 + 5


COMPACT = {"cleanup.policy": "compact", "segment.bytes": 1024, "index.interval.bytes": 128,
           "min.cleanable.dirty.ratio": 0.01, "delete.retention.ms": 1 << 40}


def keyed(root, topic, pairs, now):
    """Keyed records (key, value) to partition 0 of a compacted topic, flushed and committed; the end."""
    with Log.open(root / f"{topic}-0", COMPACT, outside_commit_log=True) as log:
        log.append_columns(pa.array([v for _, v in pairs], pa.binary()), keys=pa.array([k for k, _ in pairs], pa.binary()),
                           timestamps=np.full(len(pairs), now, np.int64))
        log.flush()
        end = log.log_end_offset
    commit_end(root, topic, {0: end})
    return end


def clean(root, topic, now):
    with Log.open(root / f"{topic}-0", COMPACT, outside_commit_log=True) as log:
        log.roll()
        assert log.clean(now, force=True).cleaned


def core_rows_from(root, topic, start):
    with Log.open(root / f"{topic}-0", readonly=True) as log:
        return [(0, r.offset, r.value) for r in log.read(start)]


def test_stream_inside_a_cleaned_range_and_checkpoint_across_a_clean(spark, tmp_path):
    """Issue 14: a stream started inside a cleaned range continues at the next surviving offset; a
    checkpointed offset whose record a later clean removes still resumes there, at the next survivor,
    with nothing lost and nothing twice (failOnDataLoss stays true: a cleaned record is not data loss)."""
    root = tmp_path / "root"
    create_topic(root, "kv", 1, COMPACT)
    pairs = [(b"once", b"v")] + [(b"k%d" % (i % 12), b"v%04d" % i) for i in range(300)]
    keyed(root, "kv", pairs, T0)
    clean(root, "kv", T0 + 1000)
    with Log.open(root / "kv-0", readonly=True) as log:
        survivors = [r.offset for r in log.read()]
    assert len(survivors) < 40                                   # 12 keys: nearly everything cleaned
    gap = next(o + 1 for o, n in zip(survivors, survivors[1:]) if n > o + 1)
    q = stream(spark, root, "kv", tmp_path / "out1", tmp_path / "cp1", startingOffsets={"kv": {"0": gap}})
    assert output(spark, tmp_path / "out1") == [r for r in core_rows_from(root, "kv", 0) if r[1] >= gap]
    assert q.lastProgress is None or offsets_of(q.lastProgress["sources"][0])["kv"]["0"] == survivors[-1] + 1

    # A checkpoint at the end; then the record at the checkpointed offset is superseded and cleaned away.
    out, cp = tmp_path / "out2", tmp_path / "cp2"
    stream(spark, root, "kv", out, cp, startingOffsets="earliest")
    checkpointed = keyed(root, "kv", [], T0)
    keyed(root, "kv", [(b"gone", b"first"), (b"stays", b"x")] + [(b"gone", b"second")], T0 + 2000)
    clean(root, "kv", T0 + 3000)
    end = keyed(root, "kv", [(b"after", b"y")], T0 + 4000)
    with Log.open(root / "kv-0", readonly=True) as log:
        assert checkpointed not in {r.offset for r in log.read()}     # the checkpointed record is gone
    stream(spark, root, "kv", out, cp, startingOffsets="earliest")
    got = output(spark, out)
    before = [r for r in got if r[1] < checkpointed]
    after = [r for r in got if r[1] >= checkpointed]
    assert after == [r for r in core_rows_from(root, "kv", checkpointed) if r[1] < end]
    assert [v for _, _, v in after] == [b"x", b"second", b"y"]
    assert len({r[1] for r in got}) == len(got)                    # nothing twice
    assert before                                                   # the first run's rows are kept


def test_a_batch_planned_before_a_kill_runs_again_with_its_offsets_from_the_log(spark, tmp_path):
    """A query killed after it wrote batch N's offsets but before N's commit: on restart Spark runs N again with its
    offsets read back from the offset log, handed to the stream as generic SerializedOffsets (the progress report's
    metrics of that batch); cast, that failed the query (the system soak's consumer, after a kill). Every record
    once, the metrics reported."""
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    append(root, "k", 0, 300)
    stream(spark, root, "k", out, cp, startingOffsets="earliest", maxOffsetsPerTrigger=100)
    last = max(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
    assert (cp / "offsets" / str(last)).is_file()
    (cp / "commits" / str(last)).unlink()                   # killed between the batch's offsets and its commit
    (cp / "commits" / f".{last}.crc").unlink(missing_ok=True)
    append(root, "k", 0, 50)
    q = stream(spark, root, "k", out, cp, startingOffsets="earliest", maxOffsetsPerTrigger=100)
    got = output(spark, out)
    assert len(got) == len(set(got)) == 350
    assert [v for _, _, v in got] == core_values(root, "k", 0)
    rerun = [p for p in q.recentProgress if p["batchId"] == last]
    assert rerun                                             # the batch run again, and reported
