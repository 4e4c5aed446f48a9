"""Advisory file locks under <root>/_seglog/locks/ (docs/spec.md §4).

One writer per partition at a time: the sink's task or the sidecar holds the partition's lock
while it changes files. `flock` (not `lockf`) because its locks belong to the open file, so two
holders in one process exclude each other too, and the kernel drops them when a process dies.
"""
from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from seglog.errors import PartitionLockedError, StorageError
from seglog.indexer.names import META_DIR, short_file_name

_POLL_SECONDS = 0.02


class FileLock:
    """An exclusive flock on one file; `timeout` None waits forever, 0 tries once."""

    def __init__(self, path: str | os.PathLike, *, what: str | None = None):
        self.path = Path(path)
        self.what = what or str(self.path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout: float | None = None) -> "FileLock":
        if self._fd is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        # ENOLCK/ENOTSUP/EINVAL: the filesystem has no working locks (README,
                        # Running on a cluster); refusing is safer than writing unlocked.
                        raise StorageError(
                            f"{self.what}: cannot lock {self.path} ({exc.strerror}); seglog needs a "
                            f"filesystem with flock locks") from None
                    if deadline is not None and time.monotonic() >= deadline:
                        raise PartitionLockedError(
                            f"{self.what} is locked by another writer (lock file {self.path}); "
                            f"gave up after {timeout} s") from None
                    time.sleep(_POLL_SECONDS)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def write_note(self, text: str) -> None:
        """Replace the lock file's content (e.g. the holder's pid, for operators) while held."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, text.encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> "FileLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def lock_path(root: str | os.PathLike, name: str) -> Path:
    return Path(root) / META_DIR / "locks" / short_file_name(name, ".lock")


def partition_lock(partition_dir: str | os.PathLike) -> FileLock:
    """The lock of the partition folder <root>/<topic>-<partition>."""
    d = Path(partition_dir)
    return FileLock(lock_path(d.parent, d.name), what=f"partition {d.name}")
