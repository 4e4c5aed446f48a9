"""A partition log: the ordered segments of one folder <root>/<topic>-<partition> (docs/spec.md §2, 3, 6).

Invariants kept here:
- Segments are ordered by base offset; each segment's base is the next offset of the one before
  (offsets may have gaps after recovery or compaction, never go backwards).
- Only the last segment (the active one) takes appends; its indexes are preallocated.
- A writable Log holds the partition's lock from open to close (one writer per partition).
- A writable open makes a missing partition folder only under the topic's writer lock and the partition's
  lock, and only while the topic exists (indexer/partition_folder.py): never one for a deleted topic.
- A refused append changes nothing: every check runs before the first byte is written.
"""
from __future__ import annotations

import contextlib

import dataclasses
import errno
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from seglog.conf.topic_config import TopicConfig, validate_topic_config
from seglog.indexer import checkpoint, recovery, recovery_point, retention
from seglog.indexer.codec.columns import EncodedBatches, compress_encoded, decode_to_arrow, encode_columns
from seglog.indexer.codec.batch_layout import ATTRIBUTES_OFFSET, COMPRESSION_CODEC_MASK, PARTITION_LEADER_EPOCH_OFFSET
from seglog.indexer.codec.compression import expansion_headroom, topic_codec
from seglog.indexer.leader_epochs import checkpoint_max_epoch
from seglog.indexer.compaction.cleaner_checkpoint import may_have_gaps
from seglog.errors import (CommittedTopicError, CorruptRecordError, InvalidRecordError, LogClosedError, MissingKeyError,
                            OffsetOutOfRangeError, ReadOnlyLogError, RecordTooLargeError, SegmentDeletedError,
                            TimestampOutOfRangeError)
from seglog.indexer.fsutil import fsync_dir, refuse_symlink
from seglog.indexer.locks import check_lock_timeout
from seglog.indexer.partition_folder import lock_partition
from seglog.indexer.names import DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, log_bases, log_bases_and_swaps, parse_partition_dir
from seglog.indexer.codec.records import (CONTROL_FLAG_MASK, INT64_MAX, NO_TIMESTAMP, Record, decode_batch, scan_batches,
                                     first_offset_at_or_after)
from seglog.indexer.transactions import (DEFAULT_ISOLATION_LEVEL, TransactionFates, check_isolation_level,
                                         control_type, visible_batches)
from seglog.indexer.segment import LogSegment, SegmentInfo, now_ms, read_checked, sealed_summary
from seglog.indexer.segment_list import SegmentList

EARLIEST = -2
LATEST = -1
MAX_TIMESTAMP = -3   # KIP-734: the record with the largest timestamp
_LISTING_ATTEMPTS = 5       # a read-only open lists the folder again when a segment vanishes under it
_SETTLE_WAITS = (0, 0.002, 0.01, 0.05, 0.1, 0.2)   # seconds a read-only open waits for a two-step change to finish


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    append_time: int          # LogAppendTime's time, else -1
    batches: int
    bytes: int


