"""Streaming queries' consumer positions: ``<root>/_seglog/consumers/<query id>.json`` (docs/spec.md §9.1).

Kafka keeps each group's committed offsets in ``__consumer_offsets``; seglog's connector keeps each
``readStream.format("seglog")`` query's in one small file, rewritten whole (temporary name, rename) when
Spark commits a batch (jvm/.../read/ConsumerPositions.java). The sidecar turns them into lag
(compactor/lag.py). One file, written by the JVM and read here, so tests/conformance/consumer_positions.json
pins its shape for both::

    {"format": 1, "query_id": "<uuid>", "name": "orders" | null,
     "checkpoint": "file:/ckpt/sources/0", "offsets": {"events": {"0": 120, "1": 98}}, "committed_ms": 1700000000000}

The files are untrusted input: each is opened without following a link, read up to MAX_FILE_BYTES, and
checked field by field; a bad one is reported by name with the reason and skipped (never a crash of the
sidecar, never a guess at what it meant). The query id is the file's name and must equal the one inside.
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from seglog.errors import InvalidTopicError, SeglogError
from seglog.indexer.names import META_DIR, validate_topic

FORMAT = 1
CONSUMERS_DIR = "consumers"
MAX_FILE_BYTES = 1 << 20            # the JVM writes no larger file (ConsumerPositions.MAX_FILE_BYTES)
MAX_FILES = 10_000                  # files looked at per scan: a flooded folder costs bounded time
MAX_NAME_CHARS = 1_000              # a query name or checkpoint location longer than this is refused
_QUERY_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_PARTITION = re.compile(r"0|[1-9][0-9]{0,9}")
_KEYS = ("format", "query_id", "name", "checkpoint", "offsets", "committed_ms")
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class CorruptConsumerPositionError(SeglogError):
    """A consumer position file that cannot be read as one (the message names the file and the field)."""


@dataclass(frozen=True)
class ConsumerPosition:
    query_id: str
    name: str | None
    checkpoint: str
    offsets: Mapping[tuple[str, int], int]     # (topic, partition) -> the next offset the query reads
    committed_ms: int                          # when Spark committed these offsets (the driver's clock)


def consumers_dir(root: str | os.PathLike) -> Path:
    return Path(root) / META_DIR / CONSUMERS_DIR


def parse_consumer_position(data: bytes, file_name: str) -> ConsumerPosition:
    """One file's bytes, checked: CorruptConsumerPositionError naming `file_name` and what is wrong."""
    def bad(what: str) -> CorruptConsumerPositionError:
        return CorruptConsumerPositionError(f"{file_name}: {what}")

    if len(data) > MAX_FILE_BYTES:
        raise bad(f"{len(data)} bytes, over the {MAX_FILE_BYTES} a consumer position may take")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise bad(f"not JSON ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(doc, dict):
        raise bad(f"a JSON {type(doc).__name__}, not an object with keys {', '.join(_KEYS)}")
    fmt = doc.get("format")
    if not _is_int(fmt) or fmt < 1:
        raise bad(f"'format' = {_show(fmt)} is not a format version (a positive integer)")
    if fmt > FORMAT:
        raise bad(f"format {fmt} is newer than this seglog reads ({FORMAT}): upgrade the sidecar")
    unknown = sorted(set(doc) - set(_KEYS))
    missing = [k for k in _KEYS if k not in doc]
    if unknown or missing:
        raise bad("keys " + ", ".join(f"{k!r} unknown" for k in unknown[:5])
                  + ("; " if unknown and missing else "") + ", ".join(f"{k!r} missing" for k in missing))
    query_id = doc["query_id"]
    if not isinstance(query_id, str) or not _QUERY_ID.fullmatch(query_id):
        raise bad(f"'query_id' = {_show(query_id)} is not a streaming query id (a lower-case UUID)")
    if file_name != f"{query_id}.json":
        raise bad(f"'query_id' = {query_id!r} is not the file's name: a file is named <query id>.json")
    name = doc["name"]
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME_CHARS):
        raise bad(f"'name' = {_show(name)} is not null or a query name of at most {MAX_NAME_CHARS} characters")
    checkpoint = doc["checkpoint"]
    if not isinstance(checkpoint, str) or not checkpoint or len(checkpoint) > MAX_NAME_CHARS:
        raise bad(f"'checkpoint' = {_show(checkpoint)} is not a checkpoint location of 1 to {MAX_NAME_CHARS} characters")
    committed_ms = doc["committed_ms"]
    if not _is_int(committed_ms) or not 0 <= committed_ms <= _INT64_MAX:
        raise bad(f"'committed_ms' = {_show(committed_ms)} is not a time in ms since the epoch")
    return ConsumerPosition(query_id=query_id, name=name, checkpoint=checkpoint,
                            offsets=_offsets(doc["offsets"], bad), committed_ms=committed_ms)


