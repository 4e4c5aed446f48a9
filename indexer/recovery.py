"""Recovery on open (docs/spec.md §3.8) and crash-safe truncation (docs/spec.md §3.6).

Recovery, for every segment that is not sealed: index sanity, then the batches after the last
offset index entry are re-read with their CRCs; a torn or corrupt tail is cut and reported; an
index that is missing, short or inconsistent is rebuilt from the log in one read, as is a time index
written by seglog 0.2 (entries pointing at a next offset, docs/format.md "Time index"). A segment
found without a time index gets one built from its records (docs/spec.md §2.4); an inactive segment
whose indexes were rebuilt is sealed again at once, the others are left to the seal job.

Truncation writes an intent file (`truncate.pending`, holding the target and the rewritten
straddling batch) before it touches anything; recovery finds it and finishes the job. A kill at
any instant therefore leaves the old log (intent not yet durable) or, after recovery, the new one.
"""
from __future__ import annotations

from dataclasses import dataclass

import base64
import bisect
import json
import os
from pathlib import Path

from seglog.indexer import checkpoint
from seglog.indexer.compaction import clean_swap
from seglog.indexer.compaction.cleaner_checkpoint import may_have_gaps
from seglog.errors import CorruptRecordError
from seglog.indexer.fsutil import atomic_write, fsync_dir, open_in_root
from seglog.indexer.names import (CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX,
                                  TIME_INDEX_SUFFIX, FolderListing, log_bases, segment_file)
from seglog.indexer.recovery_point import read_recovery_point
from seglog.indexer.codec.records import (BATCH_HEADER_SIZE, LOG_APPEND_TIME, Record, decode_batch, encode_batch,
                                     parse_header)
from seglog.indexer.segment import LogSegment, sealed_summary


TRUNCATE_INTENT = "truncate.pending"


# ---------------------------------------------------------------------- deletion
def rename_deleted(dir_path: Path, base: int) -> None:
    """First phase of deletion: rename the segment's files to `.deleted` (the .log first, so that a
    crash leaves at worst index files without a .log, which recovery also renames)."""
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        f = segment_file(dir_path, base, suffix)
        try:
            os.replace(f, f.with_name(f.name + DELETED_SUFFIX))
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------------- recovery
@dataclass
class Recovered:
    """What a writable open's recovery found: its report, the segments' bases after it, and how many
    segments it examined (a stat or more each; those below the recovery point are not)."""
    report: list[str]
    bases: list[int]
    examined: int
    recovery_point: int       # as read from the file (0: none)


def recover(d: Path, config, topic: str | None, partition: int | None) -> list[str]:
    """Repair the partition folder `d` before a writable open (its lock held); works on the files
    alone and returns what was repaired, one line each. `topic`/`partition` name the folder's entry
    in the root's log start checkpoint (None outside a root)."""
    return recover_folder(d, config, topic, partition).report


def recover_folder(d: Path, config, topic: str | None, partition: int | None, *,
                   trust_point: bool = True) -> Recovered:
    """`recover`, from one listing of the folder (listed again only after a step that changed it),
    trusting the segments wholly below the recovery point (indexer/recovery_point.py) unexamined, as
    Kafka's loader does (LogSegment.sanityCheck skips their indexes). `trust_point=False` (`seglog
    recover`, the explicit repair): every segment examined, so a damaged index below the point (an
    odd length, found by `verify`) is rebuilt too."""
    report: list[str] = []
    point = 0
    if topic is not None:
        _reset_malformed_checkpoint(d.parent, report)
        point, problem = read_recovery_point(d, topic, partition)
        if problem is not None:
            report.append(problem)
    listing = FolderListing(d)
    if listing.with_extra(CLEANED_SUFFIX) or listing.with_extra(SWAP_SUFFIX):
        # An interrupted clean first: finished or undone from its file names (indexer/compaction/clean_swap.py).
        clean_swap.recover_swaps(d, rename_deleted, report)
        listing = FolderListing(d)
    dense = not may_have_gaps(d, config)
    changed = _drop_orphan_indexes(d, listing, report)
    changed = _drop_stale_temp_files(d, listing, report) or changed
    if TRUNCATE_INTENT in listing.names:
        # The recovery point was lowered before the intent was written: it covers nothing the cut touches.
        finish_truncation(d, config, topic, partition, json.loads((d / TRUNCATE_INTENT).read_text()), report)
        changed = True
    if changed:
        listing = FolderListing(d)
    bases = listing.bases
    # Wholly below the recovery point (the next segment's base at or below it): durable and sealed, no
    # recovery scan. One whose index the listing lacks (deleted by hand, or by a tool), or whose index is
    # not whole entries (two stats: an odd length, issue 36 item 11), is examined and rebuilt, as Kafka's
    # loader rebuilds an index that fails its check. The last segment is always examined.
    below = max(0, bisect.bisect_right(bases, point) - 1) if bases and trust_point else 0
    examine = sorted(set(bases[:below]) - listing.indexed
                     | {b for b in bases[:below] if b in listing.indexed and not _whole_entries(d, b)}) + bases[below:]
    for base in examine:
        i = bisect.bisect_left(bases, base)
        _recover_segment(d, config, base, bases[i + 1] if i + 1 < len(bases) else None, report, dense)
    examined = len(examine)
    return Recovered(report, bases, examined, point)


