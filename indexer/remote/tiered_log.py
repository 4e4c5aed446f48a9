"""One log across both tiers for readers (docs/tiered-storage.md §6): the Python core's read path, used
by the CLI (`dump`, `offsets-for-times`, `describe`, `verify --remote`) and the Python API.

`TieredLog` opens the local tier read-only and reads the remote segment metadata log: the remote
segments below the local log start are read as if local, byte ranges through pyarrow.fs
(`RemoteSegmentReader`: the `.index` and `.timeindex` fetched once per reader, the `.log` read in
CRC-checked chunks from the position the offset index gives). Its log start is the remote tier's start.

Invariants kept here:
- A remote segment is read only while its state is `copied`; offsets below the log start are refused
  (OffsetOutOfRangeError), as a local read refuses them.
- Records are never returned fewer than the segment holds: a remote `.log` that ends short of its
  recorded last offset, or a damaged batch, is a CorruptRecordError naming the object.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from seglog.errors import ConfigError, CorruptRecordError, OffsetOutOfRangeError, SegmentDeletedError
from seglog.indexer.codec.records import (BATCH_HEADER_SIZE, CONTROL_FLAG_MASK, Record, decode_batch,
                                          first_offset_at_or_after, parse_header, scan_batches)
from seglog.indexer.names import partition_dir_name
from seglog.indexer.remote import metadata, owner
from seglog.indexer.remote.location import load_location
from seglog.indexer.remote.metadata import RemoteSegment
from seglog.indexer.remote.store import RemoteStore, segment_key
from seglog.indexer.transactions import (DEFAULT_ISOLATION_LEVEL, TransactionFates, check_isolation_level,
                                         control_type, visible_batches)

CHUNK = 1 << 20                  # bytes per ranged read of a remote .log
_OFFSET_ENTRY = np.dtype([("rel", ">i4"), ("pos", ">i4")])
_TIME_ENTRY = np.dtype([("ts", ">i8"), ("rel", ">i4")])


class RemoteSegmentReader:
    """Reads one tiered segment through the store: ranged reads of its `.log`, its indexes fetched once."""

    def __init__(self, store: RemoteStore, topic: str, partition: int, seg: RemoteSegment):
        self.store, self.seg = store, seg
        self.key = segment_key(topic, partition, seg.base, ".log")
        self._stem = segment_key(topic, partition, seg.base, "")
        self._offsets: np.ndarray | None = None
        self._times: np.ndarray | None = None

    def _fetch(self, suffix: str) -> bytes:
        try:
            return self.store.read(self._stem + suffix)
        except FileNotFoundError:
            raise SegmentDeletedError(f"{self.store.location.uri}/{self._stem}{suffix}: a tiered segment's object "
                                      f"is gone (remote retention beside this read?); open the log again") from None

    def offset_entries(self) -> np.ndarray:
        if self._offsets is None:
            raw = self._fetch(".index")
            self._offsets = np.frombuffer(raw[:len(raw) // 8 * 8], dtype=_OFFSET_ENTRY)
        return self._offsets

    def time_entries(self) -> np.ndarray:
        if self._times is None:
            raw = self._fetch(".timeindex")
            self._times = np.frombuffer(raw[:len(raw) // 12 * 12], dtype=_TIME_ENTRY)
        return self._times

    def position_of(self, offset: int) -> int:
        """The position of the batch the offset index names for `offset` (its last entry at or below
        it; entries key each indexed batch by its last offset), 0 when none is."""
        entries = self.offset_entries()
        i = int(np.searchsorted(entries["rel"].astype(np.int64) + self.seg.base, offset, side="right")) - 1
        return int(entries["pos"][i]) if i >= 0 else 0

    def chunks(self, pos: int, end: int) -> Iterator[tuple[bytes, object]]:
        """(buffer, scan of its whole, CRC-checked batches) from file position `pos` until a batch at or
        past offset `end`; checks the segment's records run to its recorded last offset."""
        size, last_seen = self.seg.size, None
        while pos < size:
            want = min(CHUNK, size - pos)
            try:
                buf = self.store.read(self.key, pos, want)
            except FileNotFoundError:
                self._fetch(".log")                     # raises SegmentDeletedError
            scan = scan_batches(buf, 0, check_crc=True)
            if not len(scan.positions) and len(buf) >= BATCH_HEADER_SIZE:
                whole = parse_header(buf, 0).size       # one batch larger than the chunk: read it whole
                if BATCH_HEADER_SIZE <= whole <= size - pos and whole > len(buf):
                    buf = self.store.read(self.key, pos, whole)
                    scan = scan_batches(buf, 0, check_crc=True)
            if not len(scan.positions):
                raise CorruptRecordError(f"{self.store.location.uri}/{self.key}: at position {pos}: "
                                         f"{scan.error or 'no whole batch'}")
            yield buf, scan
            last_seen = int(scan.last_offsets[-1])
            if last_seen >= end - 1:
                return
            pos += scan.valid_end
        if last_seen is None or last_seen < min(self.seg.last, end - 1):
            raise CorruptRecordError(f"{self.store.location.uri}/{self.key}: the tiered segment ends at offset "
                                     f"{last_seen} but its record says it holds offsets to {self.seg.last}: "
                                     f"those records are lost")

    def offset_for_timestamp(self, timestamp: int, lower: int) -> int | None:
        """The first offset >= `lower` whose record's timestamp is >= `timestamp`, in this segment."""
        if self.seg.max_ts < timestamp:
            return None
        times = self.time_entries()
        # Each time index entry (T, O): no record up to O has a timestamp above T; so the answer lies
        # after the last entry below `timestamp`.
        below = np.flatnonzero(times["ts"] < timestamp)
        start = max(lower, self.seg.base if not len(below) else self.seg.base + int(times["rel"][below[-1]]) + 1)
        for buf, scan in self.chunks(self.position_of(start), self.seg.next):
            for k, h in enumerate(scan.headers):
                if h.max_timestamp >= timestamp and h.last_offset >= start:
                    found = first_offset_at_or_after(buf, int(scan.positions[k]), h, timestamp, start)
                    if found is not None:
                        return found
        return None


