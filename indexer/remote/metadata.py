"""The per-partition remote segment metadata log (docs/tiered-storage.md §3), Kafka's
RemoteLogMetadataManager for one root: `<root>/_seglog/remote/<topic>-<partition>.meta`.

One record per line, `<crc32c of the JSON, 8 hex digits> <JSON>\\n`: `copying` (a copy started: objects may be
written from here on; the sweep deletes them unless `copied` follows), `copied` (the segment's objects are
complete: readers may read it), `deleting` (remote retention took it out of the log; objects go next),
`deleted` (its objects are gone). The state of a base is its last record.

Invariants kept here:
- Each append is atomic: an fsynced append of one CRC'd line; a torn last line (no newline, or a bad
  CRC) is a crash's and reads as absent; the writer cuts it off before its next append.
- A bad line before the last is damage: reported (CorruptRecordError naming the file and line), never skipped.
- Only the sidecar appends (it holds the root's leader lock and the partition's maintenance lock).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import crc32c as _crc32c

from seglog.errors import CorruptRecordError, OffsetOutOfRangeError
from seglog.indexer.fsutil import fsync_dir, make_dirs, meta_path
from seglog.indexer.names import partition_dir_name

META_SUBDIR = "remote"
META_SUFFIX = ".meta"
OPS = ("copying", "copied", "deleting", "deleted")


def metadata_path(root: str | os.PathLike, topic: str, partition: int) -> Path:
    return meta_path(root, META_SUBDIR, f"{partition_dir_name(topic, partition)}{META_SUFFIX}")


@dataclass(frozen=True)
class RemoteSegment:
    """A tiered segment, as its `copied` record (and manifest) describe it."""
    base: int
    next: int           # the next segment's base: the first offset it does not hold
    last: int           # its last offset
    max_ts: int         # its largest record timestamp, -1 when none has one
    files: dict         # {"log"|"index"|"timeindex": {"size", "sha256"}}
    at: int             # when it was recorded (ms): what time retention judges where max_ts is -1

    @property
    def size(self) -> int:
        return int(self.files["log"]["size"])

    def manifest(self, topic: str, partition: int) -> dict:
        return {"version": 1, "topic": topic, "partition": partition, "base": self.base, "next": self.next,
                "last": self.last, "max_ts": self.max_ts, "files": self.files}

    @classmethod
    def from_record(cls, rec: dict) -> "RemoteSegment":
        return cls(int(rec["base"]), int(rec["next"]), int(rec["last"]), int(rec["max_ts"]), dict(rec["files"]),
                   int(rec.get("at", -1)))


@dataclass
class RemoteState:
    """The metadata log read: each base's last state."""
    live: dict[int, RemoteSegment] = field(default_factory=dict)      # copied
    deleting: dict[int, RemoteSegment] = field(default_factory=dict)  # deleting: gone for readers
    deleted: set[int] = field(default_factory=set)
    copying: set[int] = field(default_factory=set)   # a copy started, not recorded copied: its objects are ours to sweep
    copied_end: int | None = None  # the largest `next` of any copied record, also of segments since deleted
    valid_bytes: int = 0          # the length of the file's whole, checked lines
    torn: bool = False            # a torn last line follows them

    def segments(self) -> list[RemoteSegment]:
        """The live remote segments, oldest first."""
        return [self.live[b] for b in sorted(self.live)]

    @property
    def start(self) -> int | None:
        """The remote log start: the smallest live base, None when the remote tier holds nothing."""
        return min(self.live) if self.live else None

    @property
    def end(self) -> int | None:
        """The remote end: the largest `next` ever recorded copied (also of segments since deleted:
        nothing below it is copied again)."""
        return self.copied_end


def remote_end_of(partition_dir: str | os.PathLike) -> int | None:
    """The remote end of the partition in `partition_dir` (its root is the parent), None when nothing
    was ever tiered (see mutable_from)."""
    from seglog.indexer.names import parse_partition_dir

    d = Path(partition_dir)
    parsed = parse_partition_dir(d.name)
    if parsed is None or not metadata_path(d.parent, *parsed).exists():
        return None
    return read_state(d.parent, *parsed).end


def mutable_from(partition_dir: str | os.PathLike) -> int:
    """The first offset of the partition in `partition_dir` that merge, clean and truncation may change:
    its remote end, 0 when nothing was ever tiered. The one home of the rule "what is tiered is immutable"
    (docs/tiered-storage.md §4): a rewrite below it would make the local copy differ from the remote one,
    a truncation below it would let new records reuse offsets the remote tier holds. The remote end is a
    segment boundary (only whole sealed segments are copied, and nothing below it is merged or cleaned)."""
    end = remote_end_of(partition_dir)
    return 0 if end is None else end