def _whole_entries(d: Path, base: int) -> bool:
    """Both indexes of a trusted segment hold whole entries (8 and 12 bytes): the O(1) check an open
    makes below the recovery point. A stat error is "not whole": the segment is examined, which reports it."""
    stem = os.path.join(d, f"{base:020d}")
    try:
        return os.lstat(stem + INDEX_SUFFIX).st_size % 8 == 0 and os.lstat(stem + TIME_INDEX_SUFFIX).st_size % 12 == 0
    except OSError:
        return False


def _reset_malformed_checkpoint(root: Path, report: list[str]) -> None:
    """A malformed log start checkpoint (docs/format.md "Files"): readers already take each partition's
    log start from its first segment's base offset, as Kafka's log manager does at load; the writer
    makes that the file's content too (rewritten without entries), and reports what was wrong."""
    problem = checkpoint.reset_if_malformed(root)
    if problem is not None:
        report.append(f"{problem}; rewritten without entries: every partition's log start offset is its first "
                      f"segment's base offset (as Kafka's log manager resets a malformed checkpoint)")


def _log_bases(d: Path) -> list[int]:
    return log_bases(d)


def _drop_stale_temp_files(d: Path, listing: FolderListing, report: list[str]) -> bool:
    """Temporary files (`.tmp-*`, and the older `.<name>.tmp-*`) of a writer killed mid-write: the
    caller holds the partition's lock, so no live writer owns any of them. True if any was removed."""
    removed = False
    for name in listing.others:
        if name.startswith(".") and (name.startswith(".tmp-") or ".tmp-" in name):
            os.unlink(d / name)
            report.append(f"{d / name}: temporary file of an interrupted write removed")
            removed = True
    return removed


def _drop_orphan_indexes(d: Path, listing: FolderListing, report: list[str]) -> bool:
    """Index files without their .log set aside; True if any was."""
    for name in listing.orphan_indexes:
        os.replace(d / name, d / (name + DELETED_SUFFIX))
        report.append(f"{d / name}: index without a .log, set aside as {name}{DELETED_SUFFIX}")
    return bool(listing.orphan_indexes)


def _recover_segment(d: Path, config, base: int, next_base: int | None, report: list[str], dense: bool) -> None:
    if next_base is not None and sealed_summary(d, base, next_base) is not None:
        return  # sealed: trusted without opening it; reads check CRCs, `verify` checks everything
    log_path = segment_file(d, base, LOG_SUFFIX)
    had_index = segment_file(d, base, INDEX_SUFFIX).exists()
    had_time_index = segment_file(d, base, TIME_INDEX_SUFFIX).exists()
    active = next_base is None
    if not active and os.stat(log_path).st_size == 0:
        # Every offset from base to next_base belonged to this segment: a zero-length .log (power
        # loss) lost them. Reported, never hidden; readers refuse to skip the gap (Log reads).
        report.append(f"{log_path}: the .log is empty but offsets {base} to {next_base - 1} belonged to it: "
                      f"{next_base - base} records lost")
        return
    # Opened as if active (indexes preallocated): an inactive segment is sealed at the end, and an
    # index taken as found may have no room for what a rebuild writes.
    seg = LogSegment(d, base, config, writable=True, active=True)
    seg.dense = dense
    try:
        # The O(1) checks made at open (last entries in order, the last slot zero), plus the last
        # entries against the log below: every open pays for this, so it must not scan a
        # preallocated index. A bad entry further back is caught when a read uses it (the batch
        # at its position must end at its offset), and by `verify`, which checks every entry.
        problems = seg.offset_index.open_problems + seg.time_index.open_problems
        if not active and not problems:
            problems = seg.offset_index.sanity_check() + seg.time_index.sanity_check()
        if not (had_index and had_time_index) or problems or not _tail_matches_index(seg):
            # Missing (a segment from before time indexes: docs/spec.md §2.4), damaged, or written by seglog
            # 0.2 (time index entries pointing at a next offset): indexed again from the log.
            why = "missing" if not (had_index and had_time_index) else (
                "; ".join(problems) or "last entries do not match the log")
            report.append(f"{log_path}: offset/time index rebuilt ({why})")
            rebuild_indexes(seg, report)
            if not active:
                seg.load_state()
                seg.seal(next_base)   # it was sealed (or is a 0.2 seal): sealed again at once
        else:
            _check_tail(seg, report)  # an inactive one stays for the seal job (docs/spec.md §3.3)
    finally:
        seg.close()


