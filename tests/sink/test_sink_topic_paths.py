"""Rules a user's configuration reaches through the sink, checked through the public paths (the sink,
the real sidecar process, `seglog import`), not only through `create_topic`:
- every key a topic's creator asked for is recorded, even one equal to the built-in default, so the
  sidecar's `log:` defaults never replace it (a retention the user asked for is the one applied);
- the quarantine policy works on every batch, not only the first (its topic already exists then);
- a keyless record is judged where quarantine routes it: refused before anything is written when
  that topic is compacted."""
from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time

import pytest

from seglog.conf.topic_config import TOPIC_DEFAULTS
from seglog.errors import InvalidTopicError, MissingKeyError
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from seglog.indexer.topics import create_topic, load_topic
from seglog.sink.segment_log_sink import RETRIED_AFTER_RECOVERY, SegmentLogSink

pytestmark = pytest.mark.spark

WEEK_MS = 7 * 86_400_000
SIDECAR = """
root: {root}
log: {{retention.ms: 3600000, file.delete.delay.ms: 0}}
http: {{host: 127.0.0.1, port: 0}}
"""


def _rows(spark, now_ms, ages_ms, keyed=True, value_bytes=8):
    rows = [((b"k%d" % i) if keyed else None, b"v%d-" % i + b"x" * value_bytes,
             dt.datetime.fromtimestamp((now_ms - age) / 1000, dt.timezone.utc)) for i, age in enumerate(ages_ms)]
    return spark.createDataFrame(rows, "key binary, value binary, timestamp timestamp")


def _records(root, topic, partitions):
    ends = CommitLog(root, topic).end_offsets()
    out = []
    for p in range(partitions):
        path = root / f"{topic}-{p}"
        if path.is_dir():
            with Log.open(path, readonly=True) as log:
                out += list(log.read(log.log_start_offset, ends.get(p, 0)))
    return out


def _sidecar_once(tmp_path, root):
    config = tmp_path / "compactor.yaml"
    config.write_text(SIDECAR.format(root=root))
    done = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_default_equal_retention_asked_through_the_sink_outlives_the_sidecars_defaults(spark, tmp_path):
    assert TOPIC_DEFAULTS["retention.ms"] == WEEK_MS     # the case: the value asked equals the default
    root = tmp_path / "root"
    sink = SegmentLogSink(str(root), writer_id="w0", topic="ev", partitions=1,
                          config={"retention.ms": WEEK_MS, "segment.bytes": 1024})
    now = int(time.time() * 1000)
    sink(_rows(spark, now, [2 * 3_600_000] * 5, value_bytes=700), 0)   # 2 h old, a segment each
    assert load_topic(root, "ev").config == {"retention.ms": WEEK_MS, "segment.bytes": 1024}
    with Log.open(root / "ev-0", readonly=True) as log:
        assert len(log.segments()) >= 5
    _sidecar_once(tmp_path, root)   # its log: says retention.ms 1 h; the topic asked for 7 days
    assert sorted(r.key for r in _records(root, "ev", 1)) == [b"k%d" % i for i in range(5)]


def test_the_sidecars_default_still_applies_to_keys_the_topic_never_asked_for(spark, tmp_path):
    """The converse, so the test above cannot pass by a sidecar that ignores its `log:`."""
    root = tmp_path / "root"
    SegmentLogSink(str(root), writer_id="w0", topic="ev", partitions=1, config={"segment.bytes": 1024})(
        _rows(spark, int(time.time() * 1000), [2 * 3_600_000] * 5, value_bytes=700), 0)
    _sidecar_once(tmp_path, root)
    assert _records(root, "ev", 1) == []


def test_aliases_and_default_equal_keys_are_recorded_by_kafka_names(tmp_path):
    meta = create_topic(tmp_path, "t", 1, {"max.message.time.difference.ms": 3_600_000,
                                           "cleanup.policy": TOPIC_DEFAULTS["cleanup.policy"]})
    assert meta.config == {"message.timestamp.before.max.ms": 3_600_000,
                           "message.timestamp.after.max.ms": 3_600_000,
                           "cleanup.policy": TOPIC_DEFAULTS["cleanup.policy"]}


