"""A fixed-entry-size index file, searched by binary search (docs/spec.md §2.3, 2.4); a writer's is memory mapped.

The base of `OffsetIndex` (.index) and `TimeIndex` (.timeindex). The file is a run of entries of
ENTRY_SIZE bytes, big-endian, with no header. While a segment is active its index files are
preallocated (extended with zeros to `max_index_size`); a sealed segment's files are trimmed to their
entries.

Invariants kept here:
- Every valid entry has a non-zero *marker* field (the offset index's position, the time index's
  relative offset); a preallocated tail is all zeros. The number of valid entries is therefore the
  index of the first slot whose marker is zero, found by a binary search (O(log n)) when the file is
  opened; a zero tail left by a crash is never read as entries (the KAFKA-10207 lesson).
- An entry is written payload first, marker last, so a concurrent reader that sees a non-zero marker
  sees the whole entry, and a crash between the two stores leaves a slot that is not an entry.
- Dropped entries (truncation) are zeroed from the last one backwards, so at any instant the file is
  [valid entries][entries being dropped, still ordered][zeros]: never a hole a binary search could
  fall into.
- The file is never read whole into the Python heap: searches read single entries;
  a writer's `entries_view()` is a numpy view over its map (no copy), a reader's a copy.
- Only the writer maps the file. A read-only index reads every entry with `os.pread`: another
  process's writer may truncate (zero entries, then seal and trim the file below them) at any time,
  and a map touched past the file's new end raises SIGBUS, which kills the process. A pread there is
  a short read, taken as zeros; a reader racing a truncation may so see zeroed entries (harmless:
  a floor of (base, 0) means "scan from the segment's start"), never a signal
  (docs/reliability.md). The writer holds the partition's lock, so nothing shrinks its file under
  its map.
- Counting entries reads through `os.pread`, never the map.
- The map and the file descriptor survive a rename of the file (`rename_to`).
- Space is reserved only to append: a writable open (and `resize`) records the preallocated size it
  wants, and the file is extended to it (`posix_fallocate`, then mapped) only before the first entry
  that needs a slot past the file's end (`reserve`, which the segment calls before it writes the
  batches' bytes). So retention, sealing, purging and recovery, which add no entries, work on a full
  filesystem; an append there fails with a StorageError before it writes anything, never a SIGBUS.
"""
from __future__ import annotations

import errno
import functools
import mmap
import os
import struct
from pathlib import Path
from typing import ClassVar

import numpy as np

from seglog.errors import ReadOnlyLogError, SeglogError, StorageError
from seglog.indexer.codec.records import INT32_MAX
from seglog.indexer.fsutil import open_in_root


# Kafka's "warm section" (KAFKA-6432): the last 8 KiB of entries are probed first, so the hot
# lookups near the end of an active index touch the same few pages.
_WARM_BYTES = 8192
# Entries zeroed per store when truncating (keeps the temporary zero buffer small).
_ZERO_CHUNK_BYTES = 1 << 16
# Bytes scanned per step when sanity_check looks for garbage after the valid entries.
_SCAN_CHUNK_BYTES = 1 << 20


_REMAP_ATTEMPTS = 5


def _reserve(fd: int, path: str, size: int, target: int) -> None:
    """Extend the file to `target` bytes of zeros with its blocks reserved. A sparse extension
    (ftruncate alone) would let a full filesystem surface later as SIGBUS on a store into the map;
    reserving first turns it into an error here, at open, naming the file."""
    try:
        if target > size:
            os.posix_fallocate(fd, size, target - size)
        os.ftruncate(fd, target)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOTSUP):
            os.ftruncate(fd, target)   # no fallocate here (some network filesystems): sparse it is
            return
        try:
            os.ftruncate(fd, size)     # leave the file as it was
        except OSError:
            pass
        err = StorageError(f"{path}: cannot reserve {target - size} bytes for the index "
                           f"({exc.strerror}); free space on the filesystem, or lower segment.index.bytes")
        err.errno = exc.errno      # ENOSPC stays recognisable (the sidecar defers what needs room)
        raise err from None


class IndexFullError(SeglogError):
    """An append to an index file with no free slot (the segment must roll first)."""


class InvalidIndexEntryError(SeglogError, ValueError):
    """An entry that would break an index's rules (order, range, marker) was refused."""


class IndexOffsetOverflowError(InvalidIndexEntryError):
    """An offset outside [base, base + 2**31 - 1]: its relative offset does not fit in int32."""


class IndexClosedError(SeglogError):
    """An index file was used after close()."""


