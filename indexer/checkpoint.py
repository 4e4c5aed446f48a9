"""The log start offset checkpoint, <root>/log-start-offset-checkpoint, in Kafka's text format:
a version line `0`, a count line, then one `topic partition offset` line per partition.

Rewritten as temp file + fsync + rename under a root-level lock, so a crash leaves the old or the
new file, never a torn one.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from seglog.errors import CorruptIndexError
from seglog.indexer.fsutil import atomic_write
from seglog.indexer.locks import FileLock, lock_path
from seglog.indexer.names import LOG_START_CHECKPOINT

VERSION = 0


def checkpoint_path(root: str | os.PathLike) -> Path:
    return Path(root) / LOG_START_CHECKPOINT


def read_log_start_offsets(root: str | os.PathLike) -> dict[tuple[str, int], int]:
    return read_offsets_file(checkpoint_path(root))


def read_offsets_file(path: Path) -> dict[tuple[str, int], int]:
    """Any of Kafka's offset checkpoint files (this one, the cleaner's): {(topic, partition): offset}."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    lines = text.splitlines()
    try:
        if int(lines[0]) != VERSION:
            raise ValueError(f"unknown version {lines[0]!r}")
        count = int(lines[1])
        entries = {}
        for line in lines[2:2 + count]:
            topic, partition, offset = line.split(" ")
            entries[(topic, int(partition))] = int(offset)
        if len(entries) != count:
            raise ValueError(f"expected {count} entries, found {len(entries)}")
    except (ValueError, IndexError) as exc:
        raise CorruptIndexError(f"{path} is malformed: {exc}") from None
    return entries


def update_log_start_offsets(root: str | os.PathLike, updates: Mapping[tuple[str, int], int]) -> None:
    """Merge `updates` into the checkpoint; an offset only ever moves up."""
    with FileLock(lock_path(root, LOG_START_CHECKPOINT), what="log start offset checkpoint"):
        entries = read_log_start_offsets(root)
        for key, offset in updates.items():
            entries[key] = max(offset, entries.get(key, 0))
        _write(root, entries)


def reset_log_start_offset(root: str | os.PathLike, topic: str, partition: int, offset: int) -> None:
    """Set one partition's entry, also downwards (a full truncation restarts the log lower)."""
    with FileLock(lock_path(root, LOG_START_CHECKPOINT), what="log start offset checkpoint"):
        entries = read_log_start_offsets(root)
        entries[(topic, partition)] = offset
        _write(root, entries)


def _write(root: str | os.PathLike, entries: Mapping[tuple[str, int], int]) -> None:
    write_offsets_file(checkpoint_path(root), entries)


def write_offsets_file(path: Path, entries: Mapping[tuple[str, int], int]) -> None:
    """Kafka's checkpoint text (version, count, `topic partition offset` lines), atomically."""
    body = [str(VERSION), str(len(entries))]
    body += [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    atomic_write(path, ("\n".join(body) + "\n").encode())
