"""A `format("seglog")` write that fails after publishing (DriverCommit's restore): it removes the partition
folders it made only under their locks, its maintenance lock taken first (a clean, merge or tier job builds its files
there without the partition's lock), so nothing another process is making is deleted under it. A job holding that
lock is waited for, as any lock of the write is (lockTimeoutMs); a folder still held past that is cut to nothing and
kept, and then its topic stays recorded (nothing committed): never a partition folder without its topic, which every
reader, `seglog verify`, SHOW TABLES and CREATE TABLE took for a topic of the default configuration."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from seglog.indexer.locks import maintenance_lock
from seglog.indexer.topics import load_topic
from tests.sink.write_in_thread import FAIL_POINT, write_in_thread

pytestmark = pytest.mark.spark


def _write_in_thread(spark, root, version: int, **options) -> dict:
    df = spark.createDataFrame([(f"k{i}".encode(), b"v" * 50) for i in range(20)], "key binary, value binary")
    return write_in_thread(df, root, topic="new", partitions=1, version=version, **options)


def _wait_for(path, thread, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert thread.is_alive(), "the write ended before reaching its fail point"
        assert time.monotonic() < deadline, f"the write never reached its fail point ({path})"
        time.sleep(0.05)


def test_a_failed_write_waits_for_a_job_in_a_folder_it_made_then_removes_it(spark, tmp_path):
    root = tmp_path / "log"
    marker = tmp_path / "fail-point"
    system = spark._jvm.java.lang.System
    system.setProperty(FAIL_POINT, f"{marker}@7")
    try:
        write = _write_in_thread(spark, root, 7)
        _wait_for(marker, write["thread"])
        folder = root / "new-0"
        assert folder.is_dir()                      # made by this write's publish
        with maintenance_lock(folder).acquire(0):
            # what a clean's build writes beside the log, under this lock only (indexer/compaction/clean_swap.py)
            build = folder / "00000000000000000000.log.cleaned"
            build.write_bytes(b"built by another process")
            marker.unlink()                         # the write fails now, and restores
            time.sleep(3)
            assert write["thread"].is_alive(), "the restore did not wait for the job holding the maintenance lock"
            assert build.read_bytes() == b"built by another process", "restore deleted another process's build"
        write["thread"].join(300)
        assert not write["thread"].is_alive()
        assert "test fail point" in str(write.get("error"))
    finally:
        system.clearProperty(FAIL_POINT)
    # the job over, the folder it made goes, and the topic it created is forgotten: nothing of the write stays
    assert not folder.exists()
    assert load_topic(root, "new") is None
    assert sorted(p.name for p in root.iterdir()) == ["_seglog"]


def test_a_folder_kept_past_the_lock_timeout_keeps_its_topic_recorded(spark, tmp_path):
    root = tmp_path / "log"
    marker = tmp_path / "fail-point"
    system = spark._jvm.java.lang.System
    system.setProperty(FAIL_POINT, f"{marker}@8")
    try:
        write = _write_in_thread(spark, root, 8, lockTimeoutMs="2000")
        _wait_for(marker, write["thread"])
        folder = root / "new-0"
        with maintenance_lock(folder).acquire(0):
            build = folder / "00000000000000000000.log.cleaned"
            build.write_bytes(b"built by another process")
            marker.unlink()
            write["thread"].join(300)
            assert not write["thread"].is_alive()
            assert "test fail point" in str(write.get("error"))
            assert build.read_bytes() == b"built by another process", "restore deleted another process's build"
    finally:
        system.clearProperty(FAIL_POINT)
    # the folder stays (cut to nothing), so the topic stays recorded as the write asked: an empty topic for every reader
    assert folder.is_dir()
    meta = load_topic(root, "new")
    assert meta is not None and meta.partitions == 1, "a partition folder was left without its topic"
    build.unlink()                                  # the job over
    verify = subprocess.run([sys.executable, "-m", "seglog", "verify", str(root)], capture_output=True, text=True,
                            timeout=300)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert spark.read.format("seglog").option("subscribe", "new").load(str(root)).count() == 0
    # and the next write of the topic goes on as into any empty topic
    write = _write_in_thread(spark, root, 9)
    write["thread"].join(300)
    assert write.get("error") is None, write.get("error")
    assert spark.read.format("seglog").option("subscribe", "new").load(str(root)).count() == 20