def _round_down(size: int, entry_size: int) -> int:
    return max(0, int(size)) // entry_size * entry_size


class MmapIndex:
    """Base class: the map, the entry count, trim/resize, and the generic binary search.

    Subclasses set ENTRY_DTYPE (big-endian structured), MARKER (struct format, byte offset within
    the entry) and implement `_entry_problems(view, first_index)` for `sanity_check`.
    """

    ENTRY_DTYPE: ClassVar[np.dtype]
    ENTRY_SIZE: ClassVar[int]
    MARKER: ClassVar[tuple[str, int]]
    KIND: ClassVar[str] = "index"

    def __init__(self, path: str | os.PathLike, base_offset: int, max_index_size: int, *,
                 writable: bool = True, preallocate: bool = True, absent_is_empty: bool = False) -> None:
        es = self.ENTRY_SIZE
        self._path = os.fspath(path)   # a string: opening an index is on the lookup path, pathlib is slow
        self._base = int(base_offset)
        self._writable = bool(writable)
        self._mm: mmap.mmap | None = None
        self._slots = 0
        self._entries = 0
        # Slots the file is to have once space is reserved (module doc, "reserved only to append");
        # at most the mapped `_slots` when nothing is pending.
        self._target_slots = 0
        self._fd = -1
        self._marker = struct.Struct(self.MARKER[0])
        self._marker_off = self.MARKER[1]
        # "preallocated" is what the file is expected to look like: a zero tail is normal only then.
        # Readonly opens take it from `preallocate` (pass False for a sealed segment).
        self._preallocated = bool(preallocate)  # None: as found (see below)
        flags = (os.O_RDWR | os.O_CREAT) if self._writable else os.O_RDONLY
        try:
            # fsutil: shared roots; never through a symlink; a writable open never shares its inode (import --link)
            self._fd = open_in_root(self._path, flags, 0o644)
        except FileNotFoundError:
            # `absent_is_empty` (a reader of a segment whose .log is empty): the index is not there
            # yet, as Kafka creates a new segment's indexes lazily; it holds no entry, and an empty
            # file (os.devnull) is what a reader reads as none.
            if self._writable or not absent_is_empty:
                raise
            self._fd = os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            size = os.fstat(self._fd).st_size
            self._size_problems: list[str] = []
            if size % es:
                self._size_problems.append(
                    f"{self._path}: size {size} at open is not a multiple of the entry size {es}")
            if self._writable and preallocate:
                # Extend only (never shrink on open: that could cut evidence of corruption), and
                # only when an entry needs the room (`reserve`).
                self._target_slots = _round_down(max_index_size, es) // es
            self._remap(size)
            self._entries = self._count_entries(self._slots)
            if preallocate is None:
                # "As found": neither extended nor trimmed here; a zero tail is expected exactly
                # when the file has one (an unsealed segment), and trimmed files stay strict.
                self._preallocated = self._entries < self._slots
            self._quick_problems: list[str] | None = None   # computed on first use: opens stay cheap
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise

    # ---- sizes and state -------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return Path(self._path)

    @property
    def base_offset(self) -> int:
        return self._base

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def entries(self) -> int:
        """Number of valid entries."""
        return self._entries

    @property
    def max_entries(self) -> int:
        """Slots the file has, or is to have once its pending preallocation is reserved (a trimmed
        file has exactly `entries`)."""
        return max(self._slots, self._target_slots)

    @property
    def closed(self) -> bool:
        return self._fd < 0

    @property
    def file_size(self) -> int:
        self._check_open()
        return os.fstat(self._fd).st_size

    @property
    def is_trimmed(self) -> bool:
        """True when the file holds exactly its entries: no preallocated tail, no partial entry."""
        return self.file_size == self._entries * self.ENTRY_SIZE

    @property
    def open_problems(self) -> list[str]:
        """What the cheap O(1) check found when the file was opened (sanity_check() is the full one)."""
        if self._quick_problems is None:
            self._quick_problems = self._quick_check()
        return self._size_problems + self._quick_problems

    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    def reserve(self) -> None:
        """Extend the file to its pending preallocation (module doc), reserving the blocks before
        mapping them: a full filesystem raises StorageError here, never a SIGBUS at a store."""
        self._check_writable()
        if self._target_slots <= self._slots:
            return
        size = os.fstat(self._fd).st_size
        target = self._target_slots * self.ENTRY_SIZE
        if target > size:
            if self._mm is not None:
                self._mm.flush()
            _reserve(self._fd, self._path, size, target)
            size = target
        self._remap(size)
        # Counted again, as an open that preallocates counts after extending: an all-zero entry
        # that a trimmed file of one slot holds (TimeIndex's (0, base)) is no entry in a zero tail.
        self._entries = self._count_entries(self._slots)

    def _room_for(self, slot: int) -> None:
        """Before an entry is stored at `slot`: the pending preallocation, if the slot needs it."""
        if slot >= self._slots:
            self.reserve()

    def _relative_offsets(self, offsets: np.ndarray) -> np.ndarray:
        """`offsets` relative to the base, each checked to fit the entries' int32 field
        (IndexOffsetOverflowError naming the first that does not): the bulk appends' one home of the rule."""
        rel = offsets - self._base
        bad = np.flatnonzero((rel < 0) | (rel > INT32_MAX))
        if bad.size:
            raise IndexOffsetOverflowError(
                f"offset {offsets[bad[0]]} does not fit {self._path}: allowed {self._base} to "
                f"{self._base + INT32_MAX} (relative offsets are int32)")
        return rel

    def _store_entries(self, rows: np.ndarray, limit: int, marker: str) -> None:
        """Append `rows` (ENTRY_DTYPE, already checked by the subclass) after the valid entries: every
        slot is made room for before the first store, or IndexFullError and nothing is written; every
        field but `marker` is stored for all rows first, the marker fields last, so a concurrent reader
        (or a crash) sees whole entries and zeros, never a marker without its payload."""
        n, k = self._entries, len(rows)
        if not k:
            return
        if n + k > limit:
            raise IndexFullError(f"{self._path} is full ({n} entries of {limit}, {k} more asked): roll the segment")
        self._room_for(n + k - 1)
        if n + k > self._slots:
            raise IndexFullError(f"{self._path} is full ({n} entries of {self._slots}, {k} more asked): roll the segment")
        dst = np.frombuffer(self._mm, dtype=self.ENTRY_DTYPE, count=k, offset=n * self.ENTRY_SIZE)
        for name in self.ENTRY_DTYPE.names:
            if name != marker:
                dst[name] = rows[name]
        dst[marker] = rows[marker]
        del dst        # no view may outlive the map (trim and resize remap it)
        self._entries = n + k

    # ---- counting ---------------------------------------------------------------------------
    def _marker_at(self, slot: int) -> int:
        """The marker of a slot read with pread (0 past the end of the file: never SIGBUS)."""
        return self._marker.unpack(self._read(slot * self.ENTRY_SIZE + self._marker_off, self._marker.size))[0]

    def _count_entries(self, slots: int) -> int:
        """Index of the first slot with a zero marker: valid entries are a non-zero prefix."""
        if slots and self._marker_at(slots - 1) != 0:
            return slots  # a trimmed or full file: one read instead of a search
        lo, hi = 0, slots
        while lo < hi:
            mid = (lo + hi) // 2
            if self._marker_at(mid) != 0:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _quick_check(self) -> list[str]:
        """O(1) checks at open: the last two entries in order and valid, the last slot zero."""
        problems: list[str] = []
        n = self._entries
        if n:
            first = max(0, n - 2)
            problems.extend(self._entry_problems(self._view(first, n), first))
        if n < self._slots and self._marker_at(self._slots - 1) != 0:
            problems.append(
                f"{self._path}: the last slot ({self._slots - 1}) is not zero but entry {n} is: "
                f"garbage after the valid entries")
        return problems

    def refresh(self) -> int:
        """Recount the entries (a reader following a concurrent writer); remaps if the file changed
        size. Returns the entry count."""
        self._check_open()
        size = os.fstat(self._fd).st_size
        if _round_down(size, self.ENTRY_SIZE) != self._slots * self.ENTRY_SIZE:
            self._remap()
        self._entries = self._count_entries(self._slots)
        return self._entries

    # ---- the map ----------------------------------------------------------------------------
    def _remap(self, size: int | None = None) -> None:
        """Map the whole file (rounded down to entries; `size` when the caller just stat'ed it).
        An empty file is not mapped."""
        old = self._mm
        self._mm = None
        if old is not None:
            try:
                old.close()
            except BufferError:
                pass  # numpy views from entries_view() still use it; it is unmapped when they go
        for attempt in range(_REMAP_ATTEMPTS):
            length = _round_down(os.fstat(self._fd).st_size if size is None else size, self.ENTRY_SIZE)
            self._slots = length // self.ENTRY_SIZE
            if not length or not self._writable:
                return   # a reader never maps (module doc): its slots are all it needs
            try:
                self._mm = mmap.mmap(self._fd, length, access=mmap.ACCESS_WRITE)
                return
            except (ValueError, OSError) as exc:
                # A reader raced a writer that trimmed or truncated the file (a clean close, a
                # seal, a truncation) between the stat and the map (ValueError, or EINVAL): stat again.
                # Readers take no lock (docs/spec.md §4), so this is theirs to absorb.
                if isinstance(exc, OSError) and exc.errno != errno.EINVAL:
                    raise
                if attempt == _REMAP_ATTEMPTS - 1:
                    raise
                size = None

    def _read(self, start: int, nbytes: int) -> bytes:
        """`nbytes` of the file from byte `start`, by pread; zeros past the file's end (a reader's
        file trimmed under it reads as the zero tail it was)."""
        raw = os.pread(self._fd, nbytes, start)
        return raw if len(raw) == nbytes else raw + bytes(nbytes - len(raw))

    def _unpack(self, st: struct.Struct, at: int) -> tuple:
        """`st` unpacked at byte `at`: from the map (writer) or by pread (reader, module doc)."""
        if self._mm is not None:
            return st.unpack_from(self._mm, at)
        return st.unpack(self._read(at, st.size))

    def _view(self, start: int, stop: int) -> np.ndarray:
        if stop <= start:
            return np.empty(0, dtype=self.ENTRY_DTYPE)
        es = self.ENTRY_SIZE
        if self._mm is None:
            if self._writable:
                return np.empty(0, dtype=self.ENTRY_DTYPE)   # an empty file: nothing mapped
            view = np.frombuffer(self._read(start * es, (stop - start) * es), dtype=self.ENTRY_DTYPE)
        else:
            view = np.frombuffer(self._mm, dtype=self.ENTRY_DTYPE, count=stop - start, offset=start * es)
        view.flags.writeable = False
        return view

    def entries_view(self) -> np.ndarray:
        """A read-only numpy array of the valid entries, big-endian structured dtype: a writer's is a
        view of its map (no copy; drop it before relying on the old map being released, it stays
        valid after trim/resize), a reader's a copy read with pread (module doc).
        """
        self._check_open()
        return self._view(0, self._entries)

    # ---- binary search ----------------------------------------------------------------------
    def _bisect(self, st: struct.Struct, field_off: int, value: int, *, right: bool) -> int:
        """bisect_left/right of `value` over one int field of the valid entries: read from the map
        (writer) or one pread per probe (reader, module doc)."""
        es = self.ENTRY_SIZE
        if self._mm is not None:
            unpack = functools.partial(st.unpack_from, self._mm)
        else:
            unpack = functools.partial(self._unpack, st)
        lo, hi = 0, self._entries
        warm = _WARM_BYTES // es
        mid = hi - warm if hi > warm else (lo + hi) // 2  # first probe: the warm section's start
        while lo < hi:
            key = unpack(mid * es + field_off)[0]
            if key < value or (right and key == value):
                lo = mid + 1
            else:
                hi = mid
            mid = (lo + hi) // 2
        return lo

    # ---- writes -----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._fd < 0:
            raise IndexClosedError(f"{self.KIND} file {self._path} was used after close()")

    def _check_writable(self) -> None:
        self._check_open()
        if not self._writable:
            raise ReadOnlyLogError(f"{self.KIND} file {self._path} is open read-only")

    def _truncate_entries(self, n: int) -> None:
        """Keep the first n entries; zero the rest from the last one backwards (see module doc)."""
        old = self._entries
        if n >= old:
            return
        es, mm = self.ENTRY_SIZE, self._mm
        chunk = max(1, _ZERO_CHUNK_BYTES // es)
        stop = old
        while stop > n:
            start = max(n, stop - chunk)
            mm[start * es:stop * es] = bytes((stop - start) * es)
            stop = start
        self._entries = n
        if self._target_slots > self._slots:
            # A file not yet preallocated again (space is reserved only to append) has no zero tail
            # that its zeroed slots could join: it is trimmed to its entries, so that no zero slot is
            # counted as TimeIndex's all-zero entry (0, base).
            os.ftruncate(self._fd, n * es)
            self._remap()

    def _ensure_slot(self) -> None:
        """Room for one more entry (the seal entry) in a trimmed or full file: grown by two zero
        slots, so a crash before the entry is written leaves no slot that counts as an entry. The
        blocks are reserved, not a sparse extension: a full filesystem is a StorageError, no SIGBUS."""
        if self._entries >= self._slots:
            size = os.fstat(self._fd).st_size
            if self._mm is not None:
                self._mm.flush()
            _reserve(self._fd, self._path, size, (self._entries + 2) * self.ENTRY_SIZE)
            self._remap()

    def trim(self, *, fsync: bool = True) -> None:
        """Shrink the file to its entries (no preallocated tail remains). Sealing fsyncs (a sealed
        segment must stay decidably sealed); a clean close need not (recovery copes with either)."""
        self._check_writable()
        if fsync and self._mm is not None:
            self._mm.flush()
        os.ftruncate(self._fd, self._entries * self.ENTRY_SIZE)
        self._remap()
        self._target_slots = 0
        self._preallocated = False
        if fsync:
            os.fsync(self._fd)

    def resize(self, max_index_size: int) -> None:
        """Size the file for max_index_size rounded down to entries, never below the entries held;
        e.g. when truncation makes a sealed segment active again. Shrinking happens now; growing is
        pending until an entry needs it (`reserve`, module doc)."""
        self._check_writable()
        target = max(_round_down(max_index_size, self.ENTRY_SIZE), self._entries * self.ENTRY_SIZE)
        if self._mm is not None:
            self._mm.flush()
        size = os.fstat(self._fd).st_size
        if target < size:
            os.ftruncate(self._fd, target)
        self._remap()
        self._target_slots = target // self.ENTRY_SIZE
        self._preallocated = True

    def flush(self) -> None:
        """msync the map and fsync the file."""
        self._check_open()
        if self._writable:
            if self._mm is not None:
                self._mm.flush()
            os.fsync(self._fd)

    def rename_to(self, new_path: str | os.PathLike) -> None:
        """Rename the file (os.replace); the map and the descriptor stay valid."""
        self._check_open()
        new_path = Path(new_path)
        os.replace(self._path, new_path)
        self._path = os.fspath(new_path)

    def close(self) -> None:
        """Release the map and the descriptor. Does not trim or fsync (see trim, flush)."""
        if self._fd < 0:
            return
        mm, self._mm = self._mm, None
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass  # views from entries_view() still alive: unmapped when they are collected
        fd, self._fd = self._fd, -1
        os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass

    def __repr__(self) -> str:
        state = "closed" if self._fd < 0 else ("rw" if self._writable else "ro")
        return (f"{type(self).__name__}({str(self._path)!r}, base={self._base}, "
                f"entries={self._entries}/{self._slots}, {state})")

    # ---- checks -----------------------------------------------------------------------------
    def _entry_problems(self, view: np.ndarray, first_index: int) -> list[str]:
        raise NotImplementedError

    def sanity_check(self) -> list[str]:
        """Every problem found in the file (empty when sound). O(n), vectorised over the map.

        Reports: a size that is not a whole number of entries; entries out of order or out of
        range (subclass rules); non-zero bytes after the first zero entry (garbage or a hole: a
        torn entry in the first free slot, payload without marker, is tolerated); and, in a file
        expected to be trimmed, any zero entry.
        """
        self._check_open()
        if not self._writable:
            self.refresh()  # a concurrent writer may have appended since the count
        problems = list(self._size_problems)
        es, n, slots = self.ENTRY_SIZE, self._entries, self._slots
        size = os.fstat(self._fd).st_size
        if size % es:
            problems.append(f"{self._path}: size {size} is not a multiple of the entry size {es}")
        problems.extend(self._entry_problems(self._view(0, n), 0))
        if n + 1 < slots:
            bad = self._first_nonzero_slot(n + 1, slots)
            if bad is not None:
                problems.append(
                    f"{self._path}: slot {bad} holds non-zero bytes after the first zero entry {n}: "
                    f"garbage or a hole in the index")
        if not self._preallocated and n < slots:
            problems.append(
                f"{self._path}: {slots - n} zero entries after entry {n} in a file expected to be "
                f"trimmed (a preallocated tail or zeroed entries)")
        return problems

    def _first_nonzero_slot(self, start: int, stop: int) -> int | None:
        es = self.ENTRY_SIZE
        step = max(1, _SCAN_CHUNK_BYTES // es)
        for lo in range(start, stop, step):
            hi = min(stop, lo + step)
            if self._mm is not None:
                raw = np.frombuffer(self._mm, dtype=np.uint8, count=(hi - lo) * es, offset=lo * es)
            else:
                raw = np.frombuffer(self._read(lo * es, (hi - lo) * es), dtype=np.uint8)
            nz = np.flatnonzero(raw)
            if nz.size:
                return lo + int(nz[0]) // es
        return None

    @staticmethod
    def _describe_bad(mask: np.ndarray, first_index: int, what: str) -> str | None:
        bad = np.flatnonzero(mask)
        if not bad.size:
            return None
        return f"{bad.size} entries {what}, first at entry {first_index + int(bad[0])}"