@dataclass(frozen=True)
class TieredSegmentInfo:
    base_offset: int
    next_offset: int
    size_bytes: int
    largest_timestamp: int
    tier: str            # "remote", "local" or "both" (a tiered segment whose local copy is still there)
    state: str           # the local state (active, inactive, sealed), or "tiered"


class TieredLog:
    """A read-only view of one partition across both tiers; a context manager."""

    def __init__(self, root: str | os.PathLike, topic: str, partition: int, config=None, *,
                 store: RemoteStore | None = None):
        from seglog.indexer.log import Log

        self.root, self.topic, self.partition = Path(root), topic, partition
        self.local = Log.open(self.root / partition_dir_name(topic, partition), config, readonly=True)
        self.state = metadata.read_state(self.root, topic, partition)
        local_start = self.local.log_start_offset
        self.remote = [s for s in self.state.segments() if s.base < local_start]
        self.store = store
        if self.state.live and self.store is None:
            location = load_location(self.root)
            if location is None:
                raise ConfigError(f"{self.root}: the partition {topic}-{partition} has tiered segments but the root "
                                  f"records no remote tier (_seglog/remote.json)")
            self.store = RemoteStore(location)
        if self.state.live:
            owner.check(self.root, self.store)      # another root's objects are never read as this root's rows
        if self.remote and self.remote[-1].next < local_start:
            raise CorruptRecordError(f"{self.root}: {topic}-{partition}: the remote tier ends at offset "
                                     f"{self.remote[-1].next} and the local tier starts at {local_start}: offsets "
                                     f"between are on neither tier")
        self._readers: dict[int, RemoteSegmentReader] = {}

    def __enter__(self) -> "TieredLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.local.close()

    def reader(self, seg: RemoteSegment) -> RemoteSegmentReader:
        if seg.base not in self._readers:
            self._readers[seg.base] = RemoteSegmentReader(self.store, self.topic, self.partition, seg)
        return self._readers[seg.base]

    @property
    def log_start_offset(self) -> int:
        return self.remote[0].base if self.remote else self.local.log_start_offset

    @property
    def local_log_start_offset(self) -> int:
        return self.local.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.local.log_end_offset

    def _bounds(self, offset: int | None, max_offset: int | None) -> tuple[int, int]:
        start = self.log_start_offset if offset is None else offset
        if start < self.log_start_offset:
            raise OffsetOutOfRangeError(f"{self.local.path}: offset {start} is below the log start offset "
                                        f"{self.log_start_offset} (removed by retention)")
        end = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        return start, end

    def _remote_chunks(self, start: int, end: int):
        """(buffer, scan) of the remote segments' batches holding offsets [start, end) below the local start."""
        end = min(end, self.local.log_start_offset)
        for seg in self.remote:
            if seg.next <= start or seg.base >= end:
                continue
            reader = self.reader(seg)
            yield from reader.chunks(reader.position_of(max(start, seg.base)), min(end, seg.next))

    def _control_markers(self, from_offset: int):
        for buf, scan in self._remote_chunks(from_offset + 1, self.local.log_start_offset):
            for k in np.flatnonzero(scan.attributes & CONTROL_FLAG_MASK):
                h = scan.headers[int(k)]
                if h.base_offset > from_offset:
                    yield h.producer_id, h.base_offset, control_type(decode_batch(buf, int(scan.positions[k]), h))
        yield from self.local._control_markers(max(from_offset, self.local.log_start_offset - 1))

    def _visible_remote(self, start: int, mid: int, isolation_level: str):
        """(buffer, positions of the batches a reader at `isolation_level` sees, stopped) for each remote chunk of
        [start, mid), in order; `stopped`: an open transaction ends the read there (the last stable offset)."""
        fates: list[TransactionFates] = []

        def fates_for() -> TransactionFates:
            if not fates:
                fates.append(TransactionFates(self._control_markers))
            return fates[0]

        for buf, scan in self._remote_chunks(start, mid):
            keep, stop = visible_batches(scan.headers, scan.attributes, isolation_level, fates_for)
            yield buf, (scan.positions if keep is None else scan.positions[keep]), stop is not None
            if stop is not None:
                return

    def read(self, offset: int | None = None, max_offset: int | None = None, *,
             isolation_level: str = DEFAULT_ISOLATION_LEVEL) -> Iterator[Record]:
        """Records from `offset` (default: the log start, on the remote tier) up to `max_offset`
        (exclusive), as Log.read returns them."""
        check_isolation_level(isolation_level)
        start, end = self._bounds(offset, max_offset)
        mid = min(end, self.local.log_start_offset)
        for buf, positions, stopped in self._visible_remote(start, mid, isolation_level):
            for pos in positions:
                for rec in decode_batch(buf, int(pos)):
                    if rec.offset >= mid:
                        break
                    if rec.offset >= start:
                        yield rec
            if stopped:
                return
        if end > self.local.log_start_offset:
            yield from self.local.read(max(start, self.local.log_start_offset), end, isolation_level=isolation_level)

    def read_arrow(self, start_offset: int, end_offset: int | None = None, *, max_rows: int = 65536,
                   isolation_level: str = DEFAULT_ISOLATION_LEVEL):
        """Arrow record batches as Log.read_arrow gives them, across both tiers (the `seglog` Python source)."""
        from seglog.indexer.codec.columns import decode_to_arrow

        check_isolation_level(isolation_level)
        start, end = self._bounds(start_offset, end_offset)
        mid = min(end, self.local.log_start_offset)
        for buf, positions, stopped in self._visible_remote(start, mid, isolation_level):
            batch = decode_to_arrow(buf, positions, start_offset=start, end_offset=mid)
            for lo in range(0, batch.num_rows, max_rows):
                yield batch.slice(lo, max_rows)
            if stopped:
                return
        if end > self.local.log_start_offset:
            yield from self.local.read_arrow(max(start, self.local.log_start_offset), end, max_rows=max_rows,
                                             isolation_level=isolation_level)

    def require_committed_end(self, end: int) -> None:
        self.local.require_committed_end(end)

    def require_start_within_end(self) -> None:
        self.local.require_start_within_end()

    def byte_size(self, start: int, end: int) -> int:
        """An estimate of the log bytes in [start, end) (planning): a remote segment's share by offsets,
        the local tier's from its indexes."""
        local_start = self.local.log_start_offset
        total = 0
        for seg in self.remote:
            lo, hi = max(start, seg.base), min(end, seg.next, local_start)
            if lo < hi:
                total += seg.size * (hi - lo) // max(1, seg.next - seg.base)
        if end > local_start:
            total += self.local.byte_size(max(start, local_start), end)
        return total

    def split_offset(self, start: int, end: int, target_bytes: int) -> int | None:
        """Where a task from `start` may end (Log.split_offset's rule); below the local start, at remote
        segment boundaries only (each a batch's start)."""
        local_start = self.local.log_start_offset
        if start >= local_start:
            return self.local.split_offset(start, end, target_bytes)
        cuts = sorted({s.next for s in self.remote if start < s.next < end} | ({local_start} if start < local_start < end else set()))
        within = None
        for cut in cuts:
            if self.byte_size(start, cut) > target_bytes:
                return within if within is not None else cut
            within = cut
        return within

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """As Log.offset_for_timestamp, across both tiers: EARLIEST (-2) is the remote tier's start."""
        from seglog.indexer.log import EARLIEST, MAX_TIMESTAMP

        if timestamp == EARLIEST:
            return self.log_start_offset
        if timestamp == MAX_TIMESTAMP:          # KIP-734: the first record holding the largest timestamp
            largest = max([s.max_ts for s in self.remote] + [self.local.largest_timestamp])
            if largest < 0:
                return None
            timestamp = largest
        if timestamp >= 0:
            for seg in self.remote:
                found = self.reader(seg).offset_for_timestamp(timestamp, seg.base)
                if found is not None and found < self.local.log_start_offset:
                    return found
        return self.local.offset_for_timestamp(timestamp)

    def segments(self) -> list[TieredSegmentInfo]:
        """Every segment of the log, oldest first, with its tier.
        Invariant: one view, with no hole. The local listing is the open's; a local segment the tier pass
        deleted since (local retention, only once it is recorded copied) is still on the remote tier, so it is
        listed there, from the metadata log read again; a segment gone from both tiers is left out, with every
        older one (retention goes oldest first). Leaving such segments out made the soak
        see a log start below a range it no longer listed, and bytes missing from what the log holds."""
        local = self.local.segments()
        present = {info.base_offset for info in local}
        vanished = [b for b in self.local.segment_bases() if b not in present]
        remote = list(self.remote)
        if vanished:
            state = metadata.read_state(self.root, self.topic, self.partition)
            # retention deletes oldest first, so what the fresh state no longer holds is a prefix
            remote = [s for s in remote if s.base in state.live] + [state.live[b] for b in vanished if b in state.live]
        out = [TieredSegmentInfo(s.base, s.next, s.size, s.max_ts, "remote", "tiered") for s in remote]
        for info in local:
            tiered = self.state.live.get(info.base_offset)
            both = tiered is not None and tiered.next == info.next_offset
            out.append(TieredSegmentInfo(info.base_offset, info.next_offset, info.size_bytes, info.largest_timestamp,
                                         "both" if both else "local", info.state))
        return out

    def verify_remote(self) -> list[str]:
        """Every live tiered segment's objects against its record (sizes, SHA-256) and its manifest:
        the faults found, [] when none."""
        faults = []
        for seg in self.state.segments():
            for name, suffix in (("log", ".log"), ("index", ".index"), ("timeindex", ".timeindex")):
                key = segment_key(self.topic, self.partition, seg.base, suffix)
                got = self.store.hash(key)
                if got is None:
                    faults.append(f"{self.store.location.uri}/{key}: missing")
                elif got != seg.files[name]:
                    faults.append(f"{self.store.location.uri}/{key}: size {got['size']} sha256 {got['sha256'][:12]}... "
                                  f"but recorded size {seg.files[name]['size']} sha256 {seg.files[name]['sha256'][:12]}...")
            key = segment_key(self.topic, self.partition, seg.base, ".manifest.json")
            try:
                import json
                manifest = json.loads(self.store.read(key))
            except FileNotFoundError:
                faults.append(f"{self.store.location.uri}/{key}: missing")
                continue
            except ValueError as exc:
                faults.append(f"{self.store.location.uri}/{key}: not JSON: {exc}")
                continue
            if manifest != seg.manifest(self.topic, self.partition):
                faults.append(f"{self.store.location.uri}/{key}: differs from the segment's record")
        return faults
