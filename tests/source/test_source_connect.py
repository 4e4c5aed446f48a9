"""format("seglog") from Spark Connect (issue 25): a real Connect server with the connector jar
(tests/connect_server.py) and pyspark's Connect client, as on a platform where Connect is the only mode.
Batch and streaming reads return what the Python core reads; pushed aggregates and filters hold; a
stream restarted from its checkpoint reads each committed record once; a bad option and a damaged
segment come back to the client as the JVM reader's typed errors, never as fewer rows."""
from __future__ import annotations


import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from seglog.indexer.topics import create_topic

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CONFIG = {"segment.bytes": 4096, "index.interval.bytes": 256}


def append(root, topic, p, n, *, commit=True):
    with Log.open(root / f"{topic}-{p}", CONFIG, outside_commit_log=True) as log:
        first = log.log_end_offset
        values = pa.array([b"%s-%d-%06d" % (topic.encode(), p, first + i) for i in range(n)], pa.binary())
        keys = pa.array([b"k%d" % (i % 7) for i in range(first, first + n)], pa.binary())
        log.append_columns(values, keys, T0 + np.arange(first, first + n, dtype=np.int64) * 10)
        log.flush()
        end = log.log_end_offset
    if commit:
        commits = CommitLog(root, topic)
        last = commits.last_batch("tests")
        commits.commit("tests", 0 if last is None else last + 1, {p: end})
    return end


def core_rows(root, topic, partitions, start_ts=None):
    """The Python core's committed records (readers stop at the commit log's end)."""
    ends = CommitLog(root, topic).end_offsets()
    rows = []
    for p in range(partitions):
        with Log.open(root / f"{topic}-{p}", readonly=True) as log:
            rows += [(p, r.offset, r.key, r.value, r.timestamp) for r in log.read(0, ends.get(p, 0))
                     if start_ts is None or r.timestamp >= start_ts]
    return sorted(rows)


def test_batch_read_aggregates_and_filters(remote, tmp_path):
    root = tmp_path / "root"
    create_topic(root, "c", 3, CONFIG)
    for p, n in ((0, 400), (1, 250), (2, 90)):
        append(root, "c", p, n)
    append(root, "c", 1, 30, commit=False)                 # written, never committed: invisible
    df = remote.read.format("seglog").option("topic", "c").option("startingOffsets", "earliest").load(str(root))
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value), int(r.timestamp.timestamp() * 1000))
                 for r in df.select("partition", "offset", "key", "value", "timestamp").collect())
    assert got == core_rows(root, "c", 3)
    assert df.count() == 740                               # a pushed count (answered on the server's driver)
    agg = {r.partition: (r["count(1)"], r["min(offset)"], r["max(offset)"])
           for r in df.groupBy("partition").agg({"*": "count", "offset": "min"}).join(
               df.groupBy("partition").agg({"offset": "max"}), "partition").collect()}
    assert agg == {0: (400, 0, 399), 1: (250, 0, 249), 2: (90, 0, 89)}
    cut = T0 + 300 * 10
    late = df.where(df.timestamp >= remote.sql(f"SELECT timestamp_millis({cut}) AS t").first().t)
    assert late.count() == len(core_rows(root, "c", 3, start_ts=cut)) == 100


def test_register_finds_the_servers_connector_and_never_shadows_it(remote, tmp_path, monkeypatch):
    """Issue 37 item 10: README's `register(spark)` on a Connect session asks the server (it has the jar), not a
    client JVM it does not have; `python_fallback=True` there registers no Python source of the same name (which
    would make every format("seglog") fail): both say the JVM reader serves, and format("seglog") reads after.
    A server whose connector is another version than the client's seglog is refused, fallback or not, and its
    format("seglog") is left alone."""
    import seglog
    from seglog.errors import ConnectorJarError
    from seglog.source import register

    root = tmp_path / "root"
    create_topic(root, "r", 1, CONFIG)
    append(root, "r", 0, 25)
    assert register(remote) == "jvm"
    assert register(remote, python_fallback=True) == "jvm"
    assert register(remote, python_fallback=True) == "jvm"
    with monkeypatch.context() as m:                       # this client's seglog as another release than the server's
        m.setattr(seglog, "__version__", "0.0.0-other")
        for fallback in (False, True):
            with pytest.raises(ConnectorJarError, match=r"loaded seglog connector \S+, but seglog 0\.0\.0-other"):
                register(remote, python_fallback=fallback)
    df = remote.read.format("seglog").option("topic", "r").option("startingOffsets", "earliest").load(str(root))
    assert sorted((r.partition, r.offset, bytes(r.value)) for r in df.select("partition", "offset", "value").collect()) == [
        (p, o, v) for p, o, _, v, _ in core_rows(root, "r", 1)]
    remote.sql(f"CREATE OR REPLACE TEMPORARY VIEW r_view USING seglog OPTIONS (path '{root}', topic 'r')")
    assert remote.sql("SELECT count(*) AS n FROM r_view").first().n == 25


def test_stream_restarted_from_its_checkpoint_reads_each_record_once(remote, tmp_path):
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    create_topic(root, "s", 2, CONFIG)
    append(root, "s", 0, 120)
    append(root, "s", 1, 60)

    def run():
        q = (remote.readStream.format("seglog").option("topic", "s").option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "50").load(str(root))
             .select("partition", "offset", "value").writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(cp))
             .trigger(availableNow=True).start())
        q.awaitTermination(180)
        assert not q.isActive and q.exception() is None, q.exception()
        return q

    q = run()
    assert len([p for p in q.recentProgress if p.numInputRows > 0]) >= 4     # admission control held (180 rows, 50 a batch)
    append(root, "s", 0, 35)
    append(root, "s", 1, 5)
    run()
    rows = sorted((r.partition, r.offset, bytes(r.value)) for r in remote.read.parquet(str(out)).collect())
    assert rows == [(p, o, v) for p, o, _, v, _ in core_rows(root, "s", 2)]   # 220 rows, none twice


def test_errors_reach_the_client_typed_and_nothing_is_read_short(remote, tmp_path):
    root = tmp_path / "root"
    create_topic(root, "e", 1, CONFIG)
    append(root, "e", 0, 300)
    def reader():                                          # a reader's options change it in place: one each
        return remote.read.format("seglog").option("topic", "e").option("startingOffsets", "earliest")

    with pytest.raises(Exception, match=r"invalid value '-3' for option 'maxRowsPerBatch'") as bad:
        reader().option("maxRowsPerBatch", "-3").load(str(root)).collect()
    assert "io.seglog.spark.read.SeglogConfigException" in str(bad.value)     # the JVM reader's type, named
    with pytest.raises(Exception, match="no-such-topic|NoSuchTopic"):
        remote.read.format("seglog").option("topic", "no-such-topic").load(str(root)).collect()
    # A flipped byte inside a sealed segment's record: the CRC catches it, the read fails naming the file.
    part = root / "e-0"
    victim = sorted(part.glob("*.log"))[1]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(Exception, match=rf"io\.seglog\.spark\.format\.CorruptLogException\W+\S*{victim.name}: a corrupt batch"):
        reader().load(str(root)).select("offset", "value").collect()
    with pytest.raises(Exception, match=rf"io\.seglog\.spark\.format\.CorruptLogException\W+\S*{victim.name}: a corrupt batch"):
        reader().load(str(root)).count()                   # the pushed count checks every batch too
