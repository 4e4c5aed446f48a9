"""The writer of a `foreachBatch(SegmentLogSink)` call is its query's id, known from the batch's DataFrame on the
driver JVM (issue 36): a sink called from a worker thread of the function (a fan-out to several topics with a
thread pool) writes as its query, so a second query (another checkpoint) into the same topics is not skipped as
the first one's batches; a DataFrame no query's micro-batch is refused naming writer_id."""
from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.sink.input_schema import SinkInputError
from seglog.sink.segment_log_sink import SegmentLogSink
from tests.committed import committed_keys

pytestmark = pytest.mark.spark


def _json_files(src, run, files, rows):
    src.mkdir()
    for i in range(files):
        f = src / f"part-{i}.json"
        f.write_text("".join(json.dumps({"k": f"{run}{i}-{j}"}) + "\n" for j in range(rows)))
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))


def test_sinks_called_from_a_thread_pool_write_as_their_query(spark, tmp_path):
    """Two queries (two checkpoints), each fanning every batch out to two topics from a ThreadPoolExecutor: a
    worker thread has no `sql.streaming.queryId` on its JVM side, and every row of both lands once in each topic
    (it once recorded the writer `default`, and the second query's batches 0-2 were skipped: 30 of 60 rows)."""
    root, ids = tmp_path / "log", []
    for run in ("a", "b"):
        src = tmp_path / f"in-{run}"
        _json_files(src, run, 3, 10)
        sinks = [SegmentLogSink(str(root), topic=t, partitions=2) for t in ("left", "right")]

        def fan_out(df, batch_id, sinks=sinks):
            with ThreadPoolExecutor(2) as pool:
                for done in [pool.submit(s, df, batch_id) for s in sinks]:
                    done.result()

        stream = spark.readStream.schema("k string").option("maxFilesPerTrigger", 1).json(str(src)).selectExpr(
            "CAST(k AS BINARY) AS key", "CAST(k AS BINARY) AS value")
        q = (stream.writeStream.foreachBatch(fan_out).option("checkpointLocation", str(tmp_path / f"ckpt-{run}"))
             .trigger(availableNow=True).start())
        q.awaitTermination()
        ids.append(q.id)
    every = sorted(f"{run}{i}-{j}".encode() for run in "ab" for i in range(3) for j in range(10))
    for topic in ("left", "right"):
        assert committed_keys(root, topic, verify=True) == every
        assert CommitLog(root, topic).latest().writers == {ids[0]: 2, ids[1]: 2}


def test_a_batch_of_another_session_on_a_worker_thread_is_refused(spark, tmp_path):
    """Inside foreachBatch, a DataFrame made from the outer session on a worker thread is no query's micro-batch
    and that thread has no query: the call is refused naming writer_id (never a guessed writer), and the query
    fails with that error; nothing is written."""
    root, src = str(tmp_path / "log"), tmp_path / "in"
    _json_files(src, "a", 1, 3)
    sink = SegmentLogSink(root, topic="t", partitions=1)

    def other(df, batch_id):
        with ThreadPoolExecutor(1) as pool:
            pool.submit(sink, spark.range(3).selectExpr("CAST(id AS STRING) AS value"), batch_id).result()

    stream = spark.readStream.schema("k string").json(str(src)).selectExpr("k AS value")
    q = (stream.writeStream.foreachBatch(other).option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(availableNow=True).start())
    with pytest.raises(Exception, match=r"no streaming query's micro-batch.*writer_id"):
        q.awaitTermination()
    assert CommitLog(root, "t").latest() is None


def test_a_reserved_writer_id_is_refused_when_the_sink_is_made(tmp_path):
    for name in ("default", "append", "seglog-import", ".", ".."):
        with pytest.raises(SinkInputError, match=f"writer_id = '{name}'; reserved"):
            SegmentLogSink(str(tmp_path), topic="t", writer_id=name)
