"""The sidecar beside DROP TABLE ... PURGE (indexer/partition_folder.py): a pass that listed a topic's partitions just
before the delete finds them gone when it opens them, makes no folder again, and tells it once; a writable open of a
deleted topic's partition makes nothing, while one that starts a recorded topic's partition still does. Driven through
SQL on the session's real local Spark and the sidecar's Jobs in a thread, ordered by a partition lock the test holds."""
from __future__ import annotations

import logging
import sys
import threading
import time

import pytest

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.errors import UnknownTopicOrPartitionError
from seglog.indexer import Log, Record
from seglog.indexer.locks import partition_lock
from seglog.indexer.topics import create_topic, load_topic

pytestmark = pytest.mark.spark


def _write(spark, root, topic: str, partitions: int) -> None:
    (spark.range(6).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST('v' AS BINARY) AS value")
     .write.format("seglog").mode("append").option("topic", topic).option("partitions", str(partitions))
     .save(str(root)))


def _wait_for_lock_wait(thread: threading.Thread, timeout_s: float = 60.0) -> None:
    """Until `thread` polls for a lock (FileLock.acquire): it has listed the partitions and opens the first one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread.ident)
        while frame is not None:
            if frame.f_code.co_name == "acquire" and frame.f_code.co_filename.endswith("locks.py"):
                return
            frame = frame.f_back
        assert thread.is_alive(), "the pass ended before it waited for the lock"
        time.sleep(0.01)
    raise AssertionError("the pass never waited for the partition lock")


def test_a_pass_listed_before_a_drop_never_brings_the_topics_folders_back(spark, tmp_path, caplog):
    root = tmp_path / "log"
    _write(spark, root, "a", 1)
    _write(spark, root, "t", 2)
    spark.conf.set("spark.sql.catalog.dropcat", "io.seglog.spark.SeglogCatalog")
    spark.conf.set("spark.sql.catalog.dropcat.root", str(root))
    jobs = Jobs(parse_config({"root": str(root), "schedule": {"partition.lock.timeout.ms": 120_000}}, source="test"),
                Metrics())
    results = []
    held = partition_lock(root / "a-0").acquire(0)        # the pass lists a-0, t-0, t-1, then waits here
    try:
        with caplog.at_level(logging.INFO, logger="seglog.compactor"):
            worker = threading.Thread(target=lambda: results.append(jobs.full_pass()))
            worker.start()
            _wait_for_lock_wait(worker)
            spark.sql("DROP TABLE dropcat.t PURGE")
            assert not (root / "t-0").exists() and not (root / "t-1").exists()
            held.release()
            worker.join(120)
    finally:
        held.release()
    assert not worker.is_alive()
    result = results[0]
    # nothing of the topic came back: no folder, so no table, and the name is free
    assert sorted(p.name for p in root.iterdir()) == ["_seglog", "a-0"]
    assert [r.tableName for r in spark.sql("SHOW TABLES IN dropcat").collect()] == ["a"]
    assert (result.gone, result.failed, result.skipped) == (["t-0", "t-1"], [], []), result.summary()
    assert [r.getMessage() for r in caplog.records].count("topic.gone") == 1     # told once for the topic
    # a writable open of the deleted topic's partition makes nothing either
    with pytest.raises(UnknownTopicOrPartitionError, match="topic 't' does not exist"):
        Log.open(root / "t-0", {})
    assert not (root / "t-0").exists()
    # the name is free again: CREATE TABLE makes the topic, whose first write makes its folders
    spark.sql("CREATE TABLE dropcat.t TBLPROPERTIES ('partitions' = '1')")
    spark.sql("INSERT INTO dropcat.t SELECT CAST('k' AS BINARY) AS key, CAST('v' AS BINARY) AS value")
    assert [(bytes(r.key), r.offset) for r in spark.sql("SELECT key, offset FROM dropcat.t").collect()] == [(b"k", 0)]


def test_a_writable_open_still_starts_a_recorded_topics_partition(tmp_path):
    """The storage API's first write to a recorded topic's partition makes its folder; a root that records topics
    refuses one for a topic it does not record (nothing made); a root that records none takes any, as before."""
    root = tmp_path / "log"
    create_topic(root, "n", 2, {"segment.bytes": 1024})
    with Log.open(root / "n-1", load_topic(root, "n").config) as log:
        log.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
    assert (root / "n-1").is_dir()
    with pytest.raises(UnknownTopicOrPartitionError, match="topic 'other' does not exist"):
        Log.open(root / "other-0", {})
    assert not (root / "other-0").exists()
    with pytest.raises(UnknownTopicOrPartitionError, match="makes no folder"):
        Log.open(root / "n-0", {}, create=False)        # the sidecar's open
    assert not (root / "n-0").exists()
    bare = tmp_path / "bare"
    with Log.open(bare / "x-0", {}) as log:
        assert log.log_end_offset == 0
    assert (bare / "x-0").is_dir()
