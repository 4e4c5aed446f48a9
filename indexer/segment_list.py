"""The ordered segments of one partition (docs/internals.md, "Log"): what Kafka's `LogSegments` holds.

Base offsets in order, the active (last) segment, a bounded cache of open inactive segments, the
floor lookup from an offset to its segment, and each segment's largest timestamp with their running
maximum (the timestamp lookup's binary search, docs/spec.md §3.5). `Log` decides what happens to
the partition (append, roll, truncate, retention); this container only keeps the segments in order.

Invariants kept here:
- `bases` is strictly increasing and its last element is `active.base_offset` (when there is one).
- A segment is open at most once: the active one, or in the cache (at most `cache_size`).
- A segment appended to since the last flush is in `unflushed` until `flush_rolled` or its eviction
  fsyncs it: nothing is closed with bytes that were never made durable.
- `largest` and `running_max`, once loaded, have one element per base; appends keep the active
  segment's element current (`note_active_max`), membership changes reload them.
"""
from __future__ import annotations

import bisect
import os
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

from seglog.errors import CorruptIndexError, SegmentDeletedError
from seglog.indexer.leader_epochs import max_leader_epoch
from seglog.indexer.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX
from seglog.indexer.codec.records import NO_TIMESTAMP
from seglog.indexer.fsutil import fsync_dir
from seglog.indexer.segment import LogSegment, sealed_summary

CACHE_SIZE = 16   # open inactive segments kept (memory does not grow with the log)
# Seconds a read-only open waits for a missing index file to appear before it names it missing: a
# writer puts a segment's indexes in place before its .log, except while it restarts a fully
# truncated log (a bare .log, its indexes created at once by the writer's open).
_INDEX_SETTLE_WAITS = (0.002, 0.01, 0.05, 0.1, 0.2)