def _tail_matches_index(seg: LogSegment) -> bool:
    """The last offset index entry points at a batch start whose last offset is the key, and the
    last time index entry (T, O) at the batch ending at O, whose largest timestamp is T (Kafka's
    meaning; a seglog 0.2 entry, O a next offset, fails this and the index is rebuilt)."""
    entry = seg.offset_index.last_entry()
    if entry is not None:
        offset, pos = entry
        header = _header_at(seg, pos)
        if header is None or header.last_offset != offset:
            return False
    tentry = seg.time_index.last_entry()
    if tentry is None:
        return True
    ts, offset = tentry
    try:
        pos, header, _ = seg.position_of(offset)
    except CorruptRecordError:
        return False
    return header is not None and header.last_offset == offset and header.max_timestamp == ts


def _header_at(seg: LogSegment, pos: int):
    if pos + BATCH_HEADER_SIZE > seg.size:
        return None
    try:
        return parse_header(seg.pread(pos, BATCH_HEADER_SIZE), 0)
    except CorruptRecordError:
        return None


def _check_tail(seg: LogSegment, report: list[str]) -> None:
    """Re-read the batches after the last index entry with their CRCs; cut a torn or bad tail."""
    entry = seg.offset_index.last_entry()
    start = entry[1] if entry else 0
    scan = seg.scan(start, seg.size, check_crc=True)
    if scan.valid_end < seg.size:
        if not len(scan.positions) and entry is not None:
            # The indexed batch itself is bad: where the good records end is known only from
            # the batches before it, so index the whole segment again (one read).
            rebuild_indexes(seg, report)
            return
        _cut_tail(seg, scan, report)


def _cut_tail(seg: LogSegment, scan, report: list[str]) -> None:
    # With no good batch, the scan started at the segment's start (see _check_tail).
    next_offset = int(scan.last_offsets[-1]) + 1 if len(scan.positions) else seg.base_offset
    dropped = seg.size - scan.valid_end
    report.append(f"{seg.log_path}: dropped a torn or corrupt tail of {dropped} bytes at position "
                  f"{scan.valid_end} (records from offset {next_offset} on): {scan.error}")
    seg.truncate_log(scan.valid_end)
    seg.truncate_indexes(next_offset)


def rebuild_indexes(seg: LogSegment, report: list[str]) -> None:
    """Empty both indexes and index every batch again, reading the log once (CRCs checked)."""
    seg.truncate_indexes(seg.base_offset)
    scan = seg.scan(0, seg.size, check_crc=True, strict=True)
    if scan.valid_end < seg.size:
        _cut_tail(seg, scan, report)
    seg.max_timestamp = -1
    seg.offset_of_max_timestamp = seg.base_offset - 1
    seg.first_timestamp = -1
    seg.bytes_since_index_entry = 0
    if not len(scan.positions):
        return
    # No msync/fsync here: an active segment's indexes need not be durable (recovery rebuilds what a
    # crash lost), and an inactive one is sealed next, which makes them durable (docs/spec.md §3.8).
    seg.index_scanned(scan)


# ---------------------------------------------------------------------- truncation
def truncation_intent(seg: LogSegment | None, offset: int) -> dict:
    """What a truncation to `offset` will do, decided before any file changes (docs/spec.md §3.6):
    `seg` is the segment that keeps the cut (None: everything goes, the log restarts at `offset`);
    a batch straddling the cut is rewritten here to keep its records below it."""
    if seg is None:
        return {"offset": offset, "segment": -1}
    pos, header, _ = seg.position_of(offset)
    rewritten = b""
    if header is not None and header.base_offset < offset:
        rewritten = _rewrite_straddling(seg, pos, header, offset)
    return {"offset": offset, "segment": seg.base_offset, "position": pos,
            "batch": base64.b64encode(rewritten).decode()}


def write_intent(dir_path: Path, intent: dict) -> None:
    """The intent is durable before anything changes: a crash after it is completed by recovery."""
    atomic_write(dir_path / TRUNCATE_INTENT, json.dumps(intent).encode())


@dataclass(frozen=True)
class TruncationResult:
    bases: list[int]          # the segments left, oldest first
    active_base: int          # the last of them, active again
    restarted: bool           # everything went: the log restarts empty at the cut


