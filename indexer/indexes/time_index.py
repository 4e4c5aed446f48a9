"""The time index (.timeindex, docs/spec.md §2.4): entries (timestamp int64 ms, relative offset int32).

An entry (T, O) means what Kafka 4.x's broker writes (docs/format.md, "Time index"): T is the largest
timestamp seen so far in the segment and O the last offset of the first batch that reached T. It
promises: every record at an offset <= O has a timestamp <= T, and the batch ending at O holds T.

Invariants kept here:
- Within one file, timestamps and offsets are strictly increasing (across segments they need not
  be; nothing here assumes they are).
- Timestamps are >= 0: "no timestamp" (-1) is never written; a segment whose records carry no
  timestamp has an empty time index.
- O is inside the segment (relative offset 0 to INT32_MAX). A file whose entry points at or past
  the next segment's base was written by seglog 0.2 (KIP-33's text: a next offset); recovery
  rebuilds it (`points_past`).
- Telling entries from a preallocated file's zero tail: an entry is a slot with any non-zero byte.
  The one all-zero entry, (0, base), can only be the first; it counts when slot 1 holds an entry
  or the file is exactly one entry long (trimmed). A preallocated file never holds it alone, so a
  crash can never leave a zero slot that reads as "largest timestamp 0" (KAFKA-10207).
- The active file always keeps one free slot for the seal entry: is_full() reports full one entry
  early, and seal_entry() grows a file that has no slot left (a trimmed file) by two slots, so a
  crash mid-grow leaves zeros that count as no entry.
"""
from __future__ import annotations

import os
import struct

import numpy as np

from seglog.indexer.indexes.mmap_index import (
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidIndexEntryError,
    MmapIndex,
)
from seglog.indexer.codec.records import INT32_MAX

_ENTRY = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_ZERO_ENTRY = bytes(12)

NO_TIMESTAMP = -1