class Log:
    """One partition. Use `Log.open(...)`; a context manager."""

    def __init__(self, path: Path, config: TopicConfig, *, readonly: bool, outside_commit_log: bool = False):
        self.path = path
        self._outside_commit_log = outside_commit_log   # appends allowed on a committed topic (_check_uncommitted)
        self.config = config
        self.readonly = readonly
        parsed = parse_partition_dir(path.name)
        self.topic, self.partition = parsed if parsed else (None, None)
        self._segments = SegmentList(path, config, writable=not readonly)
        self._dirty = False                            # appended or truncated since the last flush
        self._lock = None
        self._log_start = 0
        self._write_epoch: int | None = None        # the leader epoch appends write (first append)
        self.recovery_report: list[str] = []
        self.recovery_examined = 0          # segments the writable open's recovery looked at
        self._recovery_point = 0            # the value in the partition's recovery point file (0: none)
        self._opened_end = 0                # the log end at a writable open: segments below predate it
        self._closed = False

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | os.PathLike, config: Mapping[str, Any] | TopicConfig | None = None, *,
             readonly: bool = False, lock_timeout: float | None = None, full_recovery: bool = False,
             outside_commit_log: bool = False, create: bool = True) -> "Log":
        """`full_recovery`: a writable open examines every segment, those below the recovery point too
        (`seglog recover`; indexer/recovery.py recover_folder). `outside_commit_log=True`: the caller writes
        records past a committed topic's end on purpose and commits them itself (or means them to stay
        invisible): tools and tests that play a writer. A writable open makes a missing partition folder only
        where its topic exists, under the locks (indexer/partition_folder.py); `create=False` (the sidecar) makes
        none: UnknownTopicOrPartitionError."""
        path = Path(path)
        cfg = config if isinstance(config, TopicConfig) else validate_topic_config(config, where=f"config of {path}")
        check_lock_timeout(lock_timeout, f"partition {path}")   # before anything is created
        refuse_symlink(path)     # a linked partition folder leads to another root's segments (fsutil)
        log = cls(path, cfg, readonly=readonly, outside_commit_log=outside_commit_log)
        if may_have_gaps(path, cfg):
            log._segments.dense = False     # compaction's gaps are not faults (docs/spec.md §3.9)
        if readonly:
            if not path.is_dir():
                raise OffsetOutOfRangeError(f"partition folder {path} does not exist")
            log._load_readonly()
            return log
        if not parse_partition_dir(path.name):
            from seglog.indexer.names import validate_topic
            validate_topic(path.name.rpartition("-")[0] or path.name)  # names the bad topic
        # the lock first, then the folder: made before it, a folder came back under a DROP (partition_folder.py)
        log._lock = lock_partition(path, lock_timeout, create=create)
        try:
            log._load_writable(full_recovery)
        except BaseException:
            log._lock.release()
            raise
        return log

    def _segment_files(self) -> list[int]:
        return log_bases(self.path)

    def _checkpointed_start(self) -> int:
        if self.topic is None:
            return 0
        try:
            return checkpoint.read_log_start_offsets(self.path.parent).get((self.topic, self.partition), 0)
        except Exception:  # a malformed checkpoint must not stop reads; recovery reports it
            return 0

    def _load_readonly(self) -> None:
        # A truncation that restarts the log below its start changes the segments and the checkpoint
        # in two steps (indexer/recovery.py): a reader that falls between them sees the log start
        # beyond the end. That passes within milliseconds; a state that stays is damage, and reads
        # report it (_bounds).
        # Likewise a listing taken while a clean or merge swaps its segment in (a `.log.swap` is
        # there) may lack the group, even at the log start: wait for the swap; one that stays (its
        # sidecar died, recovery finishes it) is reported, never read as records gone.
        swapping: list[int] = []
        for wait in _SETTLE_WAITS:
            if wait:
                time.sleep(wait)
                self._segments.close_all()
            swapping = self._load_readonly_once()
            if self._log_start <= self.log_end_offset and not swapping:
                return
        if swapping:
            self._segments.close_all()
            raise SegmentDeletedError(
                f"{self.path}: segment {min(swapping)} is being swapped in (a .log.swap, docs/spec.md §3.9) and "
                f"the listing may lack its group; open the log again (a writable open finishes the swap)")

    def _load_readonly_once(self) -> list[int]:
        # Readers take no lock: between the listing and the open, the sidecar may roll and then
        # rename the last segment to .deleted. List again; a folder that keeps changing under us is
        # reported as the data loss it is, never as a raw FileNotFoundError.
        # The checkpoint is read BEFORE the listing: retention only raises it, and it deletes the
        # segments before it raises it, so a start read first never passes the end listed after.
        checkpointed = self._checkpointed_start()
        bases, active, swaps = [], None, []
        for attempt in range(_LISTING_ATTEMPTS):
            bases, swaps = log_bases_and_swaps(self.path)
            if not bases:
                break
            try:
                active = self._segments.open_segment(bases[-1], active=False)
                break
            except FileNotFoundError:
                if attempt == _LISTING_ATTEMPTS - 1:
                    raise OffsetOutOfRangeError(
                        f"{self.path}: segments kept being deleted while the log was being opened") from None
        if active is not None:
            active.load_state(tolerate_torn_tail=True)
        self._segments.load(bases, active)
        self._log_start = max(checkpointed, bases[0] if bases else 0)
        return swaps

    def _load_writable(self, full_recovery: bool = False) -> None:
        recovered = recovery.recover_folder(self.path, self.config, self.topic, self.partition,
                                            trust_point=not full_recovery)
        self.recovery_report = recovered.report
        self.recovery_examined = recovered.examined
        self._recovery_point = recovered.recovery_point
        bases = recovered.bases
        start = self._checkpointed_start()
        if not bases:
            self._segments.load([], None)
            self._segments.add_active(start)
        else:
            active = self._segments.open_segment(bases[-1], active=True)
            active.load_state()
            self._segments.load(bases, active)
        self._log_start = max(start, self._segments.bases[0])
        self._opened_end = self.log_end_offset

    def segment_largest_timestamps(self) -> np.ndarray:
        """Each segment's largest timestamp, oldest first (loaded once per open Log, then kept current)."""
        return self._segments.largest_timestamps()[0]

    def close_inactive_segments(self) -> None:
        """Close the cached inactive segments (they reopen on demand): frees their maps and files."""
        self._segments.evict(keep=0)

    def segment_bases(self) -> list[int]:
        """Base offsets of the segments, oldest first (the last is the active one)."""
        return list(self._segments.bases)

    def segment(self, base: int) -> LogSegment:
        """The segment with this base offset, opened on demand (a bounded number stay open)."""
        self._check_open()
        return self._segments.get(base)

    # ------------------------------------------------------------------ properties
    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        self._check_open()
        active = self._segments.active
        return active.next_offset if active is not None else self._log_start

    @property
    def active_segment(self) -> LogSegment | None:
        return self._segments.active

    def __enter__(self) -> "Log":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Log({str(self.path)!r}, start={self._log_start}, end={self.log_end_offset if not self._closed else '?'})"

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"{self.path}: the log is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.readonly:
            raise ReadOnlyLogError(f"{self.path} is open read-only")

    def flush(self) -> None:
        """fsync every segment appended to since the last flush (appends are in the OS cache when
        append returns; a roll does not fsync)."""
        self._check_writable()
        self._segments.flush_rolled()
        self._segments.active.flush()
        self._dirty = False

    def close(self) -> None:
        if self._closed:
            return
        try:
            active = self._segments.active
            if not self.readonly and active is not None:
                if self._dirty:
                    self.flush()
                # A clean close trims the active indexes as Kafka's broker does (its tools read
                # slot 0 of an empty preallocated index as an entry); the next writable open
                # preallocates them again.
                active.offset_index.trim(fsync=False)
                active.time_index.trim(fsync=False)
                # Every inactive segment is durable now: the next writable open trusts them all. The
                # active segment's base, not the log end: the active one is examined at every open
                # anyway, so the file is rewritten only when segments rolled (a sink's close that only
                # appended writes nothing more).
                self._advance_recovery_point(self._segments.bases[-1])
        finally:
            self._closed = True
            self._segments.close_all()
        if self._lock is not None:
            self._lock.release()

    # ------------------------------------------------------------------ append
    def append(self, records: Sequence[Record]) -> AppendInfo:
        """Append records as batches; the same bytes as `append_columns` over the same columns."""
        if isinstance(records, (bytes, str)) or not isinstance(records, Sequence):
            raise InvalidRecordError(f"append takes a sequence of Record, got {type(records).__name__}")
        for i, r in enumerate(records):
            _check_record(i, r)
        now = now_ms()
        timestamps = np.array([now if r.timestamp is None else r.timestamp for r in records], dtype=np.int64) \
            if records else np.zeros(0, dtype=np.int64)
        headers = None
        if any(r.headers for r in records):
            import pyarrow as pa
            headers = pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records],
                               type=pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
        return self._append(values=[r.value for r in records], keys=[r.key for r in records],
                            timestamps=timestamps, headers=headers, now=now, max_batch_bytes=None)

    def append_columns(self, values, keys=None, timestamps=None, headers=None, *,
                       max_batch_bytes: int | None = None) -> AppendInfo:
        """Bulk append from whole columns (Arrow arrays or numpy): the sink's path."""
        return self._append(values=values, keys=keys, timestamps=timestamps, headers=headers,
                            now=now_ms(), max_batch_bytes=max_batch_bytes)

    def default_max_batch_bytes(self) -> int:
        """`batch_budget` of this log's configuration."""
        return batch_budget(self.config)

    def _append(self, *, values, keys, timestamps, headers, now: int, max_batch_bytes) -> AppendInfo:
        self._check_writable()
        self._check_uncommitted()
        n = len(values)
        ts = _timestamps_ms(timestamps, n, now)
        log_append_time = self.config.log_append_time
        if not log_append_time:
            check_time_difference(ts, now, self.config["message.timestamp.before.max.ms"],
                                   self.config["message.timestamp.after.max.ms"], self.log_end_offset)
        base = self.log_end_offset
        if self.config.compacted:
            _check_keys(keys, n, self.path, base)
        if n == 0:
            return AppendInfo(base, base - 1, NO_TIMESTAMP, -1, 0, 0)
        enc = encode_columns(base, values, keys, ts, headers,
                             max_batch_bytes=max_batch_bytes or self.default_max_batch_bytes(),
                             append_time_ms=now if log_append_time else None)
        enc = compress_encoded(enc, topic_codec(self.config["compression.type"]))
        enc = self._with_leader_epoch(enc)
        sizes = np.diff(enc.positions)
        too_big = np.nonzero(sizes > self.config["max.message.bytes"])[0]
        if len(too_big):
            i = int(too_big[0])
            raise RecordTooLargeError(
                f"{self.path}: record {int(enc.base_offsets[i]) - base} of this append encodes to a batch of "
                f"{int(sizes[i])} bytes, more than max.message.bytes={self.config['max.message.bytes']}")
        # Every check passed: from here on bytes are written.
        self._dirty = True
        self._write_batches(enc, now)
        max_ts = int(enc.max_timestamps.max())
        return AppendInfo(base, int(enc.last_offsets[-1]), max_ts, now if log_append_time else -1,
                          len(sizes), int(enc.positions[-1]))

    def _check_uncommitted(self) -> None:
        """The storage API never appends to a topic the sink's commit log governs (README, "The storage API"):
        readers stop at its committed end offsets and the next sink commit rolls the partition back to them,
        so the records would be invisible, then cut. Refused, naming the topic, unless the Log was opened
        `outside_commit_log=True`; a topic without commits (no sink writes it) appends as before. Checked on
        every append (a sink may commit another partition meanwhile): a listing of a missing folder, ~2 us."""
        if self.topic is None or self._outside_commit_log:
            return
        from seglog.indexer.commit_log import CommitLog

        if CommitLog(self.path.parent, self.topic).latest() is not None:
            raise CommittedTopicError(
                f"{self.path}: topic {self.topic!r} is written through the commit log under {self.path.parent} "
                f"(format(\"seglog\") or SegmentLogSink): records appended here would sit past its committed end, "
                f"invisible to every reader, and the next sink write would cut them; write this topic with "
                f"df.write.format(\"seglog\") or SegmentLogSink instead; nothing was appended")

    def write_leader_epoch(self) -> int:
        """The partition leader epoch every batch appended here carries. seglog's own folders hold
        epoch 0 (what the encoders write); a folder imported from a Kafka broker continues the
        broker's epoch (the checkpoint's largest, or the last batch's if larger), so epochs never
        decrease and the leader-epoch-checkpoint needs no new entry (indexer/leader_epochs.py)."""
        if self._write_epoch is None:
            self._write_epoch = 0
            if self._segments.active.max_leader_epoch > 0:
                self._write_epoch = max(0, checkpoint_max_epoch(self.path), self._last_batch_epoch())
        return self._write_epoch

    def _with_leader_epoch(self, enc: EncodedBatches) -> EncodedBatches:
        """`enc` carrying `write_leader_epoch()`. The field is outside the CRC."""
        if self.write_leader_epoch() == 0 or enc.num_batches == 0:
            return enc
        data = bytearray(enc.data)
        epoch = struct.pack(">i", self._write_epoch)
        for p in enc.positions[:-1].tolist():
            data[p + PARTITION_LEADER_EPOCH_OFFSET:p + PARTITION_LEADER_EPOCH_OFFSET + 4] = epoch
        return dataclasses.replace(enc, data=memoryview(data), _owner=data)

    def _last_batch_epoch(self) -> int:
        for base in reversed(self._segments.bases):
            seg = self.segment(base)
            if seg.size:
                _, header, _ = seg.position_of(seg.next_offset - 1)
                return header.partition_leader_epoch if header is not None else 0
        return 0

    def _write_batches(self, enc: EncodedBatches, now: int) -> None:
        n = len(enc.positions) - 1
        i = 0
        while i < n:
            seg = self._segments.active
            if not seg.fits(int(enc.positions[i + 1] - enc.positions[i]), int(enc.last_offsets[i]),
                            int(enc.max_timestamps[i]), now):
                seg = self._roll_active()
            j = seg.batches_that_fit(enc, i, now)
            seg.append(enc, i, j)
            i = j
        self._segments.note_active_max()

    # ------------------------------------------------------------------ batches and segments written elsewhere
    def append_encoded(self, enc: EncodedBatches, now: int | None = None) -> None:
        """Append batches encoded elsewhere (the sink's JVM writer; tests/oracles/staged.py, its reference), their base
        offsets already from `log_end_offset` on: uncompressed ones get the topic's codec, batches
        already in the topic's codec (the JVM writer compresses as compress_encoded does) are
        kept as they are, never compressed twice; then the partition's leader epoch and the roll
        and index rules of any append, so the bytes are those `append_columns` writes for the
        same batches. The caller checked max.message.bytes and timestamps."""
        self._check_writable()
        if enc.num_batches == 0:
            return
        if int(enc.base_offsets[0]) != self.log_end_offset:
            raise InvalidRecordError(f"{self.path}: batches from offset {int(enc.base_offsets[0])} appended at "
                                     f"the log end {self.log_end_offset}")
        codec = topic_codec(self.config["compression.type"])
        low = np.frombuffer(enc.data, dtype=np.uint8)[enc.positions[:-1] + ATTRIBUTES_OFFSET + 1]
        given = np.unique(low & COMPRESSION_CODEC_MASK)
        if given.tolist() == [0] and (low & CONTROL_FLAG_MASK).all():
            pass   # control batches (transaction markers) are never compressed, as Kafka writes them
        elif given.tolist() == [0]:
            enc = compress_encoded(enc, codec)
        elif given.tolist() != [codec]:
            raise InvalidRecordError(f"{self.path}: batches compressed with codec(s) {given.tolist()} appended to a "
                                     f"topic whose compression.type writes codec {codec}")
        enc = self._with_leader_epoch(enc)
        self._dirty = True
        self._write_batches(enc, now_ms() if now is None else now)

    # ------------------------------------------------------------------ rolling and sealing
    def _roll_active(self, *, seal: bool = True) -> LogSegment:
        old = self._segments.active
        # The segment left behind is sealed now, as Kafka finishes a segment that becomes
        # inactive (seal entry, indexes trimmed: no zero tail a broker could read as "largest
        # timestamp 0", docs/spec.md §2.4). No fsync here (a roll must stay cheap): it joins the
        # segments the next flush() makes durable, indexes included. `seal=False`: retention's roll
        # of a segment it deletes at once (a crash before the deletion leaves an inactive segment,
        # which recovery seals).
        if seal:
            old.seal(old.next_offset, durable=False)
        # The lookup's running maximum must include what this append wrote to the old segment
        # before the roll, or a live lookup skips past it: retire_active notes it.
        self._segments.retire_active()
        return self._segments.add_active(old.next_offset)

    def roll(self) -> int | None:
        """Start a new active segment if the active one holds records; returns its base offset."""
        self._check_writable()
        if self._segments.active.size == 0:
            return None
        return self._roll_active().base_offset

    def roll_if_idle(self, now: int | None = None) -> bool:
        """The sidecar's roll of an active segment past segment.ms while no writes arrive (docs/spec.md §3.2)."""
        self._check_writable()
        now = now_ms() if now is None else now
        if self._segments.active.time_to_roll(now, now):
            self._roll_active()
            return True
        return False

    def seal_inactive(self, *, durable: bool = True) -> list[int]:
        """Seal every inactive segment (docs/spec.md §2.5); idempotent. Returns the bases sealed now.
        `durable=False` skips the fsyncs: for building test and benchmark data only."""
        self._check_writable()
        sealed = []
        bases = self._segments.bases
        for i, base in enumerate(bases[:-1]):
            if sealed_summary(self.path, base, bases[i + 1]) is not None:
                continue  # already sealed: decided from the files, not opened
            seg = self.segment(base)
            if seg.seal(bases[i + 1], durable=durable):
                sealed.append(base)
        if durable:
            # every inactive segment is sealed; made durable there (those sealed now were forced by their seal)
            self._advance_recovery_point(bases[-1], forced=frozenset(sealed))
        return sealed

    # ------------------------------------------------------------------ the recovery point
    def _advance_recovery_point(self, point: int, forced: frozenset[int] = frozenset()) -> None:
        """Raise the partition's recovery point to `point` (indexer/recovery_point.py), first making
        durable what it newly covers: the segments rolled since the last flush, and the segments that
        were there at open (a writer killed before its flush may have left them in the page cache
        only). This Log's own appends below `point` were fsynced by flush(), and the segments in `forced`
        (their .log and indexes) by the caller. Nothing when the point would not move: a steady open and
        close writes nothing."""
        if self.topic is None or point <= self._recovery_point:
            return
        forced = forced | self._segments.flush_rolled(forced)    # each file forced once (a seal, or here)
        bases = self._segments.bases
        for i, base in enumerate(bases):
            next_base = bases[i + 1] if i + 1 < len(bases) else self.log_end_offset
            if (next_base > self._recovery_point and base < self._opened_end and next_base <= point
                    and base not in forced):
                _fsync_segment_files(self.path, base)
        try:
            recovery_point.write_recovery_point(self.path, self.topic, self.partition, point)
        except OSError:
            return   # a full disk, a read-only file: the old point stays true (it covers durable segments only)
        self._recovery_point = point

    def _lower_recovery_point(self, point: int) -> None:
        """Before anything rewrites records at or after `point`: the file no longer covers them."""
        if self._recovery_point <= point:
            return
        try:
            recovery_point.write_recovery_point(self.path, self.topic, self.partition, point)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            # A full disk cannot take the rewrite; an unlink needs no room (no file: nothing trusted).
            recovery_point.recovery_point_path(self.path).unlink(missing_ok=True)
            fsync_dir(self.path)
        self._recovery_point = point

    def segment_facts(self, i: int) -> tuple[int, int, int, bool]:
        """(size, largest timestamp, mtime ms, sealed) of the i-th segment, sealed ones from their files alone."""
        return self._segments.facts(i)

    # ------------------------------------------------------------------ reads
    def require_start_within_end(self) -> None:
        """CorruptRecordError when the log start offset is past the log end: a checkpoint that would hide
        every record. Every reader checks it before it reads (the JVM's PartitionLog too)."""
        self._check_open()
        if self._log_start > self.log_end_offset:
            raise CorruptRecordError(
                f"{self.path}: the log start offset {self._log_start} (from {self.path.parent}/"
                f"log-start-offset-checkpoint) is beyond the log end offset {self.log_end_offset}: "
                f"it would hide every record; correct or remove the checkpoint entry")

    def require_committed_end(self, end: int) -> None:
        """CorruptRecordError when the log ends below `end`, an offset a reader was told is committed
        (the commit log's end, read before this log was opened: the sink makes records durable before
        it commits them). Such records are lost, and a read must say so, never return fewer rows; a torn
        batch where they were is named with its position (the JVM reader reports the same)."""
        self.require_start_within_end()
        log_end = self.log_end_offset
        if end <= log_end:
            return
        detail = ""
        active = self._segments.active
        if active is not None and active.file_size() > active.size:
            tail = active.pread(active.size, active.file_size() - active.size)
            scan = scan_batches(tail, active.size, check_crc=False, origin=active.size)
            if scan.error:
                detail = f"{active.log_path}: {scan.error}; "
        raise CorruptRecordError(f"{detail}{self.path}: offsets {log_end} to {end - 1} were committed but the log "
                                 f"ends at offset {log_end}: those records are lost")

    def _bounds(self, offset: int | None, max_offset: int | None) -> tuple[int, int]:
        self.require_start_within_end()
        start = self._log_start if offset is None else offset
        if start < self._log_start:
            raise OffsetOutOfRangeError(
                f"{self.path}: offset {start} is below the log start offset {self._log_start} "
                f"(removed by retention or truncation)")
        end = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        return start, end

    def _batch_chunks(self, start: int, end: int) -> Iterator[tuple[LogSegment, int, bytes, Any]]:
        """(segment, file position, bytes, scan) for CRC-checked chunks of whole batches holding
        offsets [start, end)."""
        bases = self._segments.bases
        if start >= end or not bases:
            return
        i = self._segments.position(start)
        while i < len(bases) and bases[i] < end:
            seg = self.segment(bases[i])
            if seg.size == 0 and i < len(bases) - 1:
                # Offsets base..next base - 1 belonged to this segment and its .log is empty:
                # lost records are reported, never skipped (recovery and verify name them too).
                raise CorruptRecordError(
                    f"{seg.log_path}: the .log is empty but offsets {seg.base_offset} to "
                    f"{bases[i + 1] - 1} belonged to it: those records are lost")
            pos, header, prev_last = seg.position_of(max(start, seg.base_offset))
            last_seen = None
            if header is not None:
                for file_pos, buf, scan in _checked_chunks(seg, pos, prev_last, end):
                    yield seg, file_pos, buf, scan
                    if len(scan.last_offsets):
                        last_seen = int(scan.last_offsets[-1])
                        if last_seen >= end - 1:
                            return
            covered = max(start, seg.base_offset, -1 if last_seen is None else last_seen + 1)
            if self._segments.dense and i + 1 < len(bases) and covered < min(bases[i + 1], end):
                # Dense offsets run on from segment to segment (each base = the previous last + 1): a
                # segment read to its end short of the next one's base lost its tail. Reported, never
                # read as fewer rows (the JVM's RecordCursor keeps the same rule). Unless a writer cut
                # this segment under a stale reader (a truncation: the file is now shorter than the
                # reader saw, or the next segment is gone): that read ends where the file now ends.
                if seg.file_size() < seg.size or not os.path.exists(
                        os.path.join(self.path, f"{bases[i + 1]:020d}{LOG_SUFFIX}")):
                    return
                raise CorruptRecordError(
                    f"{seg.log_path}: offsets {covered} to {bases[i + 1] - 1} are lost: the .log holds no batch "
                    f"with them{'' if last_seen is None else f' after offset {last_seen}'}, and the next segment "
                    f"starts at {bases[i + 1]}")
            if self.readonly and last_seen is not None and i + 1 < len(bases) and last_seen >= bases[i + 1]:
                # A merged or cleaned segment opened under a listing taken before its swap: it holds
                # the offsets of segments listed after it. Never read them twice (docs/spec.md §3.10).
                raise SegmentDeletedError(
                    f"{self.path}: segment {seg.base_offset} reaches offset {last_seen} past the next one listed "
                    f"({bases[i + 1]}): segments were swapped in while in use; open the log again")
            if (self.readonly and not self._segments.dense and last_seen is not None and i + 1 < len(bases)
                    and last_seen + 1 != bases[i + 1]):
                # A cleaned segment always ends where the next begins (docs/spec.md §3.9): a hole
                # here is a listing taken while the cleaner swapped a group in. Never skip it.
                raise SegmentDeletedError(
                    f"{self.path}: segment {seg.base_offset} ends at offset {last_seen} but the next one listed "
                    f"starts at {bases[i + 1]}: segments were swapped in while in use; open the log again")
            i += 1

    def read(self, offset: int | None = None, max_offset: int | None = None, *,
             isolation_level: str = DEFAULT_ISOLATION_LEVEL) -> Iterator[Record]:
        """Records from `offset` (default: log start) up to `max_offset` (exclusive), as a Kafka
        consumer with `isolation_level` returns them (indexer/transactions.py: never control
        records; read_committed also skips aborted transactions and stops at an open one)."""
        check_isolation_level(isolation_level)
        start, end = self._bounds(offset, max_offset)
        for seg, file_pos, buf, positions, stop in self._visible_chunks(start, end, isolation_level):
            for pos in positions:
                with _naming_the_file(seg, file_pos):
                    records = decode_batch(buf, int(pos))
                for rec in records:
                    if rec.offset >= end:
                        return
                    if rec.offset >= start:
                        yield rec
            if stop is not None:
                return

    def read_arrow(self, start_offset: int, end_offset: int | None = None, *, max_rows: int = 65536,
                   isolation_level: str = DEFAULT_ISOLATION_LEVEL):
        """Arrow record batches (key, value, offset, timestamp ms, timestampType, headers), with
        `isolation_level` as in `read`."""
        check_isolation_level(isolation_level)
        start, end = self._bounds(start_offset, end_offset)
        for seg, file_pos, buf, positions, stop in self._visible_chunks(start, end, isolation_level):
            with _naming_the_file(seg, file_pos):
                batch = decode_to_arrow(buf, positions, start_offset=start, end_offset=end)
            for lo in range(0, batch.num_rows, max_rows):
                yield batch.slice(lo, max_rows)
            if stop is not None:
                return

    def _visible_chunks(self, start: int, end: int, isolation_level: str):
        """(segment, the chunk's file position, bytes, positions of the batches whose records a consumer
        returns, stop) per checked chunk; `stop` is the last stable offset when an open transaction ends the read there."""
        fates: list[TransactionFates] = []

        def fates_for() -> TransactionFates:
            if not fates:
                fates.append(TransactionFates(self._control_markers))
            return fates[0]

        for seg, file_pos, buf, scan in self._batch_chunks(start, end):
            keep, stop = visible_batches(scan.headers, scan.attributes, isolation_level, fates_for)
            yield seg, file_pos, buf, (scan.positions if keep is None else scan.positions[keep]), stop
            if stop is not None:
                return

    def _control_markers(self, from_offset: int):
        """(producer id, offset, ABORT/COMMIT) of every control batch after `from_offset`."""
        for _, _, buf, scan in self._batch_chunks(from_offset + 1, self.log_end_offset):
            for k in np.flatnonzero(scan.attributes & CONTROL_FLAG_MASK):
                h = scan.headers[int(k)]
                if h.base_offset > from_offset:
                    yield h.producer_id, h.base_offset, control_type(decode_batch(buf, int(scan.positions[k]), h))

    # ------------------------------------------------------------------ lookup by timestamp
    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """Smallest offset whose record has a timestamp >= `timestamp`, or None (docs/spec.md §3.5).
        A binary search over the running maximum of segment largest timestamps picks the segment
        (O(log segments)), its time and offset indexes the position (O(log entries))."""
        self._check_open()
        if timestamp == EARLIEST:
            return self._log_start
        if timestamp == LATEST:
            return self.log_end_offset
        if timestamp == MAX_TIMESTAMP:
            return self._offset_of_max_timestamp()
        if timestamp < 0:
            raise InvalidRecordError(f"timestamp {timestamp} is negative (use -2 for earliest, -1 for latest, "
                                     f"-3 for the largest timestamp)")
        maxes, running = self._segments.largest_timestamps()
        i = int(np.searchsorted(running, timestamp, side="left"))
        bases = self._segments.bases
        while i < len(bases):
            if maxes[i] >= timestamp:
                seg = self.segment(bases[i])
                found = find_in_segment(seg, timestamp, max(self._log_start, seg.base_offset))
                if found is not None:
                    return found
            i += 1
        return None

    def _offset_of_max_timestamp(self) -> int | None:
        """KIP-734 (ListOffsets -3): the earliest record holding the largest timestamp of the
        log, or None when no record has a timestamp. The first segment reaching the maximum
        holds it unless retention's log start cut it off (then the next one that reaches it)."""
        maxes, running = self._segments.largest_timestamps()
        if not len(running) or running[-1] < 0:
            return None
        largest = int(running[-1])
        for i in np.flatnonzero(maxes == largest).tolist():
            seg = self.segment(self._segments.bases[i])
            found = find_in_segment(seg, largest, max(self._log_start, seg.base_offset))
            if found is not None:
                return found
        return None

    # ------------------------------------------------------------------ truncation
    def truncate_to(self, offset: int) -> None:
        """Remove exactly the records at or after `offset` (docs/spec.md §3.6). Crash safe: an intent file
        is written first and recovery completes an interrupted truncation."""
        self._check_writable()
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
            # -1 would name a segment "-0000000000000000001.log" and wipe the log (offsets are >= 0)
            raise OffsetOutOfRangeError(f"{self.path}: cannot truncate to offset {offset!r}: offsets are "
                                        f"integers >= 0")
        offset = int(offset)
        if offset >= self.log_end_offset:
            return
        from seglog.indexer.remote.metadata import refuse_below_remote_end

        refuse_below_remote_end(self.path, offset, f"truncate to offset {offset}")
        seg = None
        bases = self._segments.bases
        if offset >= self._log_start and bases:
            i = self._segments.position(offset)
            if i > 0 and bases[i] == offset:
                # A cut at a segment's base removes that segment whole; the one before becomes
                # active again (no empty segment left behind, the files as they were before it).
                i -= 1
            seg = self.segment(bases[i])
        intent = recovery.truncation_intent(seg, offset)
        self._lower_recovery_point(offset)     # before the intent: recovery then trusts nothing the cut touches
        recovery.write_intent(self.path, intent)
        self._close_segments()
        result = recovery.finish_truncation(self.path, self.config, self.topic, self.partition, intent, [])
        self._reset_after_truncation(result.bases, result.active_base,
                                     offset if result.restarted else self._log_start)

    def _close_segments(self) -> None:
        self._segments.close_all()          # truncation fsyncs what it keeps

    def _reset_after_truncation(self, bases: list[int], active_base: int, log_start: int) -> None:
        self._close_segments()
        active = self._segments.open_segment(active_base, active=True)
        active.load_state()
        self._segments.load(bases, active)
        self._log_start = log_start

    # ------------------------------------------------------------------ retention
    def retention_facts(self) -> list["retention.SegmentFacts"]:
        """Each segment's size and judged timestamp, oldest first (a sealed one from its files alone).
        Invariant: where the topic has a commit log, a size counts only the bytes below the sink's committed
        end (for a segment that end cuts, from its offset index: never more than it holds). A killed writer's
        uncommitted bytes are cut by its next run; counted, they made size retention delete committed records
        younger than retention.ms and leave less than retention.bytes (issue 36, found by the system soak)."""
        from seglog.indexer.compaction.cleaner import committed_end

        end = committed_end(self)
        bases = self._segments.bases
        facts = []
        for i in range(len(bases)):
            size, largest, mtime, _ = self._segments.facts(i)
            judged = retention.judged_timestamp(size, largest, mtime)
            if end is not None and (bases[i + 1] if i + 1 < len(bases) else self.log_end_offset) > end:
                size = 0 if bases[i] >= end else self._position_in(i, end)
            facts.append(retention.SegmentFacts(size, judged))
        return facts

    def apply_retention(self, now: int | None = None) -> "retention.RetentionResult":
        """Carry out retention's plan (docs/spec.md §3.7): the plan is pure, the file work is here."""
        self._check_writable()
        todo = retention.plan(self.retention_facts(), self.config, now_ms() if now is None else now)
        from seglog.indexer.remote.metadata import locally_deletable

        # Invariant: while the remote tier holds live segments of this partition, only local segments that are
        # also there go (whatever the configuration says now): no hole opens between the tiers.
        cap = locally_deletable(self.path, self._segments.bases)
        if cap is not None and todo.count > cap:
            todo = dataclasses.replace(todo, count=cap, roll_active=False)
        if self.below_committed_end(todo.count) < todo.count:
            todo = dataclasses.replace(todo, count=self.below_committed_end(todo.count), roll_active=False)
        if todo.count == 0:
            return retention.RetentionResult([], self._log_start, todo.blocked_by)
        if not todo.roll_active:
            deleted = self._delete_oldest(todo.count)
            return retention.RetentionResult(deleted, self._log_start, todo.blocked_by)
        # Every segment expired, the active one too (docs/spec.md §3.7). Deleting needs no new blocks, so
        # that a volume full of expired records is freed (issue 36 item 9): the others go first (renames);
        # the active one is deleted only once rolled, and that roll makes empty files only: no seal entry
        # for a segment deleted at once. The checkpoint, which needs room, is written after each rename.
        deleted = self._delete_oldest(todo.count - 1) if todo.count > 1 else []
        self._roll_active(seal=False)
        deleted += self._delete_oldest(1)
        return retention.RetentionResult(deleted, self._log_start, todo.blocked_by)

    def retention_blocked(self, now: int | None = None) -> int | None:
        """The far-future timestamp that holds retention back, or None (docs/spec.md §3.7)."""
        timestamps = [f.judged_timestamp for f in self.retention_facts()]
        return retention.blocked_by(timestamps, now_ms() if now is None else now, self.config["retention.ms"])

    def purge_deleted(self, now: int | None = None) -> list[Path]:
        """Unlink `.deleted` files older than file.delete.delay.ms."""
        self._check_writable()
        now = now_ms() if now is None else now
        delay = self.config["file.delete.delay.ms"]
        purged = []
        for entry in os.scandir(self.path):
            if entry.name.endswith(DELETED_SUFFIX):
                # rename sets ctime: that is when deletion was decided. Whole milliseconds on both sides:
                # the kernel stamps files from its tick clock, a little behind `now_ms()`, and a ctime with
                # a fraction above a truncated `now` would keep a file a delay of 0 must purge at once.
                if now - entry.stat().st_ctime_ns // 1_000_000 >= delay:
                    os.unlink(entry.path)
                    purged.append(Path(entry.path))
        return purged

    def below_committed_end(self, count: int) -> int:
        """`count` lowered to the oldest segments wholly below the sink's committed end (its high watermark)
        where the topic has a commit log. Invariant: retention never deletes what the sink may still take
        back, as Kafka's deletes only below the high watermark (UnifiedLog.deletableSegments): a log start
        past the committed end, moved back again by the writer's roll back, made readers skip committed
        records as deleted (issue 36, found by the system soak)."""
        from seglog.indexer.compaction.cleaner import committed_end

        end = committed_end(self)
        if end is None:
            return count
        bases = self._segments.bases
        k = 0
        while k < min(count, len(bases)) and (bases[k + 1] if k + 1 < len(bases) else self.log_end_offset) <= end:
            k += 1
        return k

    def delete_oldest_segments(self, count: int) -> list[int]:
        """Delete the `count` oldest segments (never the active one) as retention does: renamed to
        .deleted, the log start and its checkpoint raised, so open readers are safe. The tier pass's
        local retention removes tiered segments so (indexer/remote/tier.py); returns their bases."""
        self._check_writable()
        count = min(count, len(self._segments.bases) - 1)
        return self._delete_oldest(count) if count > 0 else []

    def _delete_oldest(self, count: int) -> list[int]:
        """Rename the oldest `count` segments to .deleted (never the active one); returns their bases."""
        dropped = self._segments.drop_oldest(count)
        for base in dropped:
            recovery.rename_deleted(self.path, base)
        self._log_start = max(self._log_start, self._segments.bases[0])
        if self.topic is not None:
            try:
                checkpoint.update_log_start_offsets(self.path.parent, {(self.topic, self.partition): self._log_start})
            except OSError as exc:
                # A full filesystem cannot take the rewritten checkpoint, and retention is what frees
                # it. A log start at the first kept segment's base is what the files say anyway (an
                # open takes max(checkpoint, first base)): going on loses nothing. One inside a
                # segment needs the checkpoint.
                if exc.errno != errno.ENOSPC or self._log_start != self._segments.bases[0]:
                    raise
        return dropped

    # ------------------------------------------------------------------ compaction
    def clean(self, now: int | None = None, *, dedupe_buffer_bytes: int | None = None, force: bool = False):
        """One clean of this compacted partition if due (docs/spec.md §3.9; indexer/compaction/cleaner.py);
        returns its CleanResult. The active segment is never touched."""
        from seglog.indexer.compaction import cleaner

        self._check_writable()
        budget = cleaner.DEFAULT_DEDUPE_BUFFER_BYTES if dedupe_buffer_bytes is None else dedupe_buffer_bytes
        return cleaner.clean_log(self, now=now, dedupe_buffer_bytes=budget, force=force)

    def allow_offset_gaps(self) -> None:
        """From now on batches may leave offset gaps (the cleaner is about to make some)."""
        self._segments.dense = False
        for seg in self._segments.open_segments() + [self._segments.active]:
            if seg is not None:
                seg.dense = False

    def reload_segments(self) -> None:
        """Take the segments from the folder again (after the cleaner swapped some in)."""
        self._check_writable()
        self._segments.flush_rolled()
        self._close_segments()
        bases = self._segment_files()
        active = self._segments.open_segment(bases[-1], active=True)
        active.load_state()
        self._segments.load(bases, active)

    # ------------------------------------------------------------------ describing
    def segments(self) -> list[SegmentInfo]:
        self._check_open()
        infos = []
        bases = self._segments.bases
        for i, base in enumerate(bases):
            last = i == len(bases) - 1
            next_base = self._segments.active.next_offset if last else bases[i + 1]
            try:
                size, largest, mtime, sealed = self._segments.facts(i)
            except OffsetOutOfRangeError:
                # A reader holds no lock: retention may have deleted the oldest segments since the
                # listing. They are below the new log start, so they are simply no longer there.
                if self.readonly and not (self.path / f"{base:020d}.log").exists():
                    continue
                raise
            state = "active" if last else ("sealed" if sealed else "inactive")
            judged = retention.judged_timestamp(size, largest, mtime)
            infos.append(SegmentInfo(base, next_base, size, largest, mtime if judged is None else judged, state,
                                     self.path / f"{base:020d}.log", mtime))
        return infos

    @property
    def largest_timestamp(self) -> int:
        maxes, running = self._segments.largest_timestamps()
        return int(running[-1]) if len(running) else NO_TIMESTAMP

    def size_bytes(self) -> int:
        return sum(self.segment(b).size for b in self._segments.bases)

    def _position_in(self, i: int, offset: int) -> int:
        """Log bytes of the i-th segment before `offset`, from its offset index alone: its whole size when
        the offset is at or past the segment's end."""
        bases = self._segments.bases
        seg = self.segment(bases[i])
        if offset >= (bases[i + 1] if i + 1 < len(bases) else seg.next_offset):
            return seg.size
        return seg.offset_index.lookup(offset)[1]

    def byte_size(self, start: int, end: int) -> int:
        """An estimate of the log bytes in [start, end), from the indexes alone (no scan); additive (the
        bytes of [a, b) and [b, c) make those of [a, c)). Only the segments holding the range are
        opened: planning a read costs what its range covers, not the history before it."""
        bases = self._segments.bases
        if not bases or end <= start:
            return 0
        i, j = self._segments.position(start), self._segments.position(end)
        inner = sum(self.segment(b).size for b in bases[i:j])
        return max(0, inner - self._position_in(i, start) + self._position_in(j, end))

    def split_offset(self, start: int, end: int, target_bytes: int) -> int | None:
        """Where a task holding at most `target_bytes` of log from `start` may end, without a log scan:
        the first offset of the batch of the last offset index entry in (start, end) at most `target_bytes`
        past start; when none is that close, of the first entry past it (a batch larger than the target
        cannot be cut); None when (start, end) holds no entry past start's own batch. A cut is always a
        batch's start, so no batch is read by two tasks. Only the segments from start's to the cut's are
        opened. The JVM planner's `PartitionLog.splitOffset` keeps the same rule."""
        bases = self._segments.bases
        if not bases or end <= start:
            return None
        first = self._segments.position(start)
        before = -self._position_in(first, start)   # log bytes from start to this segment's base
        within = None
        for base in bases[first:]:
            if base >= end:
                break
            seg = self.segment(base)
            offsets, positions = seg.offset_index.offsets_and_positions()
            past = before + positions.astype(np.int64)
            keep = (offsets > start) & (offsets < end) & (past > 0)   # past <= 0: start's own batch
            for off, pos, gone in zip(offsets[keep].tolist(), positions[keep].tolist(), past[keep].tolist()):
                # The cut is the first offset of the entry's batch (the entry's key is its last): a task ends
                # where a batch begins, so the batch at a cut is read by the next task only (issue 28).
                cut = _batch_base_at(seg, pos, off)
                if cut <= start:
                    continue
                if gone > target_bytes:
                    return within if within is not None else cut
                within = cut
            before += seg.size
        return within

    def verify(self) -> list[str]:
        from seglog.indexer.verify import verify_log
        return verify_log(self)


