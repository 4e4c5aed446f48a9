"""The offset index (.index, docs/spec.md §2.3): entries (relative offset int32, position int32), big-endian.

An entry (O, P) says the batch starting at byte P of the .log holds offset O (as Kafka, the key is
the batch's last offset, the value its start position). Lookup is a floor: the largest entry with
offset <= target, from which the log is scanned forward.

Invariants kept here:
- Offsets and positions are strictly increasing (append refuses anything else).
- Position > 0 always: the first batch of a segment (position 0) is never indexed, since an entry is
  added only once more than index.interval.bytes were appended since the last one. The position is
  therefore the marker that tells a valid entry from the zero padding of a preallocated file.
- Relative offsets fit in int32: offset - base_offset in [0, 2**31 - 1].
"""
from __future__ import annotations

import struct

import numpy as np

from seglog.indexer.indexes.mmap_index import (
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidIndexEntryError,
    MmapIndex,
)
from seglog.indexer.codec.records import INT32_MAX

_ENTRY = struct.Struct(">ii")
_INT32 = struct.Struct(">i")


class OffsetIndex(MmapIndex):
    """`OffsetIndex(path, base_offset, max_index_size, *, writable=True, preallocate=True)`."""

    ENTRY_DTYPE = np.dtype([("rel", ">i4"), ("pos", ">i4")])
    ENTRY_SIZE = 8
    MARKER = (">i", 4)  # the position
    KIND = "offset index"

    # ---- reads ------------------------------------------------------------------------------
    def entry(self, i: int) -> tuple[int, int]:
        """The i-th entry as (absolute offset, position); negative i counts from the end."""
        self._check_open()
        n = self._entries
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"entry {i} out of range: {self._path} has {n} entries")
        rel, pos = self._unpack(_ENTRY, i * 8)
        return self._base + rel, pos

    def last_entry(self) -> tuple[int, int] | None:
        """(offset, position) of the last entry, or None when empty."""
        self._check_open()
        if not self._entries:
            return None
        rel, pos = self._unpack(_ENTRY, (self._entries - 1) * 8)
        return self._base + rel, pos

    def last_offset(self) -> int:
        """The last entry's offset, or the base offset when empty (Kafka's lastOffset)."""
        last = self.last_entry()
        return self._base if last is None else last[0]

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """Floor: (offset, position) of the largest entry with offset <= target_offset, or
        (base_offset, 0) when there is none (scan the log from its start)."""
        self._check_open()
        rel = int(target_offset) - self._base
        if rel < 0 or not self._entries:
            return self._base, 0
        i = self._bisect(_INT32, 0, rel, right=True) - 1
        if i < 0:
            return self._base, 0
        rel, pos = self._unpack(_ENTRY, i * 8)
        return self._base + rel, pos

    def offsets_and_positions(self) -> tuple[np.ndarray, np.ndarray]:
        """(absolute offsets as a new int64 array, positions as a read-only big-endian int32 view)."""
        view = self.entries_view()
        return view["rel"].astype(np.int64) + self._base, view["pos"]

    def fits(self, offset: int) -> bool:
        """Whether `offset` can be a key of this index (relative offset fits in int32)."""
        return 0 <= int(offset) - self._base <= INT32_MAX

    # ---- writes -----------------------------------------------------------------------------
    def append(self, offset: int, position: int) -> None:
        """Add the entry (offset, position). Refuses (InvalidIndexEntryError) an offset or position
        not strictly above the last entry's, a position <= 0, an offset outside
        [base, base + 2**31 - 1] (IndexOffsetOverflowError); IndexFullError when full."""
        self._check_writable()
        offset, position = int(offset), int(position)
        rel = offset - self._base
        if not 0 <= rel <= INT32_MAX:
            raise IndexOffsetOverflowError(
                f"offset {offset} does not fit {self._path}: allowed {self._base} to "
                f"{self._base + INT32_MAX} (relative offsets are int32)")
        if not 0 < position <= INT32_MAX:
            raise InvalidIndexEntryError(
                f"position {position} for offset {offset} refused by {self._path}: positions are "
                f"1 to {INT32_MAX} (the first batch of a segment, at 0, is never indexed)")
        n = self._entries
        if n:
            last_rel, last_pos = self._unpack(_ENTRY, (n - 1) * 8)
            if rel <= last_rel or position <= last_pos:
                raise InvalidIndexEntryError(
                    f"entry (offset {offset}, position {position}) refused by {self._path}: "
                    f"entries must be strictly increasing in both fields; last entry is "
                    f"(offset {self._base + last_rel}, position {last_pos})")
        if n < self.max_entries:
            self._room_for(n)
        if n >= self._slots:
            raise IndexFullError(
                f"{self._path} is full ({n} entries of {self._slots}): roll the segment")
        at = n * 8
        _INT32.pack_into(self._mm, at, rel)           # payload first,
        _INT32.pack_into(self._mm, at + 4, position)  # marker last: now it is an entry
        self._entries = n + 1

    def append_entries(self, offsets: np.ndarray, positions: np.ndarray) -> None:
        """`append` of many entries at once (an index rebuilt, a bulk append): the same checks on all of
        them before anything is stored, so a refused call changes nothing."""
        self._check_writable()
        offsets, positions = np.asarray(offsets, dtype=np.int64), np.asarray(positions, dtype=np.int64)
        if not len(offsets):
            return
        rel = self._relative_offsets(offsets)
        bad = np.flatnonzero((positions <= 0) | (positions > INT32_MAX))
        if bad.size:
            raise InvalidIndexEntryError(
                f"position {positions[bad[0]]} for offset {offsets[bad[0]]} refused by {self._path}: positions "
                f"are 1 to {INT32_MAX} (the first batch of a segment, at 0, is never indexed)")
        last = self.last_entry()
        prev_rel = np.concatenate(([-1 if last is None else last[0] - self._base], rel[:-1]))
        prev_pos = np.concatenate(([0 if last is None else last[1]], positions[:-1]))
        bad = np.flatnonzero((rel <= prev_rel) | (positions <= prev_pos))
        if bad.size:
            i = bad[0]
            raise InvalidIndexEntryError(
                f"entry (offset {offsets[i]}, position {positions[i]}) refused by {self._path}: entries must be "
                f"strictly increasing in both fields; the entry before is (offset {self._base + prev_rel[i]}, "
                f"position {prev_pos[i]})")
        rows = np.empty(len(offsets), dtype=self.ENTRY_DTYPE)
        rows["rel"], rows["pos"] = rel, positions
        self._store_entries(rows, self.max_entries, marker="pos")

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= offset (their slots are zeroed)."""
        self._check_writable()
        rel = int(offset) - self._base
        if rel <= 0:
            keep = 0
        else:
            keep = self._bisect(_INT32, 0, rel, right=False)
        self._truncate_entries(keep)

    # ---- checks -----------------------------------------------------------------------------
    def _entry_problems(self, view: np.ndarray, first_index: int) -> list[str]:
        if not view.size:
            return []
        rel = view["rel"].astype(np.int64)
        pos = view["pos"].astype(np.int64)
        found = [
            self._describe_bad(rel < 0, first_index, f"with an offset below the base {self._base}"),
            self._describe_bad(pos <= 0, first_index, "with a position <= 0"),
            self._describe_bad(np.diff(rel) <= 0, first_index + 1,
                               "with an offset not above the previous entry's"),
            self._describe_bad(np.diff(pos) <= 0, first_index + 1,
                               "with a position not above the previous entry's"),
        ]
        return [f"{self._path}: {p}" for p in found if p]
