"""fsutil's rule for shared roots (README, "Running on a cluster"): what seglog creates in a group-writable
folder is group-writable too, whatever the umask (folders also group-searchable, setgid kept); in a private
folder the umask decides, as before. One process here; tests/system/test_shared_volume_users.py runs the
writer and the sidecar as two users of one group."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from seglog.indexer.fsutil import atomic_write, create_file, make_dirs, open_lock_file, open_new
from seglog.indexer.locks import FileLock


@pytest.fixture
def umask_022():
    old = os.umask(0o022)              # Spark's image's umask: strips the group's write bit
    yield
    os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture
def shared(tmp_path, umask_022) -> Path:
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o2775)
    return root


@pytest.fixture
def private(tmp_path, umask_022) -> Path:
    root = tmp_path / "private"
    root.mkdir()
    root.chmod(0o755)
    return root


def test_folders_follow_their_parent(shared, private):
    make_dirs(shared / "_seglog" / "commits" / "events")
    for d in (shared / "_seglog", shared / "_seglog" / "commits", shared / "_seglog" / "commits" / "events"):
        assert mode(d) & 0o070 == 0o070, oct(mode(d))
        assert mode(d) & stat.S_ISGID              # copied from the parent by the kernel, kept by the chmod
    make_dirs(shared / "_seglog" / "commits" / "events")   # exists: no error, nothing changes
    make_dirs(private / "a" / "b")
    assert mode(private / "a") == mode(private / "a" / "b") == 0o755
    (private / "f").write_bytes(b"")
    with pytest.raises(FileExistsError):
        make_dirs(private / "f")


def test_files_follow_their_folder(shared, private):
    for root in (shared, private):
        os.close(create_file(root / "00000000000000000000.log", os.O_RDWR | os.O_CREAT | os.O_EXCL))
        with open_new(root / ".tmp-1") as fh:
            fh.write(b"x")
        atomic_write(root / "log-start-offset-checkpoint", b"0\n0\n")
        os.close(open_lock_file(root / "p.lock"))
    for name in ("00000000000000000000.log", ".tmp-1", "log-start-offset-checkpoint"):
        assert mode(shared / name) == 0o664, (name, oct(mode(shared / name)))
        assert mode(private / name) == 0o644, (name, oct(mode(private / name)))
    # lock files: only writers may open them, since whoever can open one can hold its flock
    assert (mode(shared / "p.lock"), mode(private / "p.lock")) == (0o660, 0o600)


def test_another_users_file_is_left_as_it_is(shared):
    """O_CREAT that finds another user's file: only its owner may chmod it (and its creator did)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a file of another user")
    f = shared / "00000000000000000000.index"
    f.write_bytes(b"")
    f.chmod(0o644)
    os.chown(f, 10001, 10001)
    os.close(create_file(f, os.O_RDWR | os.O_CREAT))
    assert mode(f) == 0o644
    os.close(create_file(f, os.O_RDONLY))          # without O_CREAT: only os.open
    assert mode(f) == 0o644


def test_lock_in_a_shared_root_is_group_writable_and_works(shared):
    lock = FileLock(shared / "_seglog" / "locks" / "events-0.lock")
    with lock:
        assert lock.held
        assert mode(shared / "_seglog" / "locks") & 0o070 == 0o070
        assert mode(shared / "_seglog" / "locks" / "events-0.lock") == 0o660
    assert not lock.held
