"""`foreachBatch(SegmentLogSink(...))` from a Spark Connect client (issue 25): the sink is a thin layer over
`format("seglog")`, so the function the server's Python worker runs writes through the JVM's DriverCommit,
the writer being the calling query's id found on the server (no sparkContext, no py4j). Also: the query (and
a `writeStream.format("seglog")` one) SIGKILLed with its server mid-stream and restarted from its checkpoint on
a new server writes every row exactly once; quarantine; two checkpoints into one topic both land."""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time

import pytest

from tests.committed import committed_keys
from seglog.errors import TimestampOutOfRangeError
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import load_topic
from seglog.sink import SegmentLogSink

pytestmark = pytest.mark.spark



def now_ms() -> int:
    """Read at each use: a module-level constant, read at collection, was over an hour old by the time a slow
    run reached these tests, and their "now" records were refused by message.timestamp.before.max.ms."""
    return int(time.time() * 1000)


def _verified_keys(root, topic):
    return committed_keys(root, topic, verify=True)


def _json_files(src, first, count, rows, *, age_ms=lambda f, j: 0):
    src.mkdir(exist_ok=True)
    now = now_ms()
    for f in range(first, first + count):
        path = src / f"part-{f:04d}.json"
        path.write_text("".join(json.dumps({"k": f"f{f}-{j}", "ts": now - age_ms(f, j)}) + "\n" for j in range(rows)))
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))


def _stream(session, src):
    return (session.readStream.schema("k string, ts long").option("maxFilesPerTrigger", 1).json(str(src))
            .selectExpr("CAST(k AS BINARY) AS key", "CAST('v' AS BINARY) AS value", "timestamp_millis(ts) AS timestamp"))