def _rewrite_straddling(seg: LogSegment, pos: int, header, offset: int) -> bytes:
    """The batch holding `offset` rewritten to keep only its records below it (new length, CRC)."""
    records = decode_batch(seg.pread(pos, header.size), 0)
    if any(r.offset != header.base_offset + i for i, r in enumerate(records)):
        return _rewrite_sparse(header, [r for r in records if r.offset < offset])
    keep = [Record(key=r.key, value=r.value, timestamp=r.timestamp, headers=r.headers)
            for r in records if r.offset < offset]
    append_time = header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME else None
    return encode_batch(header.base_offset, keep, append_time_ms=append_time)


def _rewrite_sparse(header, keep: list[Record]) -> bytes:
    """A cleaned batch (offset gaps inside it, docs/spec.md §3.9) cut before the truncation point:
    its kept records at their own offsets, its base offset, producer fields and delete horizon kept,
    the last offset now its last kept record's."""
    import numpy as np
    import pyarrow as pa

    from seglog.indexer.codec.batch_layout import COMPRESSION_CODEC_MASK, DELETE_HORIZON_FLAG_MASK
    from seglog.indexer.codec.columns import HEADER_TYPE, encode_sparse_batches

    ts = np.array([r.timestamp for r in keep], dtype=np.int64)
    horizon = header.attributes & DELETE_HORIZON_FLAG_MASK
    fields = {"base_offset": header.base_offset, "last_offset_delta": keep[-1].offset - header.base_offset,
              "leader_epoch": header.partition_leader_epoch, "attributes": header.attributes & ~COMPRESSION_CODEC_MASK,
              "base_timestamp": header.base_timestamp if horizon else int(ts[0]),
              "max_timestamp": header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME else int(ts.max()),
              "producer_id": header.producer_id, "producer_epoch": header.producer_epoch,
              "base_sequence": header.base_sequence}
    fields = {k: np.array([v], dtype=np.int64) for k, v in fields.items()}
    headers = pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in keep], type=HEADER_TYPE)
    data, _ = encode_sparse_batches(fields, np.array([0, len(keep)], dtype=np.int64),
                                    pa.array([r.key for r in keep], pa.binary()),
                                    pa.array([r.value for r in keep], pa.binary()),
                                    np.array([r.offset for r in keep], dtype=np.int64), ts, headers)
    return data


def finish_truncation(d: Path, config, topic: str | None, partition: int | None, intent: dict,
                      report: list[str]) -> TruncationResult:
    """Apply a truncation intent to the files; idempotent, so recovery can run it again after a
    crash. The caller holds the partition's lock and has closed its own segments."""
    offset = intent["offset"]
    bases = sorted(_log_bases(d))
    if intent["segment"] == -1:
        # Below the log start: everything goes and the log restarts empty at `offset`.
        for base in sorted(bases, reverse=True):
            rename_deleted(d, base)
        # The log start is lowered before the new segment appears: a reader lists the segments first
        # and reads the checkpoint after, so one that sees the new segment also sees its log start.
        if topic is not None:
            checkpoint.reset_log_start_offset(d.parent, topic, partition, offset)
        fd = open_in_root(segment_file(d, offset, LOG_SUFFIX), os.O_RDWR | os.O_CREAT, 0o644)
        os.close(fd)
        report.append(f"{d}: truncated fully, restarting at offset {offset}")
        keep, cut_base = [offset], offset
    else:
        cut_base = intent["segment"]
        for base in sorted(bases, reverse=True):  # from the top, so a crash leaves a prefix
            if base > cut_base:
                rename_deleted(d, base)
        log_path = segment_file(d, cut_base, LOG_SUFFIX)
        batch = base64.b64decode(intent["batch"])
        with os.fdopen(open_in_root(log_path, os.O_RDWR), "r+b") as fh:
            fh.truncate(intent["position"])
            if batch:
                fh.seek(intent["position"])
                fh.write(batch)
            fh.flush()
            os.fsync(fh.fileno())
        seg = LogSegment(d, cut_base, config, writable=True, active=True)
        seg.dense = not may_have_gaps(d, config)
        try:
            seg.truncate_indexes(offset)
            if not _tail_matches_index(seg) or seg.offset_index.sanity_check() or seg.time_index.sanity_check():
                rebuild_indexes(seg, report)
            seg.flush()
        finally:
            seg.close()
        keep = [b for b in bases if b <= cut_base]
        report.append(f"{d}: truncated to offset {offset}")
    fsync_dir(d)
    os.unlink(d / TRUNCATE_INTENT)
    fsync_dir(d)
    return TruncationResult(keep, cut_base, intent["segment"] == -1)
