"""Consumer lag end to end (issue 42): a real readStream.format("seglog") query records its committed offsets in
<root>/_seglog/consumers/<query id>.json, and the real sidecar process turns them into seglog_consumer_* on
/metrics, skipping (and naming) a bad position file and forgetting a query idle past consumer.idle.forget.ms."""
from __future__ import annotations

import json
import os
import stat
import time

import pytest
import yaml

from seglog.indexer.commit_log import commits_dir
from seglog.indexer.consumer_positions import consumers_dir, read_consumer_positions
from seglog.indexer.log import Log
from tests.compactor.test_compactor_process import Sidecar, free_port, wait_until
from tests.source.test_source_stream import append

pytestmark = pytest.mark.spark


def run_query(spark, root, out, cp, name):
    q = (spark.readStream.format("seglog").option("topic", "m").option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", "100").load(str(root)).select("partition", "offset", "value")
         .writeStream.queryName(name).format("parquet").option("path", str(out))
         .option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None, str(q.exception())
    return q


def test_a_query_records_its_position_and_the_sidecar_exports_its_lag(spark, tmp_path):
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    append(root, "m", 0, 400)
    append(root, "m", 1, 200)
    q = run_query(spark, root, out, cp, "orders_lag")

    # 1. the query's file: its id (the file's name), name, checkpoint, and the offsets of its last committed batch
    #    (maxOffsetsPerTrigger: several batches; the last one's end is recorded, not the one before)
    bad: list = []
    positions = read_consumer_positions(root, bad)
    assert bad == []
    assert len(positions) == 1
    pos = positions[0]
    assert pos.query_id == q.id and pos.name == "orders_lag"
    assert pos.checkpoint.rstrip("/").endswith("cp/sources/0")
    assert dict(pos.offsets) == {("m", 0): 400, ("m", 1): 200}
    assert abs(pos.committed_ms - time.time() * 1000) < 600_000
    path = consumers_dir(root) / f"{q.id}.json"
    commit_file = sorted(commits_dir(root, "m").iterdir())[-1]
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(commit_file.stat().st_mode)   # as the other files

    # 2. the log moves on without the query: 50 more committed records on partition 0, 0 on partition 1
    now = int(time.time() * 1000)
    append(root, "m", 0, 50, ts0=now - 4_000 * 10)      # timestamps ts0 + offset * 10: record 400 is ~40 s old
    with Log.open(root / "m-0", readonly=True) as log:
        ts400 = next(iter(log.read(400, 401))).timestamp
    # a bad file (named as a query's), and a query idle for 8 days
    garbage = consumers_dir(root) / "00000000-0000-0000-0000-00000000000a.json"
    garbage.write_text('{"format": 1, "query_id": ')
    idle_id = "00000000-0000-0000-0000-00000000000b"
    idle = consumers_dir(root) / f"{idle_id}.json"
    idle.write_text(json.dumps({"format": 1, "query_id": idle_id, "name": None, "checkpoint": "file:/old",
                                "offsets": {"m": {"0": 1}}, "committed_ms": now - 8 * 86_400_000}))

    port = free_port()
    config = tmp_path / "sidecar.yaml"
    config.write_text(yaml.safe_dump({"root": str(root), "http": {"host": "127.0.0.1", "port": port},
                                      "consumer": {"lag.interval.ms": 200, "idle.forget.ms": 7 * 86_400_000}}))
    sidecar = Sidecar(tmp_path, config, port)
    try:
        sidecar.wait_for("/readyz", 200)
        labels = {"query_id": q.id, "query_name": "orders_lag", "topic": "m"}
        wait_until(lambda: sidecar.metric("seglog_consumer_lag_records", partition=0, **labels) == 50,
                   what="the lag of partition 0")
        assert sidecar.metric("seglog_consumer_lag_records", partition=1, **labels) == 0
        assert sidecar.metric("seglog_consumer_offset", partition=0, **labels) == 400
        assert sidecar.metric("seglog_consumer_lag_seconds", partition=1, **labels) == 0
        seconds = sidecar.metric("seglog_consumer_lag_seconds", partition=0, **labels)
        assert (time.time() * 1000 - ts400) / 1000 - 30 <= seconds <= (time.time() * 1000 - ts400) / 1000
        assert sidecar.metric("seglog_consumer_committed_timestamp_seconds", query_id=q.id) == pos.committed_ms / 1000
        # the bad file: skipped, counted, named in the log; the idle query: forgotten, its file removed
        assert sidecar.metric("seglog_consumer_position_files_invalid") == 1
        assert garbage.name in sidecar.logs() and "not JSON" in sidecar.logs()
        wait_until(lambda: not idle.exists(), what="the idle query's file removed")
        assert sidecar.metric("seglog_consumer_offset", query_id=idle_id, topic="m", partition=0) is None
        assert sidecar.proc.poll() is None
    finally:
        assert sidecar.stop() == 0

    # 3. the query runs again: it catches up, and its file says so
    run_query(spark, root, out, cp, "orders_lag")
    assert dict(read_consumer_positions(root)[0].offsets) == {("m", 0): 450, ("m", 1): 200}
    assert os.path.exists(garbage)      # never touched by the sidecar: a bad file is reported, not removed


def test_two_seglog_sources_of_one_query_never_mix_in_one_file(spark, tmp_path):
    """One file per query: a second seglog source over the same root finds the first's checkpoint there and writes
    nothing (logged), so the file holds one source's offsets, whole, never two sources' mixed."""
    root, out, cp = tmp_path / "root", tmp_path / "out", tmp_path / "cp"
    append(root, "a", 0, 30)
    append(root, "b", 0, 20)

    def src(topic):
        return (spark.readStream.format("seglog").option("topic", topic).option("startingOffsets", "earliest")
                .load(str(root)).select("topic", "offset"))

    q = (src("a").unionByName(src("b")).writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None, str(q.exception())
    positions = read_consumer_positions(root)
    assert [p.query_id for p in positions] == [q.id]
    (pos,) = positions
    source = pos.checkpoint.rstrip("/").rsplit("/", 1)[1]
    assert source in ("0", "1")
    ends = {"a": {("a", 0): 30}, "b": {("b", 0): 20}}
    assert dict(pos.offsets) in ends.values()
