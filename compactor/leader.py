"""The leader lock: only one sidecar works on a root at a time (docs/spec.md §4).

An exclusive flock (`indexer.locks.FileLock`) on ``<root>/_seglog/locks/compactor.leader``, held for
the life of the process. The kernel drops it when the process dies, however it dies (SIGKILL
included), so a stale lock never blocks the next sidecar; there is nothing to clean up.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from seglog.errors import PartitionLockedError
from seglog.indexer.fsutil import meta_path
from seglog.indexer.locks import FileLock

LEADER_FILE = "compactor.leader"


def leader_lock_path(root: Path) -> Path:
    return meta_path(root, "locks", LEADER_FILE)


class LeaderLock:
    def __init__(self, root: Path):
        self.path = leader_lock_path(root)
        self._lock = FileLock(self.path, what="the sidecar's leader lock")

    @property
    def held(self) -> bool:
        return self._lock.held

    def try_acquire(self) -> bool:
        """Take the lock if it is free; never blocks."""
        if self._lock.held:
            return True
        try:
            self._lock.acquire(timeout=0)
        except PartitionLockedError:
            return False
        # The pid is for operators only; the flock is the lock. A full disk must not stop the
        # sidecar here: retention, which frees space, is what it is about to run.
        try:
            self._lock.write_note(f"{os.getpid()}\n")
        except OSError:
            pass
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
        self._lock.release()
