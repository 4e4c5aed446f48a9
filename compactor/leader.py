"""The leader lock: only one sidecar works on a root at a time (SPEC 4).

An exclusive ``fcntl.flock`` on ``<root>/_seglog/locks/compactor.leader``, held for the life of the
process. The kernel drops it when the process dies, however it dies (SIGKILL included), so a stale
lock never blocks the next sidecar; there is nothing to clean up.
"""
from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from indexer.names import META_DIR

LEADER_FILE = "compactor.leader"


def leader_lock_path(root: Path) -> Path:
    return Path(root) / META_DIR / "locks" / LEADER_FILE


class LeaderLock:
    def __init__(self, root: Path):
        self.path = leader_lock_path(root)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if it is free; never blocks."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        # The pid is for operators only; the flock is the lock.
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def acquire(self, stop: threading.Event, retry_s: float, on_wait=None) -> bool:
        """Retry every ``retry_s`` until the lock is ours (True) or ``stop`` is set (False)."""
        first = True
        while not stop.is_set():
            if self.try_acquire():
                return True
            if first and on_wait is not None:
                on_wait()
            first = False
            stop.wait(retry_s)
        return False

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
