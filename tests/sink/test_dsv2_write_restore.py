"""A `format("seglog")` write that fails after publishing (DriverCommit's restore): it removes the partition
folders it made only under their locks, and leaves a folder whose maintenance lock another process holds (a
clean, merge or tier job builds its files there without the partition's lock), so nothing another process is
making is deleted under it."""
from __future__ import annotations

import shutil
import threading
import time

import pytest

from seglog.indexer.locks import maintenance_lock
from seglog.indexer.topics import load_topic

pytestmark = pytest.mark.spark

FAIL_POINT = "seglog.test.failPoint"


def _write_in_thread(spark, root, version: int) -> dict:
    df = spark.createDataFrame([(f"k{i}".encode(), b"v" * 50) for i in range(20)], "key binary, value binary")
    out: dict = {}

    def run():
        try:
            (df.write.format("seglog").mode("append").option("topic", "new").option("partitions", "1")
               .option("txnAppId", "app").option("txnVersion", str(version)).save(str(root)))
        except Exception as exc:        # the failure this test asks for
            out["error"] = exc

    out["thread"] = threading.Thread(target=run, daemon=True)
    out["thread"].start()
    return out


def _wait_for(path, thread, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert thread.is_alive(), "the write ended before reaching its fail point"
        assert time.monotonic() < deadline, f"the write never reached its fail point ({path})"
        time.sleep(0.05)


def test_a_failed_write_leaves_a_new_folder_whose_maintenance_lock_is_held(spark, tmp_path):
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
            write["thread"].join(300)
            assert not write["thread"].is_alive()
            assert "test fail point" in str(write.get("error"))
            assert build.read_bytes() == b"built by another process", "restore deleted another process's build"
        assert load_topic(root, "new") is None      # the topic it made is still forgotten
    finally:
        system.clearProperty(FAIL_POINT)
    # the folder stays, its log cut to nothing; once it is gone, a failed write with the maintenance lock free
    # removes the folder it made
    assert build.exists()
    shutil.rmtree(folder)
    system.setProperty(FAIL_POINT, f"{marker}@8")
    try:
        write = _write_in_thread(spark, root, 8)
        _wait_for(marker, write["thread"])
        assert folder.is_dir()
        marker.unlink()
        write["thread"].join(300)
        assert "test fail point" in str(write.get("error"))
    finally:
        system.clearProperty(FAIL_POINT)
    assert not folder.exists()
    assert load_topic(root, "new") is None
    assert sorted(p.name for p in root.iterdir()) == ["_seglog"]
