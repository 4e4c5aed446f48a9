"""The sink's commit log: per topic, the committed end offset of every partition (the high watermark).

Readers never read past `end_offsets()`, so a batch being written, or one that will be rolled back,
is never seen (docs/spec.md §4). Files: <root>/_seglog/commits/<topic>/<seq:020d>.json, each the full state:

    {"seq": 7, "writer_id": "...", "batch_id": 12, "time": 1700000000000,
     "end_offsets": {"0": 1200, "1": 980}, "writers": {"<query id>": 12, "operator": -1}}

Invariants kept here:
- A commit file is written whole under a temporary name, fsynced, then `os.link`ed to the next seq
  name; the link fails if a concurrent committer took that seq, and this committer then re-reads the
  newest state and merges again. So no commit is lost and none is torn.
- Each state carries every partition's end forward; a commit names only the partitions it changed.
- An end offset only moves down when the committer asks for it (`allow_lower=True`: the operator's
  truncation); a sink commit that would lower an end is refused (someone else moved the log).
- The last `retain` files are kept (bounded history, like Spark's minBatchesToRetain); the newest is
  never removed.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from seglog.errors import SeglogError
from seglog.indexer.format_version import COMMIT_FILE_VERSION, read_version
from seglog.indexer.fsutil import make_dirs, meta_path, publish_by_link, temp_suffix
from seglog.indexer.names import validate_topic

_SEQ_RE = re.compile(r"^(\d{20})\.json$")
_MAX_ATTEMPTS = 1000


class CommitConflictError(SeglogError):
    """A commit would move a committed end offset backwards without asking to."""


class CorruptCommitError(SeglogError):
    """A commit file cannot be read."""


@dataclass(frozen=True)
class CommitState:
    seq: int
    writer_id: str
    batch_id: int
    end_offsets: dict[int, int] = field(default_factory=dict)
    writers: dict[str, int] = field(default_factory=dict)
    time: int = 0

    def to_json(self) -> dict:
        return {"version": COMMIT_FILE_VERSION, "seq": self.seq, "writer_id": self.writer_id, "batch_id": self.batch_id, "time": self.time,
                "end_offsets": {str(p): o for p, o in sorted(self.end_offsets.items())},
                "writers": dict(sorted(self.writers.items()))}


# A commit file's fields as the JVM's CommitLogReader.parseState reads them (tests/conformance/commit_files.json
# pins both): numbers are JSON integers within int64 (never a bool, a float or a string of digits), the
# writer id a string, a partition key decimal digits within int32 (Java's Integer.parseInt).
_PARTITION_KEY = re.compile(r"[+-]?[0-9]+")


def _integral(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"{what} is {value!r}, not an integer within int64")
    return value


def _text(value, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} is {value!r}, not a string")
    return value


def _partition(key: str) -> int:
    if not _PARTITION_KEY.fullmatch(key) or not -(1 << 31) <= int(key) < 1 << 31:
        raise ValueError(f"partition {key!r} is not an int32")
    return int(key)


def commits_dir(root: str | os.PathLike, topic: str) -> Path:
    return meta_path(root, "commits", validate_topic(topic))


class CommitLog:
    """The commit log of one topic under one root."""

    def __init__(self, root: str | os.PathLike, topic: str, retain: int = 100):
        if retain < 1:
            raise ValueError(f"retain must be at least 1, got {retain}")
        self.root = Path(root)
        self.topic = topic
        self.dir = commits_dir(root, topic)
        self.retain = retain

    # ------------------------------------------------------------------ reads
    def _seqs(self) -> list[int]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for m in map(_SEQ_RE.match, names) if m)

    def _path(self, seq: int) -> Path:
        return self.dir / f"{seq:020d}.json"

    def _read(self, seq: int) -> CommitState:
        path = self._path(seq)
        raw = path.read_bytes()
        try:
            doc = json.loads(raw)
            read_version(doc, COMMIT_FILE_VERSION, path, "commit file")   # first: a newer file is refused whole
            state = CommitState(
                seq=_integral(doc["seq"], "seq"), writer_id=_text(doc["writer_id"], "writer_id"),
                batch_id=_integral(doc["batch_id"], "batch_id"),
                end_offsets={_partition(p): _integral(o, "end offset") for p, o in doc["end_offsets"].items()},
                writers={w: _integral(b, "writer batch") for w, b in doc["writers"].items()},
                time=_integral(doc.get("time", 0), "time"))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise CorruptCommitError(f"commit file {path} of topic {self.topic!r} is unreadable: {exc}") from None
        if state.seq != seq:
            raise CorruptCommitError(f"commit file {path} holds seq {state.seq}, not {seq}")
        return state

    def latest(self) -> CommitState | None:
        """The newest committed state, or None before the first commit."""
        for _ in range(_MAX_ATTEMPTS):
            seqs = self._seqs()
            if not seqs:
                return None
            try:
                return self._read(seqs[-1])
            except FileNotFoundError:  # pruned by a newer commit between listing and reading
                continue
        raise SeglogError(f"commit log {self.dir} keeps changing under the reader")

    def end_offsets(self) -> dict[int, int]:
        """Every partition's committed end offset (exclusive); readers never read past it."""
        state = self.latest()
        return dict(state.end_offsets) if state else {}

    def last_batch(self, writer_id: str) -> int | None:
        """The last batch id committed by `writer_id`, or None."""
        state = self.latest()
        return None if state is None else state.writers.get(writer_id)

    def history(self) -> list[CommitState]:
        """The retained states, oldest first."""
        out = []
        for seq in self._seqs():
            try:
                out.append(self._read(seq))
            except FileNotFoundError:
                continue
        return out

    # ------------------------------------------------------------------ commit
    def commit(self, writer_id: str, batch_id: int, end_offsets: Mapping[int, int], *,
               allow_lower: bool = False) -> CommitState:
        """Record `end_offsets` (partition -> end) as committed by `writer_id` for `batch_id`."""
        if not isinstance(writer_id, str) or not writer_id:
            raise ValueError(f"writer_id must be a non-empty string, got {writer_id!r}")
        ends = {}
        for p, o in end_offsets.items():
            if isinstance(p, bool) or not isinstance(p, int) or p < 0 or isinstance(o, bool) \
                    or not isinstance(o, int) or o < 0:
                raise ValueError(f"commit of topic {self.topic!r}: end offset {o!r} for partition {p!r}; "
                                 f"partitions and offsets are ints >= 0")
            ends[p] = o
        make_dirs(self.dir)
        for _ in range(_MAX_ATTEMPTS):
            current = self.latest()
            merged = dict(current.end_offsets) if current else {}
            if not allow_lower:
                lowered = {p: (merged[p], o) for p, o in ends.items() if o < merged.get(p, 0)}
                if lowered:
                    raise CommitConflictError(
                        f"commit of topic {self.topic!r} by writer {writer_id!r} (batch {batch_id}) would lower "
                        f"committed end offsets {{partition: (committed, asked)}} = {lowered}; only a truncation "
                        f"may lower them (allow_lower=True)")
            merged.update(ends)
            writers = dict(current.writers) if current else {}
            writers[writer_id] = int(batch_id)
            seq = current.seq + 1 if current else 0
            state = CommitState(seq, writer_id, int(batch_id), merged, writers, int(time.time() * 1000))
            if self._publish(state):
                self._prune(seq)
                return state
        raise SeglogError(f"commit log {self.dir}: gave up after {_MAX_ATTEMPTS} concurrent commits")

    def _publish(self, state: CommitState) -> bool:
        """Link the fsynced state to its seq name; False if a concurrent committer took that seq."""
        target = self._path(state.seq)
        tmp = self.dir / f".{state.seq:020d}.json.tmp-{temp_suffix()}"
        return publish_by_link(target, tmp, json.dumps(state.to_json(), sort_keys=True).encode(),
                               what=f"commit log {self.dir}: cannot publish commit {state.seq}")

    def _prune(self, newest: int) -> None:
        # Ascending: a reader that finds seq n + 1 missing and then seq n still there knows n was the newest
        # (the JVM's CommitLogReader.Tail follows the log so, without a listing).
        for seq in self._seqs():
            if seq <= newest - self.retain:
                try:
                    os.unlink(self._path(seq))
                except FileNotFoundError:
                    pass
