"""The log start offset checkpoint, <root>/log-start-offset-checkpoint, in Kafka's text format:
a version line `0`, a count line, then one `topic partition offset` line per partition.

Rewritten as temp file + fsync + rename under a root-level lock, so a crash leaves the old or the
new file, never a torn one.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

from seglog.errors import CorruptIndexError
from seglog.indexer.fsutil import atomic_write
from seglog.indexer.locks import FileLock, lock_path
from seglog.indexer.names import LOG_START_CHECKPOINT

VERSION = 0


def checkpoint_path(root: str | os.PathLike) -> Path:
    return Path(root) / LOG_START_CHECKPOINT


class CorruptCheckpointError(CorruptIndexError):
    """An offset checkpoint file (log-start-offset-checkpoint, cleaner-offset-checkpoint) that is not
    Kafka's text format: the message names the file and the line, as Kafka's CheckpointFile does
    ("Malformed line in checkpoint file")."""

    def __init__(self, path: Path, line: int | None, problem: str):
        where = f"{path}" if line is None else f"{path} line {line}"
        super().__init__(f"{where}: {problem} (Kafka's offset checkpoint format: a version line 0, a count "
                         f"line, then one `topic partition offset` line per partition)")
        self.path = path
        self.line = line


def read_log_start_offsets(root: str | os.PathLike) -> dict[tuple[str, int], int]:
    return read_offsets_file(checkpoint_path(root))


def read_offsets_file(path: Path) -> dict[tuple[str, int], int]:
    """Any of Kafka's offset checkpoint files (this one, the cleaner's): {(topic, partition): offset}.
    A missing or empty file holds no entry. Anything else that is not exactly Kafka's format raises
    CorruptCheckpointError naming the file and the first bad line (Kafka's CheckpointFile.read refuses
    the same files: a bad version or count line, a line that is not `topic partition offset`, more or
    fewer entry lines than the count)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    if not raw:
        return {}
    # line by line, so that the first bad line is named whatever is wrong with it (bytes that are
    # not UTF-8 included: Kafka's reader refuses those too, and they show up as lone surrogates here)
    try:
        text, clean = raw.decode("utf-8"), True
    except UnicodeDecodeError:
        text, clean = raw.decode("utf-8", errors="surrogateescape"), False
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()              # the newline that ends the last line
    version = _int_line(path, lines, 0, "the version")
    if version != VERSION:
        raise CorruptCheckpointError(path, 1, f"unknown version {version} (expected {VERSION})")
    if len(lines) == 1:
        return {}                # as Kafka: a version line alone holds no entry
    count = _int_line(path, lines, 1, "the entry count")
    entries: dict[tuple[str, int], int] = {}
    for i, line in enumerate(lines[2:], start=3):
        m = _ENTRY.fullmatch(line)
        if m is None or not (clean or _is_text(m.group(1))):
            raise CorruptCheckpointError(path, i, f"malformed line {_shown(line)}: expected `topic partition offset`")
        partition, offset = int(m.group(2)), int(m.group(3))
        if not (-(1 << 31) <= partition < 1 << 31 and -(1 << 63) <= offset < 1 << 63):
            # Kafka's reader parses them as int and long (Integer/Long.parseInt): beyond those, malformed
            raise CorruptCheckpointError(path, i, f"malformed line {_shown(line)}: the partition must be an int32 "
                                                  f"and the offset an int64")
        entries[(m.group(1), partition)] = offset   # a repeated entry: the last wins, as Kafka's
    if len(lines) - 2 != count:
        raise CorruptCheckpointError(path, 2, f"the count line says {count} entries, the file holds "
                                              f"{len(lines) - 2} entry lines")
    return entries


def _int_line(path: Path, lines: list[str], i: int, what: str) -> int:
    try:
        return _strict_int(lines[i])
    except ValueError:
        raise CorruptCheckpointError(path, i + 1, f"malformed line {_shown(lines[i])}: expected {what}") from None


_INT = re.compile(r"[+-]?[0-9]+")
# `topic partition offset`, split on whitespace as Kafka's reader splits it (Java's split("\\s+"): ASCII
# whitespace, a trailing run of it dropped, a leading one an empty first field)
_ENTRY = re.compile(r"(\S+)\s+([+-]?[0-9]+)\s+([+-]?[0-9]+)\s*", re.ASCII)


def _strict_int(text: str) -> int:
    """An int as Java's Integer/Long.parseInt reads it (ASCII digits, an optional sign; no spaces,
    no underscores, which Python's int() would take)."""
    if not _INT.fullmatch(text):
        raise ValueError(text)
    return int(text)


def _is_text(field: str) -> bool:
    """Not holding bytes that were not UTF-8 (decoded as lone surrogates)."""
    return not any("\udc80" <= ch <= "\udcff" for ch in field)


def _shown(line: str) -> str:
    shown = line.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
    return repr(shown if len(shown) <= 80 else shown[:80] + "...")


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


def reset_if_malformed(root: str | os.PathLike) -> str | None:
    """A malformed checkpoint rewritten without entries, so that every partition's log start is its
    first segment's base offset: what readers already take from a malformed file, and what Kafka's
    log manager does at load (it warns and resets, then checkpoints again). Returns what was wrong
    (the CorruptCheckpointError's message), or None when the file reads fine (or is missing)."""
    try:
        read_log_start_offsets(root)
        return None
    except CorruptCheckpointError:
        pass
    with FileLock(lock_path(root, LOG_START_CHECKPOINT), what="log start offset checkpoint"):
        try:
            read_log_start_offsets(root)
            return None          # another writer repaired it meanwhile
        except CorruptCheckpointError as exc:
            _write(root, {})
            return str(exc)


def _write(root: str | os.PathLike, entries: Mapping[tuple[str, int], int]) -> None:
    write_offsets_file(checkpoint_path(root), entries)


def write_offsets_file(path: Path, entries: Mapping[tuple[str, int], int]) -> None:
    """Kafka's checkpoint text (version, count, `topic partition offset` lines), atomically."""
    body = [str(VERSION), str(len(entries))]
    body += [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    atomic_write(path, ("\n".join(body) + "\n").encode())
