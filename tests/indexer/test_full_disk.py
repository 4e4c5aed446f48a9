"""A full filesystem gives a typed error at open, never SIGBUS (issue 10 defect 8). Runs each open
in a child process, on a small tmpfs this test mounts (root only, as in CI)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import pytest

CHILD = textwrap.dedent("""
    import sys
    from seglog.errors import SeglogError
    from seglog.indexer import Log, Record
    try:
        with Log.open(sys.argv[1], {"segment.index.bytes": 10 * 1024 * 1024}, outside_commit_log=True) as log:
            log.append([Record(value=b"v" * 100, timestamp=1)])
    except SeglogError as exc:
        print("TYPED", type(exc).__name__, exc)
        sys.exit(3)
    print("OPENED")
""")


@pytest.fixture
def small_fs(tmp_path):
    yield from _tmpfs(tmp_path, "512k")


@pytest.fixture
def volume_4m(tmp_path):
    yield from _tmpfs(tmp_path, "4m")


def _tmpfs(tmp_path, size: str):
    """A tmpfs of `size` mounted for one test, unmounted after it."""
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the full-disk test (needs root): {done.stderr.decode()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def run_child(path):
    return subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=120)


def test_preallocated_indexes_on_a_full_filesystem_fail_clearly(small_fs):
    # 10 MiB of preallocated index on a 512 KiB filesystem: reserved up front, so the open fails
    # with a StorageError naming the file, instead of a SIGBUS at the first store into the map.
    done = run_child(small_fs / "events-0")
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert "TYPED StorageError" in done.stdout and ".index" in done.stdout and "No space" in done.stdout


def test_a_filled_filesystem_after_the_log_exists(small_fs):
    ok = subprocess.run([sys.executable, "-c", CHILD.replace("10 * 1024 * 1024", "4096"), str(small_fs / "t-0")],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "OPENED" in ok.stdout, ok.stderr
    filler = small_fs / f"filler-{uuid.uuid4().hex}"
    with open(filler, "wb", buffering=0) as fh:  # use up what is left
        try:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        except OSError:
            pass
    for args in (["-c", CHILD, str(small_fs / "t-0")],
                 ["-m", "seglog", "verify", str(small_fs)],
                 ["-m", "seglog", "recover", str(small_fs)]):
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode >= 0, (args, done.returncode, done.stderr[-2000:])   # no signal
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
    os.unlink(filler)


def _fill(fs) -> "os.PathLike":
    filler = fs / f"filler-{uuid.uuid4().hex}"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def test_a_full_volume_of_expired_records_is_freed_by_the_sidecar(tmp_path, volume_4m):
    """Issue 23, item 2: the sidecar's pass opens each partition for writing; when that reserved
    `segment.index.bytes` for the active index, a full volume failed with ENOSPC and retention never
    ran, so the volume stayed full for good. Space is reserved only to append now."""
    import time

    mount = volume_4m
    root = mount / "root"
    writer = textwrap.dedent("""
        import sys, time
        import numpy as np, pyarrow as pa
        from seglog.indexer.commit_log import CommitLog
        from seglog.indexer.log import Log
        from seglog.indexer.topics import create_topic
        root = sys.argv[1]
        cfg = {"segment.bytes": 64 * 1024, "segment.index.bytes": 1024 * 1024}
        create_topic(root, "t", 1, cfg)
        old = int(time.time() * 1000) - 3_600_000
        with Log.open(root + "/t-0", cfg, outside_commit_log=True) as log:
            for k in range(24):            # 24 x 32 KiB of records an hour old
                log.append_columns(pa.array([b"x" * 1000] * 32), timestamps=np.full(32, old + k, np.int64))
            end = log.log_end_offset
        CommitLog(root, "t").commit("w", 0, {0: end})
        print(end)
    """)
    made = subprocess.run([sys.executable, "-c", writer, str(root)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-2000:]
    end = int(made.stdout)
    _fill(mount)
    free_before = os.statvfs(mount).f_bavail
    assert free_before * os.statvfs(mount).f_frsize < 1024 * 1024   # less than the index would reserve

    rec = subprocess.run([sys.executable, "-m", "seglog", "recover", str(root)],
                         capture_output=True, text=True, timeout=120)
    assert rec.returncode == 0, rec.stdout + rec.stderr[-2000:]
    config = tmp_path / "compactor.yaml"
    config.write_text(f"root: {root}\nlog: {{retention.ms: 60000, file.delete.delay.ms: 0}}\n"
                      f"http: {{host: 127.0.0.1, port: 0}}\n")
    side = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    assert side.returncode == 0, side.stderr[-3000:]
    assert "partition.failed" not in side.stdout + side.stderr, (side.stdout + side.stderr)[-3000:]
    from seglog.indexer.log import Log
    with Log.open(root / "t-0", readonly=True) as log:
        assert log.log_start_offset == end and log.log_end_offset == end   # every expired record gone
    assert os.statvfs(mount).f_bavail > free_before + 100                # and their space given back
    time.sleep(0.01)


def _fill_to_the_last_byte(fs) -> None:
    """Files of smaller and smaller writes until not one more byte fits: 0 bytes free."""
    for size in (1 << 20, 4096, 1):
        filler = fs / f"filler-{uuid.uuid4().hex}"
        with open(filler, "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * size)
            except OSError:
                pass
    assert os.statvfs(fs).f_bavail == 0


@pytest.mark.parametrize("idle_roll", [False, True])
def test_a_volume_full_to_the_last_byte_of_expired_records_is_freed(tmp_path, volume_4m, idle_roll):
    """Issue 36 item 9: 0 bytes free, every record expired, the active segment among them holding a
    batch too small for a time index entry. Retention deletes the active segment only once rolled, and
    that roll's seal entry needed a new block: every pass failed the partition with ENOSPC before
    anything was deleted. Deleting needs no new blocks now (the others renamed first, the active one
    rolled without a seal entry: it goes at once); what needs room (the idle roll's seal when segment.ms
    is due, the checkpoints) is deferred or written after the space is freed."""
    mount = volume_4m
    root = mount / "root"
    writer = textwrap.dedent("""
        import sys, time
        import numpy as np, pyarrow as pa
        from seglog.indexer.commit_log import CommitLog
        from seglog.indexer.log import Log
        from seglog.indexer.topics import create_topic
        root = sys.argv[1]
        cfg = {"segment.bytes": 64 * 1024, "segment.index.bytes": 1024 * 1024}
        create_topic(root, "t", 2, cfg)
        old = int(time.time() * 1000) - 3_600_000
        for p in (0, 1):
            with Log.open(f"{root}/t-{p}", cfg, outside_commit_log=True) as log:
                for k in range(12):
                    log.append_columns(pa.array([b"x" * 1000] * 32), timestamps=np.full(32, old + k, np.int64))
                log.roll()                 # the active segment: one small expired batch, no index entry
                log.append_columns(pa.array([b"y" * 10]), timestamps=np.full(1, old, np.int64))
                ends = log.log_end_offset
            CommitLog(root, "t").commit("w", p, {p: ends})
        print(ends)
    """)
    made = subprocess.run([sys.executable, "-c", writer, str(root)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-2000:]
    end = int(made.stdout)
    _fill_to_the_last_byte(mount)
    config = tmp_path / "compactor.yaml"
    roll = ", segment.ms: 1000" if idle_roll else ""
    config.write_text(f"root: {root}\nlog: {{retention.ms: 60000, file.delete.delay.ms: 0{roll}}}\n"
                      f"http: {{host: 127.0.0.1, port: 0}}\n")
    side = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    out = side.stdout + side.stderr
    assert side.returncode == 0 and "partition.failed" not in out, out[-3000:]
    from seglog.indexer.log import Log
    for p in (0, 1):
        with Log.open(root / f"t-{p}", readonly=True) as log:
            assert log.log_start_offset == end and log.log_end_offset == end   # every expired record gone
            assert log.segment_bases() == [end]
    assert os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize > 512 * 1024   # their space given back
    again = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "partition.failed" not in again.stdout + again.stderr
    verified = subprocess.run([sys.executable, "-m", "seglog", "verify", str(root)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout
