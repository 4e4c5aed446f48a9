"""What the subcommands share: usage errors, finding partitions under a root, opening them."""
from __future__ import annotations

import math
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from seglog.indexer.names import META_DIR, parse_partition_dir

EXIT_OK = 0
EXIT_FAULT = 1      # a fault was found, or the operation failed
EXIT_USAGE = 2      # bad arguments


class UsageError(Exception):
    """A bad argument: the command prints it on one line and exits 2."""


@dataclass(frozen=True)
class Partition:
    root: Path          # the log root (holds _seglog/)
    topic: str
    partition: int

    @property
    def path(self) -> Path:
        return self.root / f"{self.topic}-{self.partition}"

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def _is_partition_dir(path: Path) -> bool:
    """A folder named <topic>-<partition> that is not itself a root (no _seglog/ inside)."""
    return parse_partition_dir(path.name) is not None and not (path / META_DIR).is_dir()


def find_partitions(path: str | os.PathLike, topic: str | None = None,
                    partition: int | None = None) -> list[Partition]:
    """The partitions that `path` names: a root (every partition, or those of `topic`), or one
    partition folder (a file: URI names one too: indexer.root.local_root). Raises UsageError when `path`
    is not a folder or nothing matches."""
    from seglog.indexer.root import local_root

    p = Path(local_root(os.fspath(path), "ROOT"))
    if not p.exists():
        raise UsageError(f"{p}: no such folder")
    if not p.is_dir():
        raise UsageError(f"{p}: not a folder (expected a log root or a partition folder)")
    if _is_partition_dir(p):
        t, n = parse_partition_dir(p.name)
        found = [Partition(p.parent, t, n)]
    else:
        from seglog.indexer import LogRoot

        if topic is not None:
            from seglog.indexer.names import validate_topic
            try:
                validate_topic(topic)
            except Exception as exc:
                raise UsageError(str(exc)) from None
        found = [Partition(p, t, n) for t, n in LogRoot(p).partitions(topic)]
    if topic is not None:
        found = [q for q in found if q.topic == topic]
    if partition is not None:
        found = [q for q in found if q.partition == partition]
    if not found:
        what = "partitions"
        if topic is not None:
            what += f" of topic {topic!r}"
        if partition is not None:
            what = f"partition {partition}" + (f" of topic {topic!r}" if topic else "")
        raise UsageError(f"{p}: no {what} found (a root holds <topic>-<partition> folders)")
    return found


def topic_config(part: Partition):
    """The topic's configuration as recorded under its root (defaults where none is)."""
    from seglog.indexer import LogRoot

    return LogRoot(part.root).topic_config(part.topic)


def open_readonly(part: Partition):
    from seglog.indexer import Log

    return Log.open(part.path, topic_config(part), readonly=True)


def open_tiered(part: Partition):
    """The partition as one log across both tiers (docs/tiered-storage.md §6) when it has tiered
    segments; else the local log, read-only."""
    from seglog.indexer.remote.metadata import metadata_path
    from seglog.indexer.remote.tiered_log import TieredLog

    if metadata_path(part.root, part.topic, part.partition).exists():
        return TieredLog(part.root, part.topic, part.partition, topic_config(part))
    return open_readonly(part)


def open_writable(part: Partition, lock_timeout: float | None, *, full_recovery: bool = False):
    from seglog.indexer import Log

    # a command works on the partitions found: one deleted since makes no folder (indexer/partition_folder.py)
    return Log.open(part.path, topic_config(part), lock_timeout=lock_timeout, full_recovery=full_recovery, create=False)


@contextmanager
def open_committing(part: Partition, lock_timeout: float | None):
    """open_writable for a command that also commits to its topic's commit log (truncate, abort-transaction). The
    topic's writer lock is taken first and held to the end (the order of every committer: that lock, then the
    partition's). Invariant: every committer of a topic holds its writer lock while its commit file exists, so a
    temporary commit file seen under that lock is a killed committer's, which the next write removes
    (CommitLogWriter.removeDeadTemps)."""
    from seglog.indexer.locks import topic_writer_lock

    with topic_writer_lock(part.root, part.topic).acquire(lock_timeout):
        with open_writable(part, lock_timeout) as log:
            yield log


def key_values(items: list[str], option: str = "--config") -> dict[str, str]:
    """`KEY=VALUE` arguments of a repeatable option as a dict; anything else is a usage error."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def non_negative_int(text: str) -> int:
    """argparse type: an int >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise _arg_error(f"{text!r} is not an integer") from None
    if value < 0:
        raise _arg_error(f"{value} is negative (must be >= 0)")
    return value


def lock_timeout(text: str) -> float:
    """argparse type of --lock-timeout: seconds, a finite number >= 0 (0 tries the lock once). `nan`
    would wait forever (no deadline is ever reached) and a negative one gives up before trying."""
    try:
        value = float(text)
    except ValueError:
        raise _arg_error(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise _arg_error(f"{text!r} is not a finite number of seconds >= 0")
    return value


def add_lock_timeout(parser, what: str = "a partition's lock", default: float = 30.0) -> None:
    """The --lock-timeout option of the subcommands that take partition locks, checked by `lock_timeout`."""
    parser.add_argument("--lock-timeout", type=lock_timeout, default=default, metavar="SECONDS",
                        help=f"how long to wait for {what} (seconds >= 0; default {default:g})")


def _arg_error(message: str):
    import argparse
    return argparse.ArgumentTypeError(message)
