"""Lock files only writers may hold (issue 37, item 6; docs/spec.md §4): flock(2) takes a read-only
descriptor, so a lock file anyone could read (0644) was one anyone could hold, and a user outside the
root's group (uid 65534) holding them stopped every writer (PartitionLockedError) and the sidecar
("another sidecar holds the leader lock"). Now lock files are 0600 (0660 in a shared root), an older
0644 one is narrowed by its owner when opened, and both languages take a lock only on a descriptor open
for writing.

Real processes: the attacker is a forked child that drops to uid 65534 (no supplementary groups) and
does what `flock -n FILE sleep` does; the writer is this process (root, the files' owner), the sidecar is
`seglog compactor run --once`, the JVM is the connector jar's FormatTool. Needs root to switch users:
anything else fails, it never skips."""
from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from seglog.errors import StorageError
from seglog.indexer import Log, Record
from seglog.indexer.locks import FileLock, lock_path
from tests import jvm_format_tool as tool

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534          # outside the root's group
SHARED_GID = 10001      # the chart's fsGroup (tests/system/test_shared_volume_users.py)
LEADER = "_seglog/locks/compactor.leader"


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def _drop_to_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


class Attacker:
    """A child as uid 65534 that flocks every file it can open read-only, and holds them until closed."""

    def __init__(self, files: list[Path]):
        assert os.geteuid() == 0, "needs root to run a child as uid 65534"
        rd, wr = os.pipe()
        go_rd, self._go = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:           # the child: no pytest, no imports, only system calls
            try:
                os.close(rd)
                os.close(self._go)
                _drop_to_nobody()
                held = []
                for f in files:
                    try:
                        fd = os.open(f, os.O_RDONLY)
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        held.append(str(f))
                    except OSError as exc:
                        held.append(errno.errorcode.get(exc.errno, str(exc.errno)))
                os.write(wr, (json.dumps(held) + "\n").encode())
                os.read(go_rd, 1)           # hold until the test is done
            finally:
                os._exit(0)
        os.close(wr)
        os.close(go_rd)
        with os.fdopen(rd) as fh:
            self.result = json.loads(fh.readline())

    def close(self) -> None:
        os.close(self._go)
        os.waitpid(self.pid, 0)


@pytest.fixture
def tmp_path():
    """Under /tmp itself: pytest's own tmp_path is in a 0700 folder uid 65534 could not even search,
    and an EACCES from there would prove nothing."""
    d = Path(tempfile.mkdtemp(prefix="seglog-lock-permissions-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _root(tmp_path: Path, shared: bool) -> Path:
    """A root readable by everyone: private (0755, one user) or shared with the chart's group (2775)."""
    root = tmp_path / ("shared" if shared else "private")
    root.mkdir()
    if shared:
        os.chown(root, 0, SHARED_GID)
        root.chmod(0o2775)
    else:
        root.chmod(0o755)
    return root


def _write(root: Path, n: int = 1) -> None:
    with Log.open(root / "events-0", {"segment.bytes": 4096}, lock_timeout=0) as log:
        log.append([Record(key=b"k", value=b"v" * 10, timestamp=1_700_000_000_000 + i) for i in range(n)])
        log.flush()


def _sidecar_once(root: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"root": str(root), "schedule": {"partition.lock.timeout.ms": 0}}))
    return subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--config", str(cfg), "--once"],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("shared", [False, True], ids=["private", "shared"])
def test_lock_files_are_0600_or_0660_in_both_languages(tmp_path, shared):
    old = os.umask(0o022)
    try:
        root = _root(tmp_path, shared)
        _write(root)
        tool.run("lock", root, "events.writer", 0)        # the JVM driver's topic lock
    finally:
        os.umask(old)
    want = 0o660 if shared else 0o600
    assert _mode(lock_path(root, "events-0")) == want
    assert _mode(lock_path(root, "events.writer")) == want


@pytest.mark.parametrize("shared", [False, True], ids=["private", "shared"])
def test_a_user_outside_the_group_cannot_stop_writers_or_the_sidecar(tmp_path, shared):
    """An existing root of an older seglog (lock files 0644): its owner's writer and sidecar still work,
    narrow the files, and a reader outside the group can no longer hold them."""
    root = _root(tmp_path, shared)
    _write(root)
    partition, leader = lock_path(root, "events-0"), root / LEADER
    leader.touch()
    for f in (partition, leader):
        f.chmod(0o644)                  # what an older seglog left
    # the owner's writer and sidecar, first after the upgrade: they work, and narrow the files
    _write(root)
    proc = _sidecar_once(root, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    segment = sorted((root / "events-0").glob("*.log"))[0]      # 0644: readable, so flock-able
    attacker = Attacker([segment, partition, leader])
    try:
        assert attacker.result[0] == str(segment)
        _write(root)                                          # before: PartitionLockedError
        proc = _sidecar_once(root, tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]      # before: 3, "another sidecar holds the leader lock"
        assert attacker.result[1:] == ["EACCES", "EACCES"]    # before: held
    finally:
        attacker.close()
    want = 0o660 if shared else 0o600
    assert (_mode(partition), _mode(leader)) == (want, want)


def test_a_lock_file_one_may_only_read_is_refused_not_taken_read_only(tmp_path):
    """Another user's 0644 lock file (one its owner has not narrowed yet): a user who may only read it
    gets a typed error from both languages, never a lock held on a read-only descriptor."""
    root = _root(tmp_path, shared=False)
    f = lock_path(root, "events-0")
    f.parent.mkdir(parents=True)
    f.parent.chmod(0o755)
    f.touch()
    f.chmod(0o644)
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rd)
            _drop_to_nobody()
            try:
                FileLock(f, what="partition events-0").acquire(0)
                answer = "held"
            except StorageError as exc:
                answer = f"StorageError: {exc}"
            except BaseException as exc:   # noqa: BLE001 (the child reports whatever happened)
                answer = f"{type(exc).__name__}: {exc}"
            os.write(wr, answer.encode())
        finally:
            os._exit(0)
    os.close(wr)
    with os.fdopen(rd) as fh:
        answer = fh.read()
    os.waitpid(pid, 0)
    assert answer.startswith("StorageError: partition events-0: cannot open lock file"), answer
    assert "for writing" in answer
    jvm = subprocess.run(tool.command("lock", root, "events-0", 0), capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL, preexec_fn=_drop_to_nobody, env={**os.environ, "HOME": "/tmp"})
    assert jvm.returncode != 0, jvm.stdout
    err = json.loads(jvm.stdout.strip().splitlines()[-1])
    assert err["error"] == "StorageException" and "for writing" in err["message"], err
    assert _mode(f) == 0o644            # another user's file: left as its creator made it
