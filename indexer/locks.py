"""Advisory file locks under <root>/_seglog/locks/ (docs/spec.md §4).

One writer per partition at a time: the sink's task or the sidecar holds the partition's lock
while it changes files. One cleaner or merger per partition at a time: it holds the partition's
maintenance lock (a second file) for its whole run, and the partition's lock only for each swap. `flock` (not `lockf`) because its locks belong to the open file, so two
holders in one process exclude each other too, and the kernel drops them when a process dies.
"""
from __future__ import annotations

import errno
import fcntl
import math
import os
import time
from pathlib import Path

from seglog.errors import ConfigError, MaintenanceLockedError, PartitionLockedError, StorageError
from seglog.indexer.fsutil import make_dirs, meta_path, open_lock_file
from seglog.indexer.names import short_file_name

# A waiter polls (flock has no timeout), first often, then less: a clean's swap holds the partition's
# lock for milliseconds, and a writer polling every 20 ms from the start waited up to 20 ms for a 3 ms
# hold (a sink batch beside a clean, bench/clean_lock.py); a long holder is polled every 20 ms.
_FIRST_POLL_SECONDS = 0.0005
_POLL_SECONDS = 0.02


def check_lock_timeout(timeout: object, what: str = "lock timeout") -> float | None:
    """`timeout` if it is None (wait for ever) or a finite number of seconds >= 0, else ConfigError:
    nan compares false with every deadline and would wait for ever, as -1 would by mistake."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout < 0):
        raise ConfigError(f"{what}: lock timeout {timeout!r}; allowed: None (wait for ever) or a finite "
                          f"number of seconds >= 0")
    return timeout


class FileLock:
    """An exclusive flock on one file; `timeout` None waits forever, 0 tries once."""

    def __init__(self, path: str | os.PathLike, *, what: str | None = None,
                 locked_error: type[PartitionLockedError] = PartitionLockedError, holder: str = "another writer"):
        self.path = Path(path)
        self.what = what or str(self.path)
        self._locked_error = locked_error
        self._holder = holder
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout: float | None = None) -> "FileLock":
        """Take the lock, waiting at most `timeout` seconds (None: for ever)."""
        check_lock_timeout(timeout, self.what)
        if self._fd is not None:
            return self
        make_dirs(self.path.parent)             # shared roots: fsutil's rule (group-writable)
        try:
            fd = open_lock_file(self.path)
        except PermissionError as exc:
            raise StorageError(
                f"{self.what}: cannot open lock file {self.path} for writing ({exc.strerror}); only a user "
                f"who may write a lock file may take its lock (docs/spec.md §4)") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        poll = _FIRST_POLL_SECONDS
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
                        raise self._locked_error(
                            f"{self.what} is locked by {self._holder} (lock file {self.path}); "
                            f"gave up after {timeout} s") from None
                    time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))
                    poll = min(2 * poll, _POLL_SECONDS)
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
    return meta_path(root, "locks", short_file_name(name, ".lock"))


def partition_lock(partition_dir: str | os.PathLike) -> FileLock:
    """The lock of the partition folder <root>/<topic>-<partition>."""
    d = Path(partition_dir)
    return FileLock(lock_path(d.parent, d.name), what=f"partition {d.name}")


def topic_writer_lock(root: str | os.PathLike, topic: str) -> FileLock:
    """The topic's writer lock (the JVM's FileLock.topicWriter): a write's commit holds it, and so does DROP TABLE
    ... PURGE for its whole run (format/TopicAdmin.java); a writable open holds it while it makes a new partition
    folder (indexer/partition_folder.py). Taken before any partition's lock, never after."""
    return FileLock(lock_path(root, f"{topic}.writer"), what=f"topic {topic} (sink writer)")


def maintenance_lock(partition_dir: str | os.PathLike) -> FileLock:
    """The partition's maintenance lock: held by a clean or merge for its whole run. They build their
    output without the partition's lock (so the writer never waits for them) and take that only to
    swap a group in; this second lock keeps two of them (two sidecars, `seglog compact` beside the
    sidecar) from writing the same `.cleaned` files, and keeps recovery from removing the `.cleaned`
    files of a live build (indexer/compaction/clean_swap.py). Order: this lock first, then the
    partition's, never the other way round while waiting (a holder of the partition's lock only tries
    this one once), so the two never deadlock."""
    d = Path(partition_dir)
    return FileLock(lock_path(d.parent, f"{d.name}.maintenance"), what=f"partition {d.name}'s maintenance",
                    locked_error=MaintenanceLockedError, holder="another cleaner or merger")