def _offsets(raw: Any, bad) -> dict[tuple[str, int], int]:
    if not isinstance(raw, dict):
        raise bad(f"'offsets' = {_show(raw)} is not an object of topic -> {{partition: offset}}")
    out: dict[tuple[str, int], int] = {}
    for topic, parts in raw.items():
        try:
            validate_topic(topic)
        except InvalidTopicError as exc:
            raise bad(f"'offsets': {exc}") from None
        if not isinstance(parts, dict):
            raise bad(f"'offsets.{topic}' = {_show(parts)} is not an object of partition -> offset")
        for key, offset in parts.items():
            if not _PARTITION.fullmatch(key) or int(key) > _INT32_MAX:
                raise bad(f"'offsets.{topic}': partition {key!r} is not a partition number (0 to {_INT32_MAX})")
            if not _is_int(offset) or not 0 <= offset <= _INT64_MAX:
                raise bad(f"'offsets.{topic}.{key}' = {_show(offset)} is not an offset (a non-negative integer)")
            out[(topic, int(key))] = offset
    return out


def read_consumer_positions(root: str | os.PathLike,
                            bad: list[tuple[str, str]] | None = None) -> list[ConsumerPosition]:
    """Every readable consumer position under `root`, by query id. A file that cannot be read as one is
    appended to `bad` as (path, reason) and skipped; temporary files (a leading dot) are not looked at."""
    bad = [] if bad is None else bad
    folder = consumers_dir(root)
    for path in (folder.parent, folder):
        if path.is_symlink():
            bad.append((str(path), "a symbolic link inside the log root; seglog never follows one"))
            return []
    try:
        names = []
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.startswith("."):
                    continue
                if len(names) == MAX_FILES:
                    bad.append((str(folder), f"more than {MAX_FILES} files: the rest are not read"))
                    break
                names.append(entry.name)
    except FileNotFoundError:
        return []
    except OSError as exc:
        bad.append((str(folder), f"cannot be listed ({type(exc).__name__}: {exc})"))
        return []
    out = []
    for name in sorted(names):
        path = folder / name
        try:
            out.append(parse_consumer_position(_read_bounded(path), name))
        except CorruptConsumerPositionError as exc:
            bad.append((str(path), str(exc).split(": ", 1)[1]))
        except OSError as exc:
            bad.append((str(path), f"cannot be read ({type(exc).__name__}: {exc.strerror or exc})"))
    return out


def _read_bounded(path: Path) -> bytes:
    """The file's bytes, never through a link, at most MAX_FILE_BYTES + 1 (so an oversized file is told)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CorruptConsumerPositionError(f"{path.name}: a symbolic link inside the log root; "
                                               f"seglog never follows one") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CorruptConsumerPositionError(f"{path.name}: not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise CorruptConsumerPositionError(
                f"{path.name}: {st.st_size} bytes, over the {MAX_FILE_BYTES} a consumer position may take")
        chunks, left = [], MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def forget(root: str | os.PathLike, query_id: str) -> None:
    """Remove a query's position file (the sidecar forgets a query idle past consumer.idle.forget.ms)."""
    if not _QUERY_ID.fullmatch(query_id):
        raise ValueError(f"not a streaming query id: {query_id!r}")
    try:
        os.unlink(consumers_dir(root) / f"{query_id}.json")
    except FileNotFoundError:
        pass


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, (bytes, bytearray)) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
