"""A log segment: one `.log` file of record batches plus its `.index` and `.timeindex` (docs/spec.md §2).

Invariants kept here:
- Batches are appended back to back; `size` is the byte length of whole, valid batches.
- The offset index gets an entry (batch last offset, batch start) for a batch when more than
  `index.interval.bytes` were appended since the last entry (the first batch is never indexed, so
  every entry has a position > 0). The time index gets (largest timestamp so far, last offset of
  the first batch that reached it) at the same moment, if that timestamp is larger than the last
  entry's (Kafka 4.x's rule, docs/format.md "Time index").
- Sealed (docs/spec.md §2.5): both indexes trimmed (no preallocated tail), the time index ending
  with the seal entry (largest timestamp, its offset). Sealing writes the entry first and trims
  last, so trimmed files mean sealed; a crash in between is repaired by sealing again. A roll seals
  the segment it leaves (as Kafka does when a segment becomes inactive); its bytes are fsynced by
  the writer's next flush, or by the sidecar's seal.
"""
from __future__ import annotations

import mmap
import os
import stat
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seglog.errors import CorruptRecordError, ReadOnlyLogError
from seglog.indexer.writeback import WritebackKicker
from seglog.indexer.fsutil import open_in_root
from seglog.indexer.leader_epochs import max_leader_epoch
from seglog.indexer.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX
from seglog.indexer.indexes.offset_index import OffsetIndex
from seglog.indexer.codec.kernels import native_kernels
from seglog.indexer.codec.records import BATCH_HEADER_SIZE, INT32_MAX, NO_TIMESTAMP, parse_header, scan_batches, walk_batches
from seglog.indexer.indexes.time_index import TimeIndex

_TIME_ENTRY = struct.Struct(">qi")
_OFFSET_ENTRY = struct.Struct(">ii")
READ_CHUNK = 4 << 20
_SMALL_UNINDEXED = 64 << 10   # sealed_summary reads the headers of a segment without a time index entry up to this   # bytes read at a time when scanning or decoding
HEADER_WINDOW = 16 << 10   # bytes read at a time when walking batch headers only
FIRST_CHUNK = 64 << 10  # the first read after a seek
_BULK_INDEX_MIN = 8     # batches from which the compiled index plan beats the rule batch by batch
_DAMAGE_SETTLE_WAITS = (0, 0.005, 0.02, 0.04)   # seconds between re-reads before a reader calls a fault damage


@dataclass(frozen=True)
class SegmentInfo:
    base_offset: int
    next_offset: int
    size_bytes: int
    largest_timestamp: int        # of its records (-1: none)
    retention_timestamp: int      # largest timestamp, or the file's mtime where there is none
    state: str                    # active | inactive | sealed
    log_path: Path
    mtime_ms: int


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class SealedSummary:
    size: int
    largest_timestamp: int
    mtime_ms: int


def sealed_summary(dir_path, base_offset: int, next_base: int) -> SealedSummary | None:
    """A sealed segment's facts from its files alone (docs/spec.md §2.5), without opening it: both
    indexes trimmed to whole entries, the last time index entry (the seal entry: the largest
    timestamp) inside the segment. Stats and two small reads. None when that does not hold (not
    sealed, a seglog 0.2 time index, a file cut under us), so the caller opens the segment."""
    stem = os.path.join(dir_path, f"{base_offset:020d}")
    try:
        ist = os.lstat(stem + INDEX_SUFFIX)
        isize = ist.st_size
        tst = os.lstat(stem + TIME_INDEX_SUFFIX)
        lst = os.lstat(stem + LOG_SUFFIX)
        if any(stat.S_ISLNK(st.st_mode) for st in (ist, tst, lst)):
            return None   # a symbolic link: the caller's open refuses it (fsutil.open_in_root)
        if isize % 8 or tst.st_size % 12 or lst.st_size == 0:
            # An empty .log under a sealed segment's indexes lost its records (power loss): not
            # trusted, so recovery and readers look at it and report it.
            return None
        largest = NO_TIMESTAMP
        # A writer may trim or cut a file between the stat and the read (readers take no lock):
        # a short read means "not known sealed now", never an error.
        if not tst.st_size:
            # No seal entry: sealed only if no record has a timestamp. A segment whose batches carry
            # timestamps under an empty, trimmed time index (left so by a truncation back into it and a
            # roll) answered "largest -1" here, and a lookup skipped it (tests/system/test_reader_race.py).
            # Such a segment is small (no index entry yet: below index.interval.bytes) or has no
            # timestamps at all; its headers are read here, a large one is left to the caller.
            if lst.st_size > _SMALL_UNINDEXED:
                return None
            with open(stem + LOG_SUFFIX, "rb", buffering=0) as fh:
                data = os.pread(fh.fileno(), lst.st_size, 0)
            headers = scan_batches(data, 0, check_crc=False)
            if headers.error or headers.valid_end != lst.st_size or (headers.max_timestamps >= 0).any():
                return None
        if tst.st_size:
            with open(stem + TIME_INDEX_SUFFIX, "rb", buffering=0) as fh:
                raw = os.pread(fh.fileno(), 12, tst.st_size - 12)
            if len(raw) < 12:
                return None
            largest, rel = _TIME_ENTRY.unpack(raw)
            if raw == bytes(12) and tst.st_size > 12:
                return None  # a zero tail: preallocated, not trimmed
            if not 0 <= rel < next_base - base_offset:
                return None  # a seglog 0.2 seal entry (the next segment's base): rebuilt by recovery
        if isize:
            with open(stem + INDEX_SUFFIX, "rb", buffering=0) as fh:
                raw = os.pread(fh.fileno(), 8, isize - 8)
            if len(raw) < 8:
                return None
            _, pos = _OFFSET_ENTRY.unpack(raw)
            if pos == 0:
                return None  # a zero tail: preallocated, not trimmed
    except FileNotFoundError:
        return None
    return SealedSummary(lst.st_size, largest, int(lst.st_mtime * 1000))