# ---------------------------------------------------------------------- helpers
_BYTES_LIKE = (bytes, bytearray, memoryview)


def _batch_base_at(seg, position: int, otherwise: int) -> int:
    """The base offset of the batch at `position` (an offset index entry's), from its first 8 bytes;
    `otherwise` when they cannot be read (planning never judges: a read reports what is wrong there).
    The JVM's `Segment.baseOffsetAt` keeps the same rule."""
    head = seg.pread(position, 8)
    if len(head) < 8:
        return otherwise
    base = int.from_bytes(head, "big", signed=True)
    return base if seg.base_offset <= base <= otherwise else otherwise


def batch_budget(cfg: Mapping[str, Any]) -> int:
    """The batching rule's budget (uncompressed bytes), the same for `Log` and the sink's JVM writer:
    batches of at most 1 MiB and max.message.bytes, and about half a segment, so that tiny segments
    still roll between batches; on a compressed topic max.message.bytes less the codec's worst-case
    growth (indexer/codec/compression.py), since the limit applies to the batch as written."""
    limit = cfg["max.message.bytes"]
    limit -= expansion_headroom(topic_codec(cfg["compression.type"]), limit)
    return max(1, min(limit, 1 << 20, max(cfg["segment.bytes"] // 2, 512)))


def _check_record(i: int, r: object) -> None:
    """Refuse, naming the record, what `append` cannot store as given (before anything is written)."""
    if not isinstance(r, Record):
        raise InvalidRecordError(f"record {i} is a {type(r).__name__}, not a seglog.indexer.Record")
    for name in ("key", "value"):
        field_value = getattr(r, name)
        if field_value is not None and not isinstance(field_value, _BYTES_LIKE):
            raise InvalidRecordError(f"record {i}: {name} is a {type(field_value).__name__}; "
                                     f"allowed: bytes or None")
    ts = r.timestamp
    if ts is not None and (isinstance(ts, bool) or not isinstance(ts, (int, np.integer))):
        raise InvalidRecordError(f"record {i}: timestamp {ts!r} is a {type(ts).__name__}; allowed: int "
                                 f"milliseconds >= 0, -1 for none, or None for now")
    if ts is not None and not NO_TIMESTAMP <= int(ts) <= INT64_MAX:
        raise InvalidRecordError(f"record {i}: timestamp {int(ts)} is out of range; allowed: 0 to {INT64_MAX} "
                                 f"milliseconds, -1 for none")
    if not isinstance(r.headers, (tuple, list)):
        raise InvalidRecordError(f"record {i}: headers is a {type(r.headers).__name__}; allowed: a sequence "
                                 f"of (str, bytes or None) pairs")
    for h in r.headers:
        if not (isinstance(h, (tuple, list)) and len(h) == 2 and isinstance(h[0], str)
                and (h[1] is None or isinstance(h[1], _BYTES_LIKE))):
            raise InvalidRecordError(f"record {i}: header {h!r} must be a (str, bytes or None) pair")


def _check_keys(keys, n: int, path, base: int) -> None:
    """A compacted topic refuses records without a key, as Kafka does (docs/spec.md §3.9)."""
    if n == 0:
        return
    if keys is None:
        raise MissingKeyError(f"{path}: the topic is compacted (cleanup.policy={'compact'!r}) and this append of "
                              f"{n} record(s) has no keys; every record needs a key, nothing appended")
    if isinstance(keys, (list, tuple)):
        missing = [i for i, k in enumerate(keys) if k is None]   # a Python list: already per record
        first, count = (missing[0], len(missing)) if missing else (None, 0)
    else:
        import pyarrow as pa

        arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        if not isinstance(arr, pa.Array):
            arr = pa.array(arr)
        count = arr.null_count
        first = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0]) if count else None
    if count:
        raise MissingKeyError(f"{path}: the topic is compacted (cleanup.policy holds 'compact'): record {first} "
                              f"(would be offset {base + first}) has no key, {count} record(s) without a key; "
                              f"nothing appended")


def _timestamps_ms(timestamps, n: int, now: int) -> np.ndarray:
    """Timestamps as int64 ms: None (or nulls) mean now, -1 means no timestamp."""
    if timestamps is None:
        return np.full(n, now, dtype=np.int64)
    if isinstance(timestamps, np.ndarray):
        _check_unsigned_range(timestamps)
        ts = timestamps.astype(np.int64, copy=False)
    else:
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = timestamps
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if not isinstance(arr, pa.Array):
            arr = pa.array(arr, type=pa.int64())
        if pa.types.is_timestamp(arr.type):
            arr = pc.cast(arr, pa.timestamp("ms", tz=arr.type.tz), safe=False).cast(pa.int64())
            # A time column holds real instants: one before the epoch is not Kafka's -1 ("no
            # timestamp"), and Kafka stores no other negative timestamp: refuse it, naming the row.
            early = pc.less(arr, 0)
            if pc.any(early).as_py():
                row = int(pc.index(early, True).as_py())
                raise InvalidRecordError(f"record {row} has a timestamp {arr[row].as_py()} ms before the epoch "
                                         f"(1970-01-01T00:00:00Z); Kafka records cannot hold such times")
        elif pa.types.is_unsigned_integer(arr.type):
            _check_unsigned_range(arr.to_numpy(zero_copy_only=False))
        elif not pa.types.is_integer(arr.type):
            raise InvalidRecordError(f"timestamps must be int64 milliseconds or a timestamp array, got {arr.type}")
        if arr.null_count:
            arr = pc.fill_null(arr, now)
        ts = arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    if len(ts) != n:
        raise InvalidRecordError(f"timestamps has {len(ts)} entries for {n} records")
    bad = np.nonzero(ts < NO_TIMESTAMP)[0]
    if len(bad):
        raise InvalidRecordError(f"record {int(bad[0])} has timestamp {int(ts[bad[0]])}: timestamps are "
                                 f"milliseconds >= 0, or -1 for none")
    return ts


def _check_unsigned_range(values: np.ndarray) -> None:
    """uint64 values above int64's range would wrap to negative timestamps (2**64-1 becomes -1)."""
    if np.issubdtype(values.dtype, np.unsignedinteger) and len(values) and int(np.max(values)) > INT64_MAX:
        row = int(np.argmax(values > INT64_MAX))
        raise InvalidRecordError(f"record {row} has timestamp {int(values[row])}, above {INT64_MAX} "
                                 f"(the largest millisecond timestamp)")


def check_time_difference(ts: np.ndarray, now: int, before: int, after: int, base: int) -> None:
    """Kafka 4's message.timestamp.before.max.ms / after.max.ms (KIP-937), for CreateTime: a record
    further in the past than `before`, or further in the future than `after`, refuses the whole append. The
    JVM's twin is write.StageConfig.timeLimitBroken (tests/conformance/timestamp_bounds.json pins both)."""
    if (before >= INT64_MAX and after >= INT64_MAX) or len(ts) == 0:
        return
    has_ts = ts >= 0
    bad = np.nonzero(has_ts & ((now - ts > before) | (ts - now > after)))[0]
    if len(bad):
        i = int(bad[0])
        key, limit = (("message.timestamp.before.max.ms", before) if int(ts[i]) < now
                      else ("message.timestamp.after.max.ms", after))
        raise TimestampOutOfRangeError(
            f"record {i} (would be offset {base + i}) has timestamp {int(ts[i])}, {int(ts[i]) - now} ms from now "
            f"({now}); {key}={limit}; {len(bad)} record(s) out of range, nothing appended")


def _fsync_segment_files(d: Path, base: int) -> None:
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        fd = os.open(os.path.join(d, f"{base:020d}{suffix}"), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def find_in_segment(seg: LogSegment, timestamp: int, lower: int) -> int | None:
    entry = seg.time_index.lookup(timestamp)
    start = max(lower, entry[1] if entry else seg.base_offset)
    pos, header, prev_last = seg.position_of(start)
    if header is None:
        return None
    for file_pos, buf, scan in _checked_chunks(seg, pos, prev_last, seg.next_offset):
        for k, h in enumerate(scan.headers):  # only batches that can hold the answer are walked
            if h.max_timestamp >= timestamp and h.last_offset >= start:
                found = first_offset_at_or_after(buf, int(scan.positions[k]), h, timestamp, start)
                if found is not None:
                    return found
    return None


def _checked_chunks(seg: LogSegment, pos: int, prev_last: int, until: int | None = None):
    """Chunks of whole, checked batches from `pos` to the segment's end (segment.read_checked);
    nothing at or past offset `until` is judged."""
    return read_checked(seg, pos, prev_last, until)


@contextlib.contextmanager
def _naming_the_file(seg: LogSegment, chunk_pos: int):
    """A record decode fault (a damaged or oversized batch: codec/compression.py's ceiling) names the segment
    file and the chunk's place in it: decode_batch and decode_to_arrow know only the chunk's bytes, whose
    positions start at the chunk (issue 37: a fault names file, position and the bound)."""
    try:
        yield
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"{seg.log_path} (the chunk read from byte {chunk_pos}; batch positions below "
                                 f"count from there): {exc}") from None
