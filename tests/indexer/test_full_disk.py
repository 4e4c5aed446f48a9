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
        with Log.open(sys.argv[1], {"segment.index.bytes": 10 * 1024 * 1024}) as log:
            log.append([Record(value=b"v" * 100, timestamp=1)])
    except SeglogError as exc:
        print("TYPED", type(exc).__name__, exc)
        sys.exit(3)
    print("OPENED")
""")


@pytest.fixture
def small_fs(tmp_path):
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], capture_output=True)
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