class LogSegment:
    """One segment. Writable segments are only touched by the partition's lock holder."""

    def __init__(self, dir_path: Path, base_offset: int, config, *, writable: bool, active: bool,
                 create: bool = False, file_suffix: str = "", max_epoch: int | None = None):
        self.dir = dir_path
        # 0 unless a Kafka broker wrote the folder; `max_epoch`: the caller knows it for the folder
        # (SegmentList asks once: a stat of a missing file per segment opened cost a cold lookup ~50 us
        # in a folder of 100,000 segments).
        self.max_leader_epoch = max_leader_epoch(dir_path) if max_epoch is None else max_epoch
        self.base_offset = base_offset
        self.config = config
        self.writable = writable
        # Plain strings here: opening a segment is on the lookup path, and pathlib is slow.
        stem = os.path.join(dir_path, f"{base_offset:020d}")
        # `file_suffix` (".cleaned"): the cleaner's segment being written, Kafka's names (docs/spec.md §3.9).
        self._log_name = stem + LOG_SUFFIX + file_suffix
        self._file_suffix = file_suffix
        if create:
            # The index files are created first and the .log last: a segment exists when its .log
            # does, so a reader that lists it never finds its indexes missing; a crash in between
            # leaves index files without a .log, which recovery sets aside.
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                os.close(open_in_root(stem + suffix + file_suffix, os.O_RDWR | os.O_CREAT, 0o644))
            fd = open_in_root(self._log_name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            os.close(fd)
        # Never through a symlink; a writable open never shares its inode with another name (fsutil).
        self._fd = open_in_root(self._log_name, os.O_RDWR if writable else os.O_RDONLY)
        # A clean's or merge's output: its writeback started as it is written (indexer/writeback.py).
        self._writeback = WritebackKicker(self._fd) if file_suffix and writable else None
        st = os.fstat(self._fd)
        self.size = st.st_size
        index_bytes = config["segment.index.bytes"]
        # The active segment's indexes are preallocated; any other is taken as found (an
        # inactive one keeps its zero tail until sealed, a sealed one is trimmed).
        prealloc = True if (writable and active) else None
        # A reader takes the indexes of an empty .log as empty when they are missing: the state a roll
        # passes through (Kafka creates a new segment's indexes lazily, a crash may stop there), with
        # nothing to index. A non-empty .log without its index is reported (segment_list).
        empty = not writable and self.size == 0
        self.offset_index = OffsetIndex(stem + INDEX_SUFFIX + file_suffix, base_offset, index_bytes,
                                        writable=writable, preallocate=prealloc, absent_is_empty=empty)
        self.time_index = TimeIndex(stem + TIME_INDEX_SUFFIX + file_suffix, base_offset, index_bytes,
                                    writable=writable, preallocate=prealloc, absent_is_empty=empty)
        # Offsets dense from batch to batch (each base = the previous last + 1), checked on every
        # walk; False for a partition compaction may have left gaps in (indexer/compaction/cleaner_checkpoint.py).
        self.dense = True
        self.next_offset = base_offset        # set by load_state / appends
        self.max_timestamp = NO_TIMESTAMP      # largest record timestamp (KIP-33 "max timestamp so far")
        self.offset_of_max_timestamp = base_offset - 1  # last offset of the first batch holding it
        # True once max_timestamp covers every batch (a new segment, or after load_state); a
        # segment opened without load_state computes it from its files on demand.
        self._max_known = create
        self.first_timestamp = NO_TIMESTAMP    # first record timestamp: the segment.ms rolling base
        self.bytes_since_index_entry = 0
        self.created_ms = now_ms() if create else int(st.st_mtime * 1000)

    @property
    def log_path(self) -> Path:
        return Path(self._log_name)

    @property
    def index_path(self) -> Path:
        return self.offset_index.path

    @property
    def time_index_path(self) -> Path:
        return self.time_index.path

    # ------------------------------------------------------------------ state
    def load_state(self, *, tolerate_torn_tail: bool = False) -> None:
        """Reload next offset, largest and first timestamps from the indexes plus a scan of the
        tail (KIP-33, broker start-up). A writer's log was recovered first; a reader tolerates a
        tail that a concurrent writer is still writing.

        The scan starts at the last offset index entry's batch (`_time_index_covered`): the
        largest timestamp is the last time index entry's or a later batch's. So an open reads a
        few batch headers however far back that entry lies (timestamps that stopped growing)."""
        last = self.offset_index.last_entry()
        if last is not None and last[1] >= self.size and tolerate_torn_tail:
            # A reader beside a truncation: `finish_truncation` cuts the .log before the indexes, so
            # the last entry may name a batch that is gone. What the file holds decides (a writer's
            # open recovers instead).
            last = None
        entry = self._time_index_covered() if last is not None else None
        tail = self.scan(last[1] if last else 0, self.size, check_crc=False)
        if tail.error:
            # A reader tolerates what a writer can leave: a tail still being written (a prefix of a
            # batch: a header cut short, or a batch running past the end), zeroed by a crash, or caught
            # mid-change (a roll back cutting and rewriting the tail between two reads of the walk). A
            # fault that is none of these and stays the same over a few re-reads is damage: reported,
            # never read as the end of the log (that would return fewer rows without a word).
            if not tolerate_torn_tail or self._damaged_at(last[1] if last else 0, tail):
                raise CorruptRecordError(f"{self.log_path}: {tail.error}")
            if last is not None and not len(tail.positions):
                # The batch the last index entry names is torn: the entry's offset is not this reader's
                # end (a log end past what the file holds would read as fewer rows than it says). The
                # file decides, as when the .log was cut below the entry.
                last, entry = None, None
                tail = self.scan(0, self.size, check_crc=False)
            self.size = tail.valid_end
        n = len(tail.positions)
        self.next_offset = int(tail.last_offsets[-1]) + 1 if n else (last[0] + 1 if last else self.base_offset)
        self.max_timestamp, self.offset_of_max_timestamp = largest_with_offset(entry, tail, self.base_offset)
        self._max_known = True
        if self.size > 0:
            head = self.pread(0, BATCH_HEADER_SIZE)
            if len(head) < BATCH_HEADER_SIZE and tolerate_torn_tail:
                # A writer cut this file after the scan above (a truncation): a reader sees the
                # segment as it is now, empty.
                self.size, self.next_offset, self.max_timestamp = 0, self.base_offset, NO_TIMESTAMP
            else:
                try:
                    first = parse_header(head, 0)
                except CorruptRecordError as exc:
                    raise CorruptRecordError(f"{self.log_path}: {exc}") from None   # named with its file
                self.first_timestamp = first.base_timestamp if first.base_timestamp >= 0 else first.max_timestamp
        # Bytes appended since the batch the last index entry points at ended.
        at = int(np.searchsorted(tail.positions, last[1])) if (last and n) else n
        if last and at + 1 < n:
            self.bytes_since_index_entry = self.size - int(tail.positions[at + 1])
        elif last and n:
            self.bytes_since_index_entry = 0
        else:
            self.bytes_since_index_entry = self.size

    def _damaged_at(self, start: int, tail) -> bool:
        """Whether the fault a header walk from `start` met is damage rather than a tail in flight: not
        what a writer leaves there (`_may_be_torn_at`), and the same fault at the same place on every
        re-read over ~60 ms (a writer's roll back settles within a few milliseconds)."""
        for wait in _DAMAGE_SETTLE_WAITS:
            if self._may_be_torn_at(tail.valid_end):
                return False
            if wait:
                time.sleep(wait)
                again = self.scan(start, self.size, check_crc=False)
                if (again.valid_end, again.error) != (tail.valid_end, tail.error):
                    return False
        return True

    def _may_be_torn_at(self, pos: int) -> bool:
        """Whether the bytes from `pos` to the end of the file can be a tail a writer leaves: fewer than
        a header, a header whose batch runs past the end (an append in flight), or nothing but zeros
        (a crash before the data reached the disk)."""
        size = self.file_size()
        head = self.pread(pos, BATCH_HEADER_SIZE)
        if len(head) < BATCH_HEADER_SIZE:
            return True
        try:
            if pos + parse_header(head, 0).size > size:
                return True
        except CorruptRecordError:
            pass
        while pos < size:
            chunk = self.pread(pos, min(READ_CHUNK, size - pos))
            if not chunk or chunk.count(0) != len(chunk):
                return not chunk
            pos += len(chunk)
        return True

    # ------------------------------------------------------------------ io
    def pread(self, position: int, length: int) -> bytes:
        return os.pread(self._fd, length, position)

    def scan(self, start: int, end: int, *, check_crc: bool, strict: bool = False):
        """Batch headers of [start, end), read in chunks so memory stays bounded. `strict` (from
        the segment's start only) also requires dense offsets from the base and leader epochs in
        bounds (indexer.leader_epochs), which catches flipped bytes in the header fields the CRC
        does not cover."""
        extra = {"prev_last_offset": self.base_offset - 1, "dense": self.dense, "min_leader_epoch": 0,
                 "max_leader_epoch": self.max_leader_epoch} if strict and start == 0 else {}
        if not check_crc:
            # Headers only: O(batches), not O(bytes). The range after the last time index entry can
            # be most of the segment (timestamps that stop growing, as in a backfill), and every
            # open of the log scans it (load_state).
            end = min(end, self.file_size())   # as a chunked read of a shorter file would see it
            return walk_batches(_HeaderWindow(self, end), start, end, **extra)
        if end - start <= READ_CHUNK:
            buf = self.pread(start, end - start)
            return scan_batches(buf, start, origin=start, **extra)
        return _scan_chunked(self, start, end, extra)

    def append(self, enc, first: int, last: int) -> None:
        """Append batches first..last-1 of an EncodedBatches, growing both indexes."""
        if not self.writable:
            raise ReadOnlyLogError(f"{self.log_path} is open read-only")
        # Index space first (reserved only to append, indexer/indexes/mmap_index.py): a full filesystem
        # refuses the append here, before any byte of it is written.
        self.offset_index.reserve()
        self.time_index.reserve()
        start, end = int(enc.positions[first]), int(enc.positions[last])
        data = memoryview(enc.data)[start:end]
        written = 0
        while written < len(data):  # os.pwrite may write less than asked
            written += os.pwrite(self._fd, data[written:], self.size + written)
        positions = np.asarray(enc.positions[first:last + 1], dtype=np.int64)
        self.index_batches(enc.last_offsets[first:last], positions[:-1] + (self.size - start), np.diff(positions),
                           enc.first_timestamps[first:last], enc.max_timestamps[first:last])
        self.size += end - start
        self.next_offset = int(enc.last_offsets[last - 1]) + 1
        if self._writeback is not None:
            self._writeback.written(self.size)

    def index_batch(self, last_offset: int, position: int, size: int, first_ts: int, max_ts: int) -> None:
        """The index rule for one appended batch (Kafka's): an offset index entry (its last
        offset, its start) once more than index.interval.bytes were appended since the last entry,
        and with it a time index entry (largest timestamp so far, the last offset of the first
        batch that reached it) if that timestamp grew. Appends and index rebuilds both go through here, so they index alike."""
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.offset_of_max_timestamp = last_offset
        if self.first_timestamp < 0 and first_ts >= 0:
            self.first_timestamp = first_ts
        if self.bytes_since_index_entry > self.config["index.interval.bytes"]:
            self.offset_index.append(last_offset, position)
            if self.max_timestamp >= 0:
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index_entry = 0
        self.bytes_since_index_entry += size

    def index_batches(self, last_offsets, positions, sizes, first_timestamps, max_timestamps) -> None:
        """`index_batch` for each of many batches in order, with the same result: a compiled plan of the
        rule (indexer/codec/native.py `index_plan`) and the entries stored at once (time index first, so
        that the last time index entry always covers the batches up to the last offset index entry's,
        the invariant `_time_index_covered` reads by); batch by batch where numba is unavailable."""
        kernels = native_kernels()
        if kernels is None or len(sizes) < _BULK_INDEX_MIN:
            for i in range(len(sizes)):   # per batch, never per record
                self.index_batch(int(last_offsets[i]), int(positions[i]), int(sizes[i]),
                                 int(first_timestamps[i]), int(max_timestamps[i]))
            return
        if self.first_timestamp < 0:
            stamped = np.flatnonzero(np.asarray(first_timestamps) >= 0)
            if stamped.size:
                self.first_timestamp = int(first_timestamps[stamped[0]])
        last_offsets = np.asarray(last_offsets, dtype=np.int64)
        picked, t_ts, t_off, self.bytes_since_index_entry, self.max_timestamp, self.offset_of_max_timestamp = \
            kernels.index_plan(last_offsets, sizes, max_timestamps, self.config["index.interval.bytes"],
                               self.bytes_since_index_entry, self.max_timestamp, self.offset_of_max_timestamp,
                               self.time_index.max_timestamp(), self.base_offset)
        self.bytes_since_index_entry, self.max_timestamp, self.offset_of_max_timestamp = (
            int(self.bytes_since_index_entry), int(self.max_timestamp), int(self.offset_of_max_timestamp))
        self.time_index.append_entries(t_ts, t_off)
        self.offset_index.append_entries(last_offsets[picked], np.asarray(positions, dtype=np.int64)[picked])

    def index_scanned(self, scan) -> None:
        """Both indexes of the batches a scan of this segment found (`scan_batches` from position 0),
        through `index_batches`, the segment's first timestamp from its first batch: how recovery
        rebuilds a segment's indexes and how a merge builds the merged one's."""
        if not len(scan.positions):
            return
        first = parse_header(self.pread(0, BATCH_HEADER_SIZE), 0)
        first_ts = np.full(len(scan.positions), -1, dtype=np.int64)
        first_ts[0] = first.base_timestamp if first.base_timestamp >= 0 else first.max_timestamp
        self.index_batches(scan.last_offsets, scan.positions, scan.sizes, first_ts, scan.max_timestamps)

    # ------------------------------------------------------------------ the roll rule
    def fits(self, batch_bytes: int, last_offset: int, max_timestamp: int, now: int) -> bool:
        """Kafka's roll rule for the next batch (docs/spec.md §3.2). An empty segment takes anything."""
        return not self._rolls(self.size, self.first_timestamp, batch_bytes, last_offset, max_timestamp, now,
                               self._entries_room())

    def batches_that_fit(self, enc, i: int, now: int) -> int:
        """The end j of the longest run of `enc`'s batches i..j-1 this segment takes without rolling
        (batch i fits: the caller checked `fits`). The same rule as `fits`, per batch, against the
        segment as it would be after the batches before."""
        size = self.size + int(enc.positions[i + 1] - enc.positions[i])
        first_ts = self.first_timestamp if self.size else int(enc.first_timestamps[i])
        room = self._entries_room()
        j = i + 1
        while j < enc.num_batches:
            b = int(enc.positions[j + 1] - enc.positions[j])
            if self._rolls(size, first_ts, b, int(enc.last_offsets[j]), int(enc.max_timestamps[j]), now,
                           room - (j - i)):
                break
            size += b
            j += 1
        return j

    def time_to_roll(self, max_timestamp: int, now: int) -> bool:
        """KIP-33: the batch's timestamp exceeds the segment's first timestamp by segment.ms; for a
        segment whose records carry no timestamp, its age since creation does. The sidecar's idle
        roll asks with max_timestamp = now."""
        return self.size > 0 and self._late(self.first_timestamp, max_timestamp, now)

    def _entries_room(self) -> int:
        """Batches this segment can still index (each may add one entry to both indexes), keeping
        the time index's last slot for the seal entry (TimeIndex.is_full)."""
        return min(self.offset_index.max_entries - self.offset_index.entries,
                   self.time_index.max_entries - self.time_index.entries - 1)

    def _rolls(self, size: int, first_ts: int, batch_bytes: int, last_offset: int, max_timestamp: int,
               now: int, entries_room: int) -> bool:
        """The one roll rule: would a batch roll a segment of `size` bytes whose first timestamp is
        `first_ts`? segment.bytes, a full index, an offset beyond int32 of the base, segment.ms."""
        if size == 0:
            return False
        if size + batch_bytes > self.config["segment.bytes"] or entries_room <= 0:
            return True
        if last_offset - self.base_offset > INT32_MAX:
            return True
        return self._late(first_ts, max_timestamp, now)

    def idle_roll_due_ms(self) -> int | None:
        """From when the sidecar's idle roll (`time_to_roll(now, now)`) holds if nothing is appended:
        None for an empty segment (never rolled). The same rule as `_late`."""
        if self.size == 0:
            return None
        start = self.first_timestamp if self.first_timestamp >= 0 else self.created_ms
        return start + self.config["segment.ms"] + 1

    def _late(self, first_ts: int, max_timestamp: int, now: int) -> bool:
        segment_ms = self.config["segment.ms"]
        if first_ts >= 0:
            # A batch without timestamps does not roll a segment that has them (as Kafka).
            return max_timestamp >= 0 and max_timestamp - first_ts > segment_ms
        return now - self.created_ms > segment_ms

    def flush(self) -> None:
        """fsync the .log. The indexes are not fsynced here: recovery checks them against the log
        and rebuilds what a crash lost, so only the records need to be durable (sealing fsyncs the
        indexes, because a sealed segment is trusted without a check)."""
        if self.writable:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            self.offset_index.close()
            self.time_index.close()
            os.close(self._fd)
            self._fd = None

    # ------------------------------------------------------------------ lookups
    def position_of(self, offset: int) -> tuple[int, object | None, int]:
        """(start of the batch holding `offset`, its header, the last offset before that batch),
        or (its end, None, ...) past the end. Index floor, then a forward walk of batch headers
        (docs/spec.md §3.4) that checks each step: the floor batch ends at the entry's offset (or, at
        position 0, starts at the base) and offsets are dense from there. A flipped byte in a
        header field the CRC does not cover (base offset, length) is caught here, never read as
        other offsets."""
        key, pos = self.offset_index.lookup(offset)
        prev_last = self.base_offset - 1 if pos == 0 else None
        while pos < self.size:
            raw = self.pread(pos, BATCH_HEADER_SIZE)
            if len(raw) < BATCH_HEADER_SIZE:
                break   # short of this reader's size: a writer truncated the file since the open (as read_checked)
            header = parse_header(raw, 0)
            if prev_last is None:
                if header.last_offset != key:
                    raise CorruptRecordError(
                        f"{self.log_path}: the batch at position {pos} ends at offset {header.last_offset}, "
                        f"but the offset index says {key}")
                prev_last = header.base_offset - 1
            elif header.base_offset != prev_last + 1 and (self.dense or header.base_offset <= prev_last):
                raise CorruptRecordError(
                    f"{self.log_path}: the batch at position {pos} starts at offset {header.base_offset}, "
                    f"expected {prev_last + 1}" + ("" if self.dense else " or above"))
            if header.last_offset >= offset:
                return pos, header, prev_last
            prev_last = header.last_offset
            pos += header.size
        return min(pos, self.size), None, prev_last if prev_last is not None else self.base_offset - 1

    def largest_timestamp(self) -> int:
        """Largest record timestamp: the last time index entry plus the batches after it."""
        return self.max_timestamp_and_offset()[0]

    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """(largest record timestamp, last offset of the first batch holding it); the timestamp is
        -1 when no record has one. A sealed segment answers from its seal entry."""
        if self._max_known:
            return self.max_timestamp, self.offset_of_max_timestamp
        entry = self.time_index.last_entry()
        if entry is not None and self.indexes_trimmed():
            return entry   # trimmed: the seal entry is last (written before the trim)
        last = self.offset_index.last_entry()
        return largest_with_offset(self._time_index_covered(), self.scan(last[1] if last else 0, self.size,
                                                                         check_crc=False), self.base_offset)

    def _time_index_covered(self) -> tuple[int, int] | None:
        """(largest timestamp, its offset) of every batch up to the last offset index entry's, from
        the time index alone; None when those batches hold no timestamp.

        Invariant (index_batch, truncate_indexes): an offset index entry is written together with
        a time index entry for the largest timestamp so far if it grew, and a truncation keeps
        exactly the time index entries written with a kept offset index entry. So the last time
        index entry covers the batches up to the last offset index entry's, and a walk for the
        largest timestamp starts there. One entry is never written to a preallocated file, (0, base)
        (docs/format.md "Time index"): an empty time index whose first batch is that entry's holds it."""
        entry = self.time_index.last_entry()
        if entry is None and self.offset_index.last_entry() is not None:
            head = self.pread(0, BATCH_HEADER_SIZE)   # short only if a writer cut the file meanwhile
            if len(head) == BATCH_HEADER_SIZE:
                first = parse_header(head, 0)
                if first.max_timestamp == 0 and first.last_offset == self.base_offset:
                    entry = (0, self.base_offset)
        return entry

    @property
    def closed(self) -> bool:
        return self._fd is None

    def file_size(self) -> int:
        return os.fstat(self._fd).st_size

    def mtime_ms(self) -> int:
        return int(os.fstat(self._fd).st_mtime * 1000)

    def indexes_trimmed(self) -> bool:
        """Both indexes hold exactly their entries: the last step of sealing (see the module doc)."""
        return self.offset_index.is_trimmed and self.time_index.is_trimmed

    def is_sealed(self, next_base: int) -> bool:
        """Sealed (docs/spec.md §2.5), by the one rule: `sealed_summary` of its files."""
        if self._file_suffix:
            return False     # the cleaner's segment being written: sealed once, by the cleaner
        return sealed_summary(self.dir, self.base_offset, next_base) is not None

    def seal(self, next_base: int, *, durable: bool = True) -> bool:
        """Write the seal entry (largest timestamp, its offset), trim both indexes; with `durable`,
        fsync the .log and the indexes first (the sidecar's seal; a roll passes False and leaves the
        fsyncs to the writer's next flush). Idempotent; True if it changed anything."""
        if self.writable and self._max_known:
            # The writer knows the largest timestamp: it decides. The files alone could say "sealed"
            # of a cleanly closed active segment (trimmed by the close, not preallocated again until
            # an append needs the room) that lacks its seal entry.
            last = self.time_index.last_entry()
            if self.indexes_trimmed() and (self.max_timestamp < 0 or (last is not None and last[0] == self.max_timestamp)):
                return False
        elif self.is_sealed(next_base):
            return False
        max_ts, offset_of_max = self.max_timestamp_and_offset()
        if max_ts >= 0:
            self.time_index.seal_entry(max_ts, offset_of_max)
        if durable:
            os.fsync(self._fd)
        # Trimming is last: a segment is decidably sealed only once both files are trimmed; a
        # crash before that leaves it unsealed, and sealing again repairs it.
        self.time_index.trim(fsync=durable)
        self.offset_index.trim(fsync=durable)
        return True

    def truncate_log(self, size: int) -> None:
        """Cut the .log to `size` bytes through this segment's own descriptor (opened by fsutil.open_in_root:
        no symlink followed, no hard link shared), never by its path."""
        os.ftruncate(self._fd, size)
        self.size = size

    def truncate_indexes(self, offset: int) -> None:
        """Drop the index entries of records at or after `offset`. The offset index keeps keys below
        it; the time index keeps the entries written together with a kept offset index entry (an
        entry (T, O) is written with the first offset index entry whose key is >= O, so: O at most
        the last kept key). Entries an append wrote are then exactly gone when a truncation takes
        that append back, even an entry naming an older batch (docs/format.md "Time index")."""
        self.offset_index.truncate_to(offset)
        last = self.offset_index.last_entry()
        self.time_index.truncate_to(min(offset, last[0] + 1) if last else self.base_offset)

    def flush_indexes(self) -> None:
        """msync and fsync both indexes (a rolled segment's, with its .log, at the writer's flush)."""
        self.offset_index.flush()
        self.time_index.flush()


def read_checked(seg: "LogSegment", pos: int, prev_last: int, until: int | None = None):
    """(file position, bytes, scan) for chunks of whole batches from `pos` to the segment's end,
    every batch checked once (CRC, leader epochs, offsets dense from `prev_last`). A chunk boundary
    that cuts a batch is not a fault: the next chunk starts at that batch. Anything else that fails
    a check raises CorruptRecordError: a read never returns what it cannot vouch for.

    `until` is the reader's bound (exclusive offset: the committed end, the end it asked for). Bytes
    past it are never judged: once the checked batches reach it, what follows (a writer's append in
    flight, a tail being cut back) ends the read instead of failing it (docs/spec.md §4)."""
    end = seg.size
    chunk = FIRST_CHUNK
    epochs = {"min_leader_epoch": 0, "max_leader_epoch": seg.max_leader_epoch}
    while pos < end:
        want = min(chunk, end - pos)
        buf = seg.pread(pos, want)
        if len(buf) < want:
            # The file is shorter than this reader's view of it: a writer truncated it since the
            # reader opened the log (readers take no lock). The read ends where the file now ends,
            # never loops on an empty read (docs/reliability.md).
            end = pos + len(buf)
            if not buf:
                return
        chunk = min(chunk * 2, READ_CHUNK)
        scan = scan_batches(buf, 0, len(buf), check_crc=True, prev_last_offset=prev_last, dense=seg.dense, **epochs)
        good = scan.valid_end
        if good < len(buf):
            # Where the walk stopped: a batch the chunk cut short (read on), or a fault.
            rest = len(buf) - good
            cut = False
            if pos + len(buf) < end:
                if rest < BATCH_HEADER_SIZE:
                    cut = True
                else:
                    try:
                        size = parse_header(buf, good).size
                    except CorruptRecordError:
                        size = 0
                    cut = size > rest and pos + good + size <= end and scan.error is not None \
                        and "past the end" in scan.error
            if not cut:
                # The batches before the fault first: a consumer that has what it needs (a read that
                # reached its end, a lookup that found its answer) never asks on, and is never failed
                # by bytes past them (a tail a writer is appending or cutting back).
                reached = scan.headers[-1].last_offset if len(scan.positions) else prev_last
                if good:
                    yield pos, memoryview(buf)[:good], scan
                if until is not None and reached >= until - 1:
                    return
                raise CorruptRecordError(f"{seg.log_path}: {_fault(seg, buf, pos, prev_last, epochs)}")
            if good == 0:  # one batch larger than the chunk: read it whole
                size = parse_header(buf, 0).size
                buf = seg.pread(pos, size)
                scan = scan_batches(buf, 0, len(buf), check_crc=True, prev_last_offset=prev_last, dense=seg.dense,
                                    **epochs)
                if scan.error or scan.valid_end != size:
                    raise CorruptRecordError(f"{seg.log_path}: {_fault(seg, buf, pos, prev_last, epochs)}")
                good = size
        if len(scan.positions):
            prev_last = scan.headers[-1].last_offset
            epochs["min_leader_epoch"] = scan.headers[-1].partition_leader_epoch
        yield pos, (buf if good == len(buf) else memoryview(buf)[:good]), scan
        pos += good


def _fault(seg: "LogSegment", buf, pos: int, prev_last: int, epochs: dict) -> str:
    """What read_checked's failed check found, with file positions (its chunks are scanned in chunk
    positions, the yielded buffers' own): a second scan, on the failure path only."""
    scan = scan_batches(buf, pos, check_crc=True, prev_last_offset=prev_last, dense=seg.dense, origin=pos, **epochs)
    return scan.error or f"no whole batch at file position {pos}"


def largest_with_offset(entry, tail, base_offset: int) -> tuple[int, int]:
    """(largest timestamp, last offset of the first batch holding it) from the time index's cover
    (`LogSegment._time_index_covered`) and a scan of the batches from the last offset index entry's
    on (a scanned batch counts only with a strictly larger timestamp: the entry names the first batch
    that reached its own)."""
    max_ts, offset = entry if entry is not None else (NO_TIMESTAMP, base_offset - 1)
    if len(tail.positions):
        maxes = tail.max_timestamps
        i = int(np.argmax(maxes))   # the first batch holding the tail's largest
        if int(maxes[i]) > max_ts:
            max_ts, offset = int(maxes[i]), int(tail.last_offsets[i])
    return max_ts, offset


class _HeaderWindow:
    """`walk_batches`' header reader over a segment's file: HEADER_WINDOW bytes per read, so small
    batches share a read and a large batch's body is never read."""

    def __init__(self, segment: LogSegment, end: int):
        self._segment, self._end = segment, end
        self._buf, self._at = b"", 0

    def __call__(self, pos: int):
        if not (self._at <= pos and pos + BATCH_HEADER_SIZE <= self._at + len(self._buf)):
            self._buf, self._at = self._segment.pread(pos, min(HEADER_WINDOW, self._end - pos)), pos
            if len(self._buf) < BATCH_HEADER_SIZE:
                return None
        return self._buf, pos - self._at


def _scan_chunked(segment: LogSegment, start: int, end: int, extra: dict):
    """scan_batches with CRCs over a long range, chunk by chunk, merged into one ScanResult. A chunk's end
    cutting a batch is not an error: the next chunk starts at that batch. Each chunk is walked first
    (headers, the compiled walk), then its CRCs checked in one compiled loop (records.crcs_match); a
    chunk that fails is walked again with its CRCs, which names the fault."""
    from seglog.indexer.codec.records import crcs_match

    with _ChunkSource(segment, start, end) as source:
        parts = []
        pos, error, end = start, None, source.end
        while pos < end:
            buf = source.chunk(pos, min(READ_CHUNK, end - pos))
            if parts and extra:
                last = parts[-1].rows[-1]    # BatchHeader's order: base offset, ..., leader epoch 2, lastOffsetDelta 6
                extra = dict(extra, prev_last_offset=int(last[0] + last[6]), min_leader_epoch=int(last[2]))
            result = scan_batches(buf, pos, origin=pos, check_crc=False, **extra)
            if result.valid_end == pos and len(buf) >= BATCH_HEADER_SIZE:
                try:  # a single batch larger than the chunk
                    whole = parse_header(buf, 0).size
                except CorruptRecordError:
                    whole = 0
                if len(buf) < whole <= end - pos:
                    buf = source.chunk(pos, whole)
                    result = scan_batches(buf, pos, origin=pos, check_crc=False, **extra)
                elif whole > end - pos:
                    # Past the range's end: named against that end, as a whole read names it (not
                    # against this chunk's), with nothing more read.
                    head = buf
                    result = walk_batches(lambda at: (head, at - pos), pos, end, **extra)
            if result.valid_end == pos:
                error = result.error or f"no whole batch at position {pos}"
                break
            if not crcs_match(buf, result.positions - pos, result.rows, compiled=True):
                redo = scan_batches(bytes(buf), pos, origin=pos, **extra)   # with CRCs: stops at the bad batch, names it
                if redo.valid_end > pos:
                    parts.append(redo)
                error = redo.error or f"no whole batch at position {pos}"
                break
            parts.append(result)
            pos = result.valid_end
            del buf, result
    return _merge(parts, error, start)


class _ChunkSource:
    """The bytes of [start, end) of a segment's .log, a chunk at a time, for `_scan_chunked`.

    A writable segment (its partition's lock held) is mapped, read-only and populated at once: no copy,
    which made recovery's index rebuild of a large segment cost a read plus a copy plus the CRCs, about
    0.46x a raw read, where SPEC asks 0.5x (bench/storage.py "rebuild": ~0.7x mapped). Safe from SIGBUS
    because only the lock holder shrinks a .log in place (truncation, recovery's cut); a clean's swap or
    a deletion renames it, and the mapping keeps the old inode. A read-only segment, which a writer may
    truncate meanwhile, is read with pread into one reused buffer. Chunks are views, valid until the
    next `chunk`; ScanResults keep numbers (positions, header rows), never views."""

    def __init__(self, segment: LogSegment, start: int, end: int):
        self._segment = segment
        self._map = None
        self._view = None
        self.end = end
        if segment.writable:
            size = segment.file_size()
            if size > start:
                flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
                self._map = mmap.mmap(segment._fd, size, flags=flags, prot=mmap.PROT_READ)
                self._view = memoryview(self._map)   # a slice past its end is short, as a pread there
        self._buffer = None if self._map is not None else bytearray(min(READ_CHUNK, max(0, end - start)))

    def chunk(self, pos: int, length: int):
        if self._view is not None:
            return self._view[pos:pos + length]
        if length > len(self._buffer):           # one batch larger than a chunk
            return memoryview(self._segment.pread(pos, length))
        out = memoryview(self._buffer)
        return out[:os.preadv(self._segment._fd, [out[:length]], pos)]

    def __enter__(self) -> "_ChunkSource":
        return self

    def __exit__(self, *exc) -> None:
        if self._map is not None:
            try:
                self._view.release()
                self._map.close()
            except BufferError:     # a view still referenced somewhere (a traceback): the map goes with it
                pass


def _merge(parts, error, start):
    from seglog.indexer.codec.records import ScanResult

    if not parts:
        return ScanResult(np.zeros(0, dtype=np.int64), [], start, error)
    return ScanResult(np.concatenate([p.positions for p in parts]), None, parts[-1].valid_end, error,
                      rows=np.concatenate([p.rows for p in parts]))
