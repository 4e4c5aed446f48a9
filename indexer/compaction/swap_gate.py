"""How a clean or merge swaps a group in beside a live writer (docs/spec.md §3.9, §3.10), as Kafka's
cleaner runs beside appends: the group's output (`.cleaned` files, indexer/compaction/clean_swap.py) is
built without the partition's lock from sealed segments below the first uncleanable offset, and the
lock is taken for each group's check and swap only (`SwapGate.swap_in`).

Invariants kept here:
- A group is swapped in only if, under the partition's lock, it is as its build found it: every one of
  its segments still there, sealed, with the same `.log` file (inode, size, mtime); the segment at the
  group's end still the next one (no truncation into the group); for a clean, the segment at its key
  map's end still the same file (no truncation below the map's end, which the filter relied on); the log start at most the group's
  base (no retention of it); no truncation or other swap pending; the cleaner checkpoint unchanged (no
  other clean). Else its output is removed and the reason returned: nothing changes.
- The partition's lock is held for one group's check and swap at a time, never across a build; each
  hold is timed (`holds_ms`), so tests and the bench can say how long the writer could have waited.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from seglog.errors import PartitionLockedError
from seglog.indexer import checkpoint
from seglog.indexer.compaction import clean_swap
from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset
from seglog.indexer.locks import partition_lock
from seglog.indexer.names import LOG_SUFFIX, log_bases_and_swaps, parse_partition_dir, segment_file
from seglog.indexer.recovery import TRUNCATE_INTENT
from seglog.indexer.segment import sealed_summary


@dataclass(frozen=True)
class GroupSnapshot:
    """A group's segments as its build began: what the swap checks again under the lock."""
    bases: tuple[int, ...]
    end: int                                       # the next segment's base: the group's end
    files: tuple[tuple[int, int, int], ...]        # per segment: its .log's (inode, size, mtime ns)
    cleaner_checkpoint: int | None
    guard: tuple[int, int] | None = None           # (base, .log inode) of the segment at the key map's end


def _log_file(d: Path, base: int) -> tuple[int, int, int]:
    st = os.stat(segment_file(d, base, LOG_SUFFIX))
    return st.st_ino, st.st_size, st.st_mtime_ns


def log_inodes(d: Path, bases: list[int]) -> dict[int, int]:
    """Each segment's `.log` inode (FileNotFoundError: one is already gone)."""
    return {b: _log_file(d, b)[0] for b in bases}


def snapshot(d: Path, bases: list[int], end: int, guard: tuple[int, int] | None = None) -> GroupSnapshot:
    """Taken before the build reads the group (FileNotFoundError: a segment is already gone). `guard`:
    a clean's filter depends on every record its key map read, not only on the group's: a truncation
    below the map's end deletes the segment at that end (truncation deletes every segment above its
    cut), so that segment's inode must still be the one the clean began with."""
    return GroupSnapshot(tuple(bases), end, tuple(_log_file(d, b) for b in bases), cleaner_offset(d), guard)


def what_changed(d: Path, snap: GroupSnapshot) -> str | None:
    """Why the group may no longer be swapped in (see the module doc), or None. Run under the lock."""
    listed, swaps = log_bases_and_swaps(d)
    if swaps:
        return f"a swap at {min(swaps)} is pending (recovery finishes it)"
    if (d / TRUNCATE_INTENT).exists():
        return "a truncation is pending"
    here = [b for b in listed if snap.bases[0] <= b <= snap.end]
    if here != list(snap.bases) + [snap.end]:
        return f"its segments changed (now {here[:4]}{'...' if len(here) > 4 else ''}: retention or truncation)"
    for i, base in enumerate(snap.bases):
        nxt = snap.bases[i + 1] if i + 1 < len(snap.bases) else snap.end
        try:
            if _log_file(d, base) != snap.files[i] or sealed_summary(d, base, nxt) is None:
                return f"segment {base} changed (truncated or rewritten)"
        except FileNotFoundError:
            return f"segment {base} was deleted"
    if snap.guard is not None:
        try:
            if _log_file(d, snap.guard[0])[0] != snap.guard[1]:
                return f"segment {snap.guard[0]} (the key map's end) was replaced: a truncation below it"
        except FileNotFoundError:
            return f"segment {snap.guard[0]} (the key map's end) was deleted: a truncation below it"
    parsed = parse_partition_dir(d.name)
    if parsed is not None:
        start = checkpoint.read_log_start_offsets(d.parent).get(parsed, 0)
        if start > snap.bases[0]:
            return f"the log start moved to {start}, past the group's base {snap.bases[0]}"
    if cleaner_offset(d) != snap.cleaner_checkpoint:
        return "another clean moved the cleaner checkpoint"
    return None


class SwapGate:
    """Takes the partition's lock for one group's swap at a time. `held`: the caller holds it already
    (a writable Log's clean or merge); the check still runs, and the holds are still timed."""

    def __init__(self, d: Path, lock_timeout: float | None, *, held: bool = False):
        self.d = Path(d)
        self.lock_timeout = lock_timeout
        self.held = held
        self.holds_ms: list[float] = []

    @property
    def longest_hold_ms(self) -> float:
        return max(self.holds_ms, default=0.0)

    def swap_in(self, snap: GroupSnapshot, swap: Callable[[], None]) -> str | None:
        """Under the lock: `swap()` if the group is unchanged, else remove its output. Returns why
        the group was given up, or None when it was swapped in."""
        lock = None
        if not self.held:
            try:
                lock = partition_lock(self.d).acquire(self.lock_timeout)
            except PartitionLockedError as exc:
                clean_swap.remove_cleaned(self.d)
                return f"group at {snap.bases[0]}: {exc}"
        started = time.perf_counter()
        try:
            why = what_changed(self.d, snap)
            if why is None:
                swap()
        finally:
            self.holds_ms.append((time.perf_counter() - started) * 1000)
            if lock is not None:
                lock.release()
        if why is not None:
            clean_swap.remove_cleaned(self.d)   # ours: the maintenance lock is held (indexer/locks.py)
            return f"group at {snap.bases[0]}: {why}"
        return None