def refuse_below_remote_end(partition_dir: str | os.PathLike, offset: int, doing: str) -> None:
    """Raise OffsetOutOfRangeError when `doing` (e.g. "truncate to offset 12") would change records at
    `offset` below the partition's remote end; the caller has changed nothing yet."""
    floor = mutable_from(partition_dir)
    if offset < floor:
        raise OffsetOutOfRangeError(f"{partition_dir}: cannot {doing}: offsets up to {floor - 1} are tiered to the "
                                    f"remote tier, and what is tiered is immutable (docs/tiered-storage.md §4)")


def locally_deletable(partition_dir: str | os.PathLike, bases: list[int]) -> int | None:
    """How many of the oldest local segments (`bases`, the active one last) may be deleted without a hole
    between the tiers: those recorded `copied` with the same range, in a row from the oldest; None when the
    remote tier holds no live segment of the partition (nothing to keep contiguous with). The one home of the
    rule "local deletion never outruns the remote tier" for retention of any kind (docs/tiered-storage.md §4)."""
    from seglog.indexer.names import parse_partition_dir

    d = Path(partition_dir)
    parsed = parse_partition_dir(d.name)
    if parsed is None or not metadata_path(d.parent, *parsed).exists():
        return None
    state = read_state(d.parent, *parsed)
    if not state.live:
        return None
    k = 0
    while k < len(bases) - 1 and bases[k] in state.live and state.live[bases[k]].next == bases[k + 1]:
        k += 1
    return k


def encode(record: dict) -> bytes:
    body = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    return b"%08x " % _crc32c.crc32c(body) + body + b"\n"


def _decode(line: bytes) -> dict | None:
    """The record of a whole line, or None when its CRC or shape is wrong."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:]
    try:
        if int(line[:8], 16) != _crc32c.crc32c(body):
            return None
        rec = json.loads(body)
    except ValueError:
        return None
    if not isinstance(rec, dict) or rec.get("op") not in OPS or not isinstance(rec.get("base"), int):
        return None
    return rec


def read_state(root: str | os.PathLike, topic: str, partition: int) -> RemoteState:
    path = metadata_path(root, topic, partition)
    state = RemoteState()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return state
    lines = data.split(b"\n")
    tail = lines.pop()                    # after the last newline: b"" unless an append was torn
    pos = 0
    for n, line in enumerate(lines, 1):
        rec = _decode(line)
        if rec is None:
            if n == len(lines) and not tail:
                state.torn = True         # a whole line with a bad CRC, last: a torn append
                break
            raise CorruptRecordError(f"{path}: line {n} is damaged (bad CRC or shape): the remote segment "
                                     f"metadata log cannot be trusted past it")
        _apply(state, rec, path, n)
        pos += len(line) + 1
    state.valid_bytes = pos
    state.torn = state.torn or bool(tail)
    return state


def _apply(state: RemoteState, rec: dict, path: Path, n: int) -> None:
    base, op = rec["base"], rec["op"]
    if op == "copying":             # readers ignore it: the segment is not part of the log yet
        state.copying.add(base)
        return
    state.copying.discard(base)
    if op == "copied":
        try:
            state.live[base] = seg = RemoteSegment.from_record(rec)
        except (KeyError, TypeError, ValueError):
            raise CorruptRecordError(f"{path}: line {n}: a copied record lacks its segment's fields") from None
        state.copied_end = seg.next if state.copied_end is None else max(state.copied_end, seg.next)
        state.deleting.pop(base, None)
        state.deleted.discard(base)
    elif op == "deleting":
        seg = state.live.pop(base, None)
        if seg is not None:
            state.deleting[base] = seg
    else:
        state.live.pop(base, None)
        state.deleting.pop(base, None)
        state.deleted.add(base)


def append(root: str | os.PathLike, topic: str, partition: int, record: dict, state: RemoteState | None = None) -> None:
    """Append one record, fsynced; a torn tail left by a crash is cut off first."""
    path = metadata_path(root, topic, partition)
    state = state if state is not None else read_state(root, topic, partition)
    created = not path.exists()
    if created:
        make_dirs(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if state.torn:
            os.ftruncate(fd, state.valid_bytes)
        line = encode(record)
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)
    state.valid_bytes += len(line)
    state.torn = False
    _apply(state, record, path, -1)
