"""`seglog import` beside a `format("seglog")` write of the same topic: the import renames its folders in and
records the topic under the topic's writer lock, which a write holds from its topic's creation to its commit or
restore (indexer/kafka_import.py). Renamed in without it, a write that created the topic meanwhile rolled the
imported folder back to its own committed end (nothing) and failed; the import then recorded the topic again and
committed its end offsets over a partition cut to nothing: a silent loss. A failed write's restore removes only the
folders it made itself (DriverCommit.restore), so an imported folder beside it keeps its records."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from seglog.indexer import Log, LogRoot, Record
from seglog.indexer.checkpoint import LOG_START_CHECKPOINT
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.locks import FileLock, lock_path
from seglog.indexer.topics import load_topic
from tests.sink.write_in_thread import FAIL_POINT, write_in_thread

pytestmark = pytest.mark.spark

IMPORTED = [(b"k%d" % i, b"imported %d" % i) for i in range(50)]


def _source(tmp_path):
    """A Kafka partition folder (`src-1`: partition 1): seglog's storage API writes Kafka's format."""
    folder = tmp_path / "broker" / "src-1"
    with Log.open(folder, {}, outside_commit_log=True) as log:
        log.append([Record(key=k, value=v, timestamp=1_000 + i) for i, (k, v) in enumerate(IMPORTED)])
    return folder


def _write_in_thread(spark, root, version: int, partitions: tuple[int, ...], **options) -> dict:
    df = spark.createDataFrame([(f"w{i}".encode(), b"written", p) for p in partitions for i in range(10)],
                               "key binary, value binary, partition int")
    return write_in_thread(df, root, topic="t", partitions=2, version=version, **options)


def _fail_at_fail_point(marker, write, seconds: float = 300.0) -> None:
    """The write run to its end; if it reaches its fail point, it is made to fail there (it then restores)."""
    deadline = time.monotonic() + seconds
    while write["thread"].is_alive():
        if marker.exists():
            marker.unlink()
        assert time.monotonic() < deadline, "the write neither ended nor reached its fail point"
        time.sleep(0.05)


def _imported_rows(root):
    with LogRoot(root).open_log("t", 1, readonly=True) as log:
        return [(r.key, r.value) for r in log.read()]


def test_an_import_beside_a_failing_write_keeps_its_records(spark, tmp_path):
    root = tmp_path / "root"
    marker = tmp_path / "fail-point"
    source = _source(tmp_path)
    # Held by the test: the import takes it right after its renames (update_log_start_offsets), so it stops there,
    # its folder in the root and its topic not yet recorded; the write below comes in at that moment.
    checkpoint = FileLock(lock_path(root, LOG_START_CHECKPOINT)).acquire(0)
    system = spark._jvm.java.lang.System
    imp = subprocess.Popen([sys.executable, "-m", "seglog", "import", str(source), str(root), "--topic", "t"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (root / "t-1").is_dir():
            assert imp.poll() is None, imp.communicate()
            assert time.monotonic() < deadline, "the import never renamed its folder in"
            time.sleep(0.05)
        system.setProperty(FAIL_POINT, f"{marker}@1")
        try:
            # a write creating topic t with 2 partitions, into partition 0 only; it waits at most 3 s for the
            # topic's writer lock, which the import holds (else it would wait for the import to end)
            write = _write_in_thread(spark, root, 1, (0,), lockTimeoutMs="3000")
            _fail_at_fail_point(marker, write)
        finally:
            system.clearProperty(FAIL_POINT)
        assert write.get("error") is not None
    finally:
        checkpoint.release()
        out, err = imp.communicate(timeout=300)
    assert imp.returncode == 0, err
    assert load_topic(root, "t").partitions == 2
    assert CommitLog(root, "t").end_offsets() == {1: len(IMPORTED)}
    assert _imported_rows(root) == IMPORTED, "the imported records were cut by the write beside the import"

    # A write into both partitions that fails in its commit: partition 1's folder was there before it (the import
    # made it), so its restore cuts it back to its committed end and keeps it; partition 0's, made by the write, goes.
    system.setProperty(FAIL_POINT, f"{marker}@2")
    try:
        write = _write_in_thread(spark, root, 2, (0, 1))
        _fail_at_fail_point(marker, write)
    finally:
        system.clearProperty(FAIL_POINT)
    assert "test fail point" in str(write.get("error"))
    assert CommitLog(root, "t").end_offsets() == {1: len(IMPORTED)}
    assert _imported_rows(root) == IMPORTED
    assert not (root / "t-0").exists()
    verify = subprocess.run([sys.executable, "-m", "seglog", "verify", str(root)], capture_output=True, text=True,
                            timeout=300)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_an_import_waits_for_the_topics_writer_lock_and_gives_up_past_its_timeout(tmp_path):
    """The writer lock held (as a write's commit holds it): the import gives up past --lock-timeout, exit 1 naming the
    lock, with nothing of it in the root (not its folder, not its temporary copy, not its topic); freed, it imports."""
    from seglog.indexer.locks import topic_writer_lock

    root = tmp_path / "root"
    source = _source(tmp_path)
    argv = [sys.executable, "-m", "seglog", "import", str(source), str(root), "--topic", "t"]
    with topic_writer_lock(root, "t").acquire(0):
        started = time.monotonic()
        done = subprocess.run([*argv, "--lock-timeout", "0.5"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert "topic t (sink writer) is locked by another writer" in done.stderr, done.stderr
        assert time.monotonic() - started >= 0.5
        assert sorted(p.name for p in root.iterdir()) == ["_seglog"]
        assert load_topic(root, "t") is None
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _imported_rows(root) == IMPORTED