@pytest.mark.smoke
def test_foreach_batch_segment_log_sink_writes_each_micro_batch_once(remote, tmp_path):
    src, root = tmp_path / "src", tmp_path / "log"
    _json_files(src, 0, 3, 10)
    q = (_stream(remote, src).writeStream.foreachBatch(SegmentLogSink(str(root), topic="fb", partitions=2))
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    q.awaitTermination()
    assert _verified_keys(root, "fb") == sorted(f"f{f}-{j}".encode() for f in range(3) for j in range(10))
    assert CommitLog(root, "fb").latest().writers == {q.id: 2}       # the query's id, found on the server


def test_two_checkpoints_into_one_topic_both_land(remote, tmp_path):
    """A new checkpoint restarts batch ids at 0: its query's id is another writer, not skipped as committed."""
    root = tmp_path / "log"
    ids = []
    for run in ("a", "b"):
        src = tmp_path / f"src-{run}"
        _json_files(src, 0 if run == "a" else 10, 2, 5)
        q = (_stream(remote, src).writeStream.foreachBatch(SegmentLogSink(str(root), topic="both", partitions=2))
             .option("checkpointLocation", str(tmp_path / f"ckpt-{run}")).trigger(availableNow=True).start())
        q.awaitTermination()
        ids.append(q.id)
    assert _verified_keys(root, "both") == sorted(f"f{f}-{j}".encode() for f in (0, 1, 10, 11) for j in range(5))
    assert CommitLog(root, "both").latest().writers == {ids[0]: 1, ids[1]: 1}


def test_two_queries_of_one_session_running_at_once_each_write_as_themselves(remote, tmp_path):
    """Two foreachBatch(SegmentLogSink) queries of one Connect session running their micro-batches at the same
    time into one topic: each write's writer is the query whose batch its DataFrame is (known on the server from
    the batch's own session), so every row of each lands once and neither fails (issue 36 item 13: the sink once
    picked "the one query of the session in a trigger" and failed whenever the other was mid-batch too)."""
    root, queries = tmp_path / "log", []
    for run in ("a", "b"):   # started idle: each start launches a Python worker, slow on a loaded machine
        (tmp_path / f"src-{run}").mkdir()
        queries.append(_stream(remote, tmp_path / f"src-{run}").writeStream
                       .foreachBatch(SegmentLogSink(str(root), topic="both", partitions=2))
                       .option("checkpointLocation", str(tmp_path / f"ckpt-{run}")).start())
        queries[-1].processAllAvailable()   # idle before the next worker starts (Spark gives it 10 s to connect)
    try:
        for run, first in (("a", 0), ("b", 20)):
            _json_files(tmp_path / f"src-{run}", first, 6, 5)
        for q in queries:
            q.processAllAvailable()
    finally:
        for q in queries:
            q.stop()
    assert _verified_keys(root, "both") == sorted(f"f{f}-{j}".encode() for f in (*range(6), *range(20, 26)) for j in range(5))
    assert CommitLog(root, "both").latest().writers == {queries[0].id: 5, queries[1].id: 5}


def test_quarantine_from_a_connect_client(remote, tmp_path):
    src, root = tmp_path / "src", tmp_path / "log"
    _json_files(src, 0, 2, 6, age_ms=lambda f, j: 86_400_000 if j % 3 == 0 else 0)   # a third a day old
    cfg = {"message.timestamp.before.max.ms": 3_600_000, "message.timestamp.out.of.range.policy": "quarantine",
           "quarantine.topic": "late"}
    q = (_stream(remote, src).writeStream.foreachBatch(SegmentLogSink(str(root), topic="ev", partitions=3, config=cfg))
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    q.awaitTermination()
    assert _verified_keys(root, "late") == sorted(f"f{f}-{j}".encode() for f in range(2) for j in (0, 3))
    assert _verified_keys(root, "ev") == sorted(f"f{f}-{j}".encode() for f in range(2) for j in (1, 2, 4, 5))
    assert load_topic(root, "late").partitions == 3                  # the source topic's count


def test_a_refused_batch_comes_back_typed_to_a_connect_client(remote, tmp_path):
    """Called on a Connect DataFrame (no query: writer_id given), a refusal is the same typed error as in
    classic PySpark, recovered by the Java exception's class from the server's cause chain the
    SparkConnectGrpcException keeps (sink/write_errors.py), and nothing is written."""
    root = tmp_path / "log"
    sink = SegmentLogSink(str(root), topic="ev", partitions=1, writer_id="w",
                          config={"message.timestamp.before.max.ms": 3_600_000})
    now = now_ms()
    rows = [(b"k0", b"v", dt.datetime.fromtimestamp(now / 1000, dt.timezone.utc)),
            (b"k1", b"v", dt.datetime.fromtimestamp((now - 86_400_000) / 1000, dt.timezone.utc))]
    df = remote.createDataFrame(rows, "key binary, value binary, timestamp timestamp")
    with pytest.raises(TimestampOutOfRangeError, match=r"topic 'ev': a record \(key b'k1'\).*before.max.ms=3600000"):
        sink(df, 0)
    assert CommitLog(root, "ev").latest() is None
    sink(df.where("key = CAST('k0' AS BINARY)"), 0)
    assert _verified_keys(root, "ev") == [b"k0"]


# ---------------------------------------------------------------- killed with the server, restarted
FILES, ROWS = 12, 20


def _killed_and_restarted(tmp_path, start_query):
    """Run `start_query(session, src, root, ckpt)` on a server, SIGKILL the server once two micro-batches are
    committed (the kill lands wherever the stream is), then run it to the end from the checkpoint on a new
    server. Returns the log root."""
    from tests.connect_server import ConnectServer

    src, root, ckpt = tmp_path / "src", tmp_path / "log", tmp_path / "ckpt"
    _json_files(src, 0, FILES, ROWS)
    first = ConnectServer(tmp_path / "server-1").start()
    try:
        session = first.session()
        start_query(session, src, root, ckpt, available_now=False)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            state = CommitLog(root, "out").latest() if (root / "_seglog").exists() else None
            if state is not None and max(state.writers.values(), default=-1) >= 1:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("two micro-batches were not committed in 300 s:\n" + first.log_tail())
        os.killpg(first.proc.pid, signal.SIGKILL)
        first.proc.wait()
    finally:
        first.stop()
    second = ConnectServer(tmp_path / "server-2").start()
    try:
        session = second.session()
        q = start_query(session, src, root, ckpt, available_now=True)
        q.awaitTermination()
        session.stop()
    finally:
        second.stop()
    return root


def test_foreach_batch_sink_killed_with_its_server_and_restarted_writes_every_row_once(tmp_path):
    def start(session, src, root, ckpt, available_now):
        w = (_stream(session, src).writeStream.foreachBatch(SegmentLogSink(str(root), topic="out", partitions=2))
             .option("checkpointLocation", str(ckpt)))
        return (w.trigger(availableNow=True) if available_now else w).start()

    root = _killed_and_restarted(tmp_path, start)
    assert _verified_keys(root, "out") == sorted(f"f{f}-{j}".encode() for f in range(FILES) for j in range(ROWS))
    (writer,) = CommitLog(root, "out").latest().writers                 # one query, one writer, both runs
    assert CommitLog(root, "out").last_batch(writer) == FILES - 1


def test_write_stream_format_seglog_killed_with_its_server_and_restarted_writes_every_row_once(tmp_path):
    def start(session, src, root, ckpt, available_now):
        w = (_stream(session, src).writeStream.format("seglog").option("topic", "out").option("partitions", "2")
             .option("checkpointLocation", str(ckpt)))
        return (w.trigger(availableNow=True) if available_now else w).start(str(root))

    root = _killed_and_restarted(tmp_path, start)
    assert _verified_keys(root, "out") == sorted(f"f{f}-{j}".encode() for f in range(FILES) for j in range(ROWS))