def test_seglog_import_records_a_default_equal_key(tmp_path):
    src = tmp_path / "broker" / "in-0"
    with Log.open(src, outside_commit_log=True) as log:
        log.append_columns([b"a", b"b"], timestamps=[1_700_000_000_000, 1_700_000_000_001])
    root = tmp_path / "root"
    res = subprocess.run([sys.executable, "-m", "seglog", "import", str(src), str(root), "--topic", "imp",
                          "--config", f"retention.ms={WEEK_MS}"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert load_topic(root, "imp").config["retention.ms"] == WEEK_MS


QUARANTINE = {"message.timestamp.before.max.ms": 3_600_000, "message.timestamp.out.of.range.policy": "quarantine",
              "quarantine.topic": "ev-quarantine"}


def test_quarantine_keeps_working_after_its_topic_exists(spark, tmp_path):
    root = tmp_path / "root"
    sink = SegmentLogSink(str(root), writer_id="w0", topic="ev", partitions=3, config={**QUARANTINE, "segment.bytes": 4096})
    now = int(time.time() * 1000)
    for batch in range(3):   # every batch has rows in range and rows a day old
        sink(_rows(spark, now, [0, 86_400_000, 5, 86_400_000]), batch)
    assert len(_records(root, "ev", 3)) == 6 and len(_records(root, "ev-quarantine", 3)) == 6
    assert load_topic(root, "ev-quarantine").partitions == 3
    assert CommitLog(root, "ev-quarantine").last_batch("w0") == 2


def test_quarantine_in_a_streaming_query_past_its_first_batch(spark, tmp_path):
    src, root = tmp_path / "in", tmp_path / "root"
    src.mkdir()
    now = int(time.time() * 1000)
    for i in range(3):
        f = src / f"part-{i}.json"
        f.write_text("".join(f'{{"k": "{i}-{j}", "age": {86_400_000 if j % 2 else 0}}}\n' for j in range(10)))
    stream = (spark.readStream.schema("k string, age long").option("maxFilesPerTrigger", 1).json(str(src))
              .selectExpr("CAST(k AS BINARY) AS key", "CAST(k AS BINARY) AS value",
                          f"timestamp_millis({now} - age) AS timestamp"))
    q = (stream.writeStream.foreachBatch(SegmentLogSink(str(root), topic="ev", partitions=2, config=QUARANTINE))
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    assert len(_records(root, "ev", 2)) == 15 and len(_records(root, "ev-quarantine", 2)) == 15


def test_a_keyless_record_routed_to_a_compacted_quarantine_topic_is_refused_before_writing(spark, tmp_path):
    root = tmp_path / "root"
    create_topic(root, "ev-quarantine", 2, {"cleanup.policy": "compact"})
    sink = SegmentLogSink(str(root), writer_id="w0", topic="ev", partitions=2, config=QUARANTINE)
    now = int(time.time() * 1000)
    sink(_rows(spark, now, [0, 86_400_000]), 0)              # keyed: fine
    before = {p: sorted(f.stat().st_size for f in p.iterdir()) for p in root.glob("ev*-*")}
    rows = [(b"a", b"in range", dt.datetime.fromtimestamp(now / 1000, dt.timezone.utc)),
            (None, b"a day old", dt.datetime.fromtimestamp((now - 86_400_000) / 1000, dt.timezone.utc))]
    df = spark.createDataFrame(rows, "key binary, value binary, timestamp timestamp")
    with pytest.raises(MissingKeyError, match="'ev-quarantine' is compacted.*null key.*nothing was written"):
        sink(df, 1)
    assert {p: sorted(f.stat().st_size for f in p.iterdir()) for p in root.glob("ev*-*")} == before
    assert CommitLog(root, "ev").last_batch("w0") == 0
    # a keyless row in range goes to the main (delete) topic: accepted
    ok = [(None, b"in range", dt.datetime.fromtimestamp(now / 1000, dt.timezone.utc))]
    sink(spark.createDataFrame(ok, "key binary, value binary, timestamp timestamp"), 1)
    assert len(_records(root, "ev", 2)) == 2 and len(_records(root, "ev-quarantine", 2)) == 1


def test_a_swap_left_by_a_killed_sidecar_does_not_fail_the_next_delivery(spark, tmp_path, monkeypatch, caplog):
    """Found by the 30-minute soak: a sidecar killed inside a clean's swap leaves a `.log.swap`; the sink's
    look for a crashed delivery opened the partition read-only, which refuses a listing taken mid-swap, so
    the streaming query died at its next batch. The writable open finishes the swap instead."""
    import os

    from seglog.indexer.topics import load_topic as _load
    from tests.crashing_os import run_crashing_at

    root = tmp_path / "root"
    cfg = {"cleanup.policy": "compact", "segment.bytes": 1024, "index.interval.bytes": 64}
    sink = SegmentLogSink(str(root), writer_id="w0", topic="state", partitions=1, config=cfg)
    now = int(time.time() * 1000)
    for batch in range(4):
        rows = [(b"k%d" % (i % 5), b"v%d-%d" % (batch, i) + b"x" * 60,
                 dt.datetime.fromtimestamp(now / 1000, dt.timezone.utc)) for i in range(20)]
        sink(spark.createDataFrame(rows, "key binary, value binary, timestamp timestamp"), batch)
    part = root / "state-0"
    topic_cfg = _load(root, "state").topic_config()
    # crash the clean at successive renames until one leaves the .log.swap a killed sidecar leaves
    for n in range(1, 200):
        crashed = run_crashing_at(monkeypatch, n, part, topic_cfg, lambda log: log.clean(now + 10**9, force=True))
        assert crashed, "the clean finished before a .log.swap was seen"
        if any(f.endswith(".log.swap") for f in os.listdir(part)):
            break
    with pytest.raises(Exception, match="being swapped in"):
        with Log.open(part, readonly=True):
            pass
    rows = [(b"k9", b"after the swap", dt.datetime.fromtimestamp(now / 1000, dt.timezone.utc))]
    with caplog.at_level("WARNING", logger="seglog.sink"):
        sink(spark.createDataFrame(rows, "key binary, value binary, timestamp timestamp"), 4)
    # the retry is said, with the folder: Spark logged the first attempt's abort as ERROR lines (the soak pairs them)
    said = [r.getMessage() for r in caplog.records if r.name == "seglog.sink"]
    assert len(said) == 1 and said[0].startswith(RETRIED_AFTER_RECOVERY) and str(part) in said[0], said
    assert not [f for f in os.listdir(part) if f.endswith(".swap")]
    latest = {r.key: r.value for r in _records(root, "state", 1)}
    assert latest[b"k9"] == b"after the swap"
    # nothing lost or changed by the interrupted clean, finished by the sink's open: the last value per key
    assert latest == {**{b"k%d" % j: b"v3-%d" % (15 + j) + b"x" * 60 for j in range(5)}, b"k9": b"after the swap"}


def test_a_topic_colliding_with_one_of_the_root_is_refused_by_the_writers(spark, tmp_path):
    """Issue 37 item 11: Kafka refuses a topic whose name differs from an existing one only by '.' against '_'
    (one metric name); so do the JVM's writers (DriverCommit -> TopicCatalog.create), through the sink and through
    df.write.format("seglog"): a typed InvalidTopic error naming the existing topic, nothing created."""
    root = tmp_path / "root"
    create_topic(root, "a.b", 1)
    df = _rows(spark, int(time.time() * 1000), [1000, 2000])

    def nothing_created():
        assert sorted(p.name for p in root.iterdir() if p.name != "_seglog") == []
        assert load_topic(root, "a_b") is None and CommitLog(root, "a.b").latest() is None

    with pytest.raises(InvalidTopicError, match=r"topic 'a_b' collides with existing topic 'a.b'"):
        SegmentLogSink(str(root), writer_id="collide", topic="a_b", partitions=1)(df, 0)
    nothing_created()
    with pytest.raises(Exception, match=r"topic 'a_b' collides with existing topic 'a.b'"):
        df.write.format("seglog").mode("append").option("topic", "a_b").option("partitions", "1").save(str(root))
    nothing_created()