class SegmentList:
    def __init__(self, path: Path, config, *, writable: bool, cache_size: int = CACHE_SIZE):
        self.path = path
        self.config = config
        self.writable = writable
        self.cache_size = cache_size
        self.dense = True          # False where compaction may have left offset gaps (Log decides)
        self.bases: list[int] = []
        self.active: LogSegment | None = None
        self._open: "OrderedDict[int, LogSegment]" = OrderedDict()
        self._unflushed: dict[int, LogSegment] = {}
        self._created = False      # a segment's files made since the last flush: their entries in the folder too
        self._largest: np.ndarray | None = None
        self._running_max: np.ndarray | None = None
        self._max_epoch: int | None = None

    # ------------------------------------------------------------------ membership
    def open_segment(self, base: int, *, active: bool, create: bool = False) -> LogSegment:
        if self._max_epoch is None:     # a folder's property: Kafka's checkpoint is there or not, for the Log's life
            self._max_epoch = max_leader_epoch(self.path)
        try:
            seg = LogSegment(self.path, base, self.config, writable=self.writable, active=active, create=create,
                             max_epoch=self._max_epoch)
        except FileNotFoundError as exc:
            if create or self.writable or not self._index_missing(base, exc.filename):
                raise               # the .log itself is gone: deleted under the reader (its callers re-list)
            seg = LogSegment(self.path, base, self.config, writable=False, active=active, max_epoch=self._max_epoch)
        seg.dense = self.dense
        return seg

    def _index_missing(self, base: int, name) -> bool:
        """After a read-only open failed on `name`: True when that is one of the segment's index files
        and it appeared meanwhile (open again). Raises CorruptIndexError naming it when it stays missing
        while the segment's .log is there: not a deletion (which renames the .log first), a segment
        whose index is gone (a Kafka broker may leave one so; a writable open rebuilds it)."""
        name = os.fspath(name) if name is not None else ""
        if not name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX)):
            return False
        log = os.path.join(self.path, f"{base:020d}{LOG_SUFFIX}")
        for wait in _INDEX_SETTLE_WAITS:
            if not os.path.exists(log):
                return False
            if os.path.exists(name):
                return True
            time.sleep(wait)
        if not os.path.exists(log) or os.path.exists(name):
            return os.path.exists(log)
        what = "offset index" if name.endswith(INDEX_SUFFIX) else "time index"
        raise CorruptIndexError(
            f"{name}: the {what} of segment {base} is missing while its .log ({log}) is there; a writable "
            f"open rebuilds it from the .log (`seglog recover`; `seglog import` does so for a broker's folder)")

    def load(self, bases: list[int], active: LogSegment | None) -> None:
        """Take the segments found on disk (`active` is the last of `bases`, opened by the caller)."""
        self.bases = list(bases)
        self.active = active
        self._forget_timestamps()

    def add_active(self, base: int) -> LogSegment:
        """Create a new, empty segment at `base` and make it the active one."""
        seg = self.open_segment(base, active=True, create=True)
        self._created = True
        seg.next_offset = base
        seg.bytes_since_index_entry = 0
        self.bases.append(base)
        self.active = seg
        if self._largest is not None:
            prev = self._running_max[-1] if len(self._running_max) else NO_TIMESTAMP
            self._largest = np.append(self._largest, NO_TIMESTAMP)
            self._running_max = np.append(self._running_max, prev)
        return seg

    def adopt_active(self, base: int) -> LogSegment:
        """Open a segment whose files were just put in place at `base` (tests/oracles/staged.py adopt_segments, the publish's reference) as the active one."""
        seg = self.open_segment(base, active=True)
        seg.load_state()
        self.bases.append(base)
        self.active = seg
        self._forget_timestamps()
        return seg

    def retire_active(self) -> LogSegment:
        """The active segment becomes an inactive one in the cache (a roll), still unflushed."""
        old = self.active
        self.note_active_max()
        self._unflushed[old.base_offset] = old
        self._open[old.base_offset] = old
        self.evict()
        return old

    def drop_oldest(self, count: int) -> list[int]:
        """Forget (and close) the oldest `count` segments; returns their bases. Never the active one."""
        dropped = self.bases[:count]
        for base in dropped:
            self._unflushed.pop(base, None)
            seg = self._open.pop(base, None)
            if seg is not None:
                seg.close()
        self.bases = self.bases[count:]
        self._forget_timestamps()
        return dropped

    def close_all(self) -> None:
        for seg in self._open.values():
            seg.close()
        self._open.clear()
        self._unflushed.clear()
        if self.active is not None:
            self.active.close()
            self.active = None

    # ------------------------------------------------------------------ lookup
    def position(self, offset: int) -> int:
        """Index of the segment holding `offset` (the floor of the bases; 0 below the first)."""
        return max(0, bisect.bisect_right(self.bases, offset) - 1)

    def next_base(self, base: int) -> int:
        i = bisect.bisect_right(self.bases, base)
        return self.bases[i] if i < len(self.bases) else self.active.next_offset

    def get(self, base: int) -> LogSegment:
        """The segment with this base offset, opened on demand (at most `cache_size` stay open)."""
        if self.active is not None and base == self.active.base_offset:
            return self.active
        seg = self._open.get(base)
        if seg is not None:
            self._open.move_to_end(base)
            return seg
        try:
            seg = self.open_segment(base, active=False)
        except FileNotFoundError:
            raise SegmentDeletedError(
                f"{self.path}: segment {base} was deleted (retention or truncation) while in use") from None
        seg.next_offset = self.next_base(base)
        self._open[base] = seg
        self.evict()
        return seg

    def evict(self, keep: int | None = None) -> None:
        keep = self.cache_size if keep is None else keep
        while len(self._open) > keep:
            base, old = self._open.popitem(last=False)
            if self._unflushed.pop(base, None) is not None:
                _fsync(old)   # durability first: it was appended to since the last flush
            old.close()

    def open_segments(self):
        return list(self._open.values())

    # ------------------------------------------------------------------ durability
    def flush_rolled(self, forced: frozenset[int] = frozenset()) -> frozenset[int]:
        """fsync every segment rolled past since the last flush: its .log and its indexes (but those in
        `forced`, whose files the caller has just forced: a durable seal). Returns the bases forced here."""
        done = []
        for base, seg in self._unflushed.items():
            if not seg.closed and base not in forced:
                _fsync(seg)
                done.append(base)
        self._unflushed.clear()
        if self._created:
            # A roll's new files are durable only with their names: a crash could otherwise keep the data a
            # flush forced and lose the folder's entry for it (POSIX asks for the folder's fsync; the JVM's
            # publish does the same).
            fsync_dir(self.path)
            self._created = False
        return frozenset(done)

    # ------------------------------------------------------------------ facts and timestamps
    def facts(self, i: int) -> tuple[int, int, int, bool]:
        """(size, largest timestamp, mtime ms, sealed) of the i-th segment; a sealed segment is
        answered from its files alone (no open), the others by opening them."""
        base = self.bases[i]
        last = i == len(self.bases) - 1
        if not last:
            summary = sealed_summary(self.path, base, self.bases[i + 1])
            if summary is not None:
                return summary.size, summary.largest_timestamp, summary.mtime_ms, True
        seg = self.active if last else self.get(base)
        return seg.size, seg.largest_timestamp(), seg.mtime_ms(), False

    def largest_timestamps(self) -> tuple[np.ndarray, np.ndarray]:
        """(each segment's largest timestamp, their running maximum), loaded once, then kept current."""
        if self._largest is None or len(self._largest) != len(self.bases):
            largest = np.array([self.facts(i)[1] for i in range(len(self.bases))], dtype=np.int64)
            self._largest = largest
            self._running_max = np.maximum.accumulate(largest) if len(largest) else largest
        return self._largest, self._running_max

    def note_active_max(self) -> None:
        """Bring the active segment's element up to date after an append (a live lookup must see it)."""
        if self._largest is not None and len(self._largest):
            ts = self.active.max_timestamp
            self._largest[-1] = ts
            prev = self._running_max[-2] if len(self._running_max) > 1 else NO_TIMESTAMP
            self._running_max[-1] = max(prev, ts)

    def _forget_timestamps(self) -> None:
        self._largest = None
        self._running_max = None


def _fsync(seg: LogSegment) -> None:
    seg.flush()
    seg.flush_indexes()