class TimeIndex(MmapIndex):
    """`TimeIndex(path, base_offset, max_index_size, *, writable=True, preallocate=True)`."""

    ENTRY_DTYPE = np.dtype([("ts", ">i8"), ("rel", ">i4")])
    ENTRY_SIZE = 12
    MARKER = (">i", 8)  # unused: _marker_at below looks at the whole entry
    KIND = "time index"

    def _marker_at(self, slot: int) -> int:
        """1 when the slot holds an entry (see the module doc: any non-zero byte, or the all-zero
        (0, base) first entry), 0 otherwise; 0 past the end of the file (never SIGBUS)."""
        raw = os.pread(self._fd, 12, slot * 12)
        if len(raw) < 12:
            return 0
        if raw != _ZERO_ENTRY:
            return 1
        if slot != 0:
            return 0
        if os.fstat(self._fd).st_size == 12:
            return 1
        nxt = os.pread(self._fd, 12, 12)
        return int(len(nxt) == 12 and nxt != _ZERO_ENTRY)

    def is_full(self) -> bool:
        """Full one entry early: the last slot is kept for the seal entry."""
        return self._entries >= self.max_entries - 1

    # ---- reads ------------------------------------------------------------------------------
    def entry(self, i: int) -> tuple[int, int]:
        """The i-th entry as (timestamp, absolute offset); negative i counts from the end."""
        self._check_open()
        n = self._entries
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"entry {i} out of range: {self._path} has {n} entries")
        ts, rel = self._unpack(_ENTRY, i * 12)
        return ts, self._base + rel

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry, or None when empty."""
        self._check_open()
        if not self._entries:
            return None
        ts, rel = self._unpack(_ENTRY, (self._entries - 1) * 12)
        return ts, self._base + rel

    def max_timestamp(self) -> int:
        """The last entry's timestamp (the largest in the file), or -1 when empty."""
        last = self.last_entry()
        return NO_TIMESTAMP if last is None else last[0]

    def lookup(self, target_ts: int) -> tuple[int, int] | None:
        """The last entry whose timestamp is strictly below target_ts, as (timestamp, offset), or
        None. Every record at or below its offset has a timestamp < target_ts, so the first record
        with a timestamp >= target_ts is after that offset (docs/spec.md §3.5). Strictly below, not
        Kafka's "at most": the answer stays right on a 0.2 file too, whose entries promise only the
        records before their offset."""
        self._check_open()
        if not self._entries:
            return None
        i = self._bisect(_INT64, 0, int(target_ts), right=False) - 1
        if i < 0:
            return None
        ts, rel = self._unpack(_ENTRY, i * 12)
        return ts, self._base + rel

    def timestamps_and_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """(timestamps as a read-only big-endian int64 view, absolute offsets as a new int64 array)."""
        view = self.entries_view()
        return view["ts"], view["rel"].astype(np.int64) + self._base

    # ---- writes -----------------------------------------------------------------------------
    def _relative(self, offset: int, what: str) -> int:
        rel = offset - self._base
        if not 0 <= rel <= INT32_MAX:
            raise IndexOffsetOverflowError(
                f"{what} {offset} does not fit {self._path}: allowed {self._base} to "
                f"{self._base + INT32_MAX} (relative int32 from the base)")
        return rel

    def _write(self, slot: int, timestamp: int, rel: int) -> None:
        _ENTRY.pack_into(self._mm, slot * 12, timestamp, rel)

    def _check_after_last(self, timestamp: int, offset: int) -> tuple[int, int] | None:
        last = self.last_entry()
        if last is not None and (offset < last[1] or (timestamp > last[0] and offset == last[1])):
            raise InvalidIndexEntryError(
                f"entry (timestamp {timestamp}, offset {offset}) refused by {self._path}: offsets "
                f"must grow with timestamps after the last entry ({last[0]}, {last[1]})")
        return last

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Append (timestamp, offset) if the index is empty or timestamp is above the last entry's
        (Kafka's maybeAppend); returns whether it appended. `offset` is the last offset of the
        first batch that reached `timestamp`. An offset going backwards, or a greater timestamp at
        the last entry's offset, is refused (InvalidIndexEntryError); IndexFullError when full.
        The all-zero entry (0, base) is not written to a preallocated file (see the module doc):
        lookups then scan from the segment's start, and the seal writes it once the file is trimmed."""
        self._check_writable()
        timestamp, offset = int(timestamp), int(offset)
        last = self._check_after_last(timestamp, offset)
        if timestamp <= (NO_TIMESTAMP if last is None else last[0]):
            return False
        rel = self._relative(offset, "offset")
        if timestamp == 0 and rel == 0:
            return False
        if self.is_full():
            raise IndexFullError(
                f"{self._path} is full ({self._entries} entries of {self._slots}, the last slot "
                f"kept for the seal entry): roll the segment")
        self._room_for(self._entries)
        self._write(self._entries, timestamp, rel)
        self._entries += 1
        return True

    def append_entries(self, timestamps: np.ndarray, offsets: np.ndarray) -> None:
        """Entries that `maybe_append` would each append (timestamps strictly rising above the last
        entry's, offsets rising, never (0, base)), stored at once after the same checks on all of
        them, so a refused call changes nothing. The last slot stays kept for the seal entry."""
        self._check_writable()
        timestamps, offsets = np.asarray(timestamps, dtype=np.int64), np.asarray(offsets, dtype=np.int64)
        if not len(timestamps):
            return
        rel = self._relative_offsets(offsets)
        last = self.last_entry()
        prev_ts = np.concatenate(([NO_TIMESTAMP if last is None else last[0]], timestamps[:-1]))
        prev_off = np.concatenate(([self._base - 1 if last is None else last[1]], offsets[:-1]))
        bad = np.flatnonzero((timestamps <= prev_ts) | (offsets <= prev_off) | ((timestamps == 0) & (rel == 0)))
        if bad.size:
            i = bad[0]
            raise InvalidIndexEntryError(
                f"entry (timestamp {timestamps[i]}, offset {offsets[i]}) refused by {self._path}: entries must "
                f"rise in both fields after ({prev_ts[i]}, {prev_off[i]}), and (0, base) is never written")
        rows = np.empty(len(timestamps), dtype=self.ENTRY_DTYPE)
        rows["ts"], rows["rel"] = timestamps, rel
        self._store_entries(rows, self.max_entries - 1, marker="rel")

    def seal_entry(self, max_timestamp: int, offset_of_max: int) -> bool:
        """Write the seal entry (the segment's largest timestamp, the last offset of the first batch
        holding it) if the last entry does not already hold that timestamp, as Kafka does when a
        segment becomes inactive; returns whether the file changed. Idempotent. -1 (no record has
        a timestamp) on an empty index leaves it empty. The caller trims the file next."""
        self._check_writable()
        max_timestamp, offset_of_max = int(max_timestamp), int(offset_of_max)
        last = self.last_entry()
        if max_timestamp < 0:
            if last is None:
                return False
            raise InvalidIndexEntryError(
                f"seal of {self._path} with no largest timestamp ({max_timestamp}) but entries up "
                f"to timestamp {last[0]}")
        if last is not None and max_timestamp < last[0]:
            raise InvalidIndexEntryError(
                f"seal of {self._path} with largest timestamp {max_timestamp} below the last "
                f"entry's {last[0]}")
        if last is not None and max_timestamp == last[0]:
            if offset_of_max != last[1]:
                raise InvalidIndexEntryError(
                    f"seal of {self._path}: the largest timestamp {max_timestamp} is at offset "
                    f"{offset_of_max}, but the last entry says {last[1]}")
            return False
        self._check_after_last(max_timestamp, offset_of_max)
        rel = self._relative(offset_of_max, "offset of the largest timestamp")
        self._ensure_slot()
        self._write(self._entries, max_timestamp, rel)
        self._entries += 1
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= offset (as Kafka's truncateTo): an entry (T, O) with
        O < offset still keeps its promise once the records at or after offset are gone; the others
        name a batch that no longer exists."""
        self._check_writable()
        rel = int(offset) - self._base
        keep = 0 if rel <= 0 else self._bisect(_INT32, 8, rel, right=False)
        self._truncate_entries(keep)

    def points_past(self, next_base: int) -> bool:
        """True when an entry points at or past `next_base`: a seglog 0.2 file (KIP-33's text),
        whose entries mean "records below O", not Kafka's "the batch ending at O"."""
        last = self.last_entry()
        return last is not None and last[1] >= next_base

    # ---- checks -----------------------------------------------------------------------------
    def _entry_problems(self, view: np.ndarray, first_index: int) -> list[str]:
        if not view.size:
            return []
        ts = view["ts"].astype(np.int64)
        rel = view["rel"].astype(np.int64)
        found = [
            self._describe_bad(rel < 0, first_index,
                               f"with an offset below the base {self._base}"),
            self._describe_bad(ts < 0, first_index, "with a negative timestamp"),
            self._describe_bad(np.diff(ts) <= 0, first_index + 1,
                               "with a timestamp not above the previous entry's"),
            self._describe_bad(np.diff(rel) <= 0, first_index + 1,
                               "with an offset not above the previous entry's"),
        ]
        return [f"{self._path}: {p}" for p in found if p]
