"""The time index (.timeindex, docs/spec.md §2.4): entries (timestamp int64 ms, relative offset int32).

We follow KIP-33's text: an entry (T, O) is written with T the largest timestamp seen so far in the
segment and O the NEXT offset at that moment. It promises: every record of this segment with an
offset below O has a timestamp of at most T.

Invariants kept here:
- Within one file, timestamps and offsets are strictly increasing (across segments they need not
  be; nothing here assumes they are).
- Timestamps are >= 0: "no timestamp" (-1) is never written; a segment whose records carry no
  timestamp has an empty time index until it is sealed with its file's modification time.
- The relative offset is > 0 (O is a next offset, so at least one record precedes it): it is the
  marker that tells a valid entry from the zero padding of a preallocated file, even an entry with
  timestamp 0.
- The active file always keeps one free slot for the seal entry: is_full() reports full one entry
  early, and seal_entry() grows a file that has no slot left (a trimmed file).
"""
from __future__ import annotations

import struct

import numpy as np

from seglog.indexer.mmap_index import (
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidIndexEntryError,
    MmapIndex,
)
from seglog.indexer.records import INT32_MAX

_ENTRY = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")

NO_TIMESTAMP = -1


class TimeIndex(MmapIndex):
    """`TimeIndex(path, base_offset, max_index_size, *, writable=True, preallocate=True)`."""

    ENTRY_DTYPE = np.dtype([("ts", ">i8"), ("rel", ">i4")])
    ENTRY_SIZE = 12
    MARKER = (">i", 8)  # the relative offset
    KIND = "time index"

    def is_full(self) -> bool:
        """Full one entry early: the last slot is kept for the seal entry."""
        return self._entries >= self._slots - 1

    # ---- reads ------------------------------------------------------------------------------
    def entry(self, i: int) -> tuple[int, int]:
        """The i-th entry as (timestamp, absolute offset); negative i counts from the end."""
        self._check_open()
        n = self._entries
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"entry {i} out of range: {self._path} has {n} entries")
        ts, rel = _ENTRY.unpack_from(self._mm, i * 12)
        return ts, self._base + rel

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry, or None when empty."""
        self._check_open()
        if not self._entries:
            return None
        ts, rel = _ENTRY.unpack_from(self._mm, (self._entries - 1) * 12)
        return ts, self._base + rel

    def max_timestamp(self) -> int:
        """The last entry's timestamp (the largest in the file), or -1 when empty."""
        last = self.last_entry()
        return NO_TIMESTAMP if last is None else last[0]

    def lookup(self, target_ts: int) -> tuple[int, int] | None:
        """The last entry whose timestamp is strictly below target_ts, as (timestamp, offset), or
        None. With it, every record below its offset has a timestamp < target_ts, so the first
        record with a timestamp >= target_ts is at or after that offset (docs/spec.md §3.5)."""
        self._check_open()
        if not self._entries:
            return None
        i = self._bisect(_INT64, 0, int(target_ts), right=False) - 1
        if i < 0:
            return None
        ts, rel = _ENTRY.unpack_from(self._mm, i * 12)
        return ts, self._base + rel

    def timestamps_and_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """(timestamps as a read-only big-endian int64 view, absolute offsets as a new int64 array)."""
        view = self.entries_view()
        return view["ts"], view["rel"].astype(np.int64) + self._base

    # ---- writes -----------------------------------------------------------------------------
    def _relative(self, next_offset: int, what: str) -> int:
        rel = next_offset - self._base
        if not 0 < rel <= INT32_MAX:
            raise IndexOffsetOverflowError(
                f"{what} {next_offset} does not fit {self._path}: allowed {self._base + 1} to "
                f"{self._base + INT32_MAX} (a next offset, relative int32, above the base)")
        return rel

    def _write(self, slot: int, timestamp: int, rel: int) -> None:
        at = slot * 12
        _INT64.pack_into(self._mm, at, timestamp)  # payload first,
        _INT32.pack_into(self._mm, at + 8, rel)    # marker last: now it is an entry

    def maybe_append(self, timestamp: int, next_offset: int) -> bool:
        """Append (timestamp, next_offset) if the index is empty or timestamp is above the last
        entry's; returns whether it appended. A greater timestamp with a next offset not above the
        last entry's is refused (InvalidIndexEntryError), as is an offset going backwards.
        IndexFullError when full (is_full())."""
        self._check_writable()
        timestamp, next_offset = int(timestamp), int(next_offset)
        last = self.last_entry()
        last_ts = NO_TIMESTAMP if last is None else last[0]
        if last is not None and next_offset < last[1]:
            raise InvalidIndexEntryError(
                f"next offset {next_offset} refused by {self._path}: below the last entry's "
                f"offset {last[1]}")
        if timestamp <= last_ts:
            return False
        rel = self._relative(next_offset, "next offset")
        if last is not None and next_offset <= last[1]:
            raise InvalidIndexEntryError(
                f"entry (timestamp {timestamp}, offset {next_offset}) refused by {self._path}: "
                f"a greater timestamp than the last entry ({last[0]}, {last[1]}) needs a greater "
                f"next offset")
        if self.is_full():
            raise IndexFullError(
                f"{self._path} is full ({self._entries} entries of {self._slots}, the last slot "
                f"kept for the seal entry): roll the segment")
        self._write(self._entries, timestamp, rel)
        self._entries += 1
        return True

    def seal_entry(self, max_timestamp: int, next_segment_base: int) -> bool:
        """Write the seal entry (max_timestamp, next_segment_base); returns whether the file changed.

        If the last entry already holds max_timestamp its offset is rewritten to next_segment_base
        (the promise only widens); otherwise the entry is appended (in the slot kept for it, or in a
        slot grown for it). Idempotent. A max_timestamp of -1 on an empty index (no record has a
        timestamp) leaves it empty.
        """
        self._check_writable()
        max_timestamp, next_segment_base = int(max_timestamp), int(next_segment_base)
        last = self.last_entry()
        if max_timestamp < 0:
            if last is None:
                return False
            raise InvalidIndexEntryError(
                f"seal of {self._path} with no largest timestamp ({max_timestamp}) but entries up "
                f"to timestamp {last[0]}")
        rel = self._relative(next_segment_base, "next segment base")
        if last is not None:
            last_ts, last_off = last
            if max_timestamp < last_ts:
                raise InvalidIndexEntryError(
                    f"seal of {self._path} with largest timestamp {max_timestamp} below the last "
                    f"entry's {last_ts}")
            if next_segment_base < last_off or (max_timestamp > last_ts and next_segment_base == last_off):
                raise InvalidIndexEntryError(
                    f"seal of {self._path} at next segment base {next_segment_base} with timestamp "
                    f"{max_timestamp}: inconsistent with the last entry ({last_ts}, {last_off})")
            if max_timestamp == last_ts:
                if next_segment_base == last_off:
                    return False
                # Rewrite the marker in place: it stays non-zero, the entry stays valid throughout.
                _INT32.pack_into(self._mm, (self._entries - 1) * 12 + 8, rel)
                return True
        self._ensure_slot()
        self._write(self._entries, max_timestamp, rel)
        self._entries += 1
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is > offset: an entry (T, O) with O <= offset still keeps
        its promise once the records at or after offset are gone; the others may name a timestamp
        no remaining record has."""
        self._check_writable()
        rel = int(offset) - self._base
        keep = 0 if rel <= 0 else self._bisect(_INT32, 8, rel, right=True)
        self._truncate_entries(keep)

    # ---- checks -----------------------------------------------------------------------------
    def _entry_problems(self, view: np.ndarray, first_index: int) -> list[str]:
        if not view.size:
            return []
        ts = view["ts"].astype(np.int64)
        rel = view["rel"].astype(np.int64)
        found = [
            self._describe_bad(rel <= 0, first_index,
                               f"with an offset not above the base {self._base}"),
            self._describe_bad(ts < 0, first_index, "with a negative timestamp"),
            self._describe_bad(np.diff(ts) <= 0, first_index + 1,
                               "with a timestamp not above the previous entry's"),
            self._describe_bad(np.diff(rel) <= 0, first_index + 1,
                               "with an offset not above the previous entry's"),
        ]
        return [f"{self._path}: {p}" for p in found if p]
