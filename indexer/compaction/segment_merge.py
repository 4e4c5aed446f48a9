"""Merging small sealed segments into one (seglog's own, docs/spec.md §3.10): the plan, a pure function
of segment facts, and the file work, through the cleaner's crash-safe swap (indexer/compaction/clean_swap.py).

The sink's JVM writer publishes each large task output as its own segment, so a partition collects
many small sealed segments. Kafka never merges them; its cleaner groups segments by size
(groupSegmentsBySize) and swaps a group for one. A merge is that without the filter: the group's
`.log` bytes are concatenated unchanged (every batch keeps its offsets, CRC and leader epoch) and
both indexes are built again by the one index rule (`LogSegment.index_batch`), as an append of the
same batches to an empty segment would have built them.

A merge runs beside the writer (`merge_partition`) as a clean does (indexer/compaction/swap_gate.py):
each group built without the partition's lock, swapped in under it after a re-check.

Invariants kept here:
- Only sealed segments strictly below the active segment and wholly below the partition's committed
  end (the sink may still take back what is above it) are merged; never across the cleaner
  checkpoint (the cleaner's dirty section stays a run of whole segments).
- A merged segment could have come from the append path: its bytes within segment.bytes, its offsets
  within int32 of its base, its indexes within segment.index.bytes, and its timestamps within
  segment.ms of its first timestamp (the roll rule, docs/spec.md §3.2). So time retention judges it by
  a largest timestamp that an append could have given it.
- Records and their offsets never change: the merged segment starts at its group's first base and
  ends with its group's last batch, so `clean_swap`'s rule "a swap replaces [base, its next offset)"
  names exactly the group, and recovery needs nothing new.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from seglog.errors import CompactionError, OffsetOutOfRangeError
from seglog.indexer.compaction import clean_swap, swap_gate
from seglog.indexer.compaction.swap_gate import SwapGate
from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset, may_have_gaps
from seglog.indexer.fsutil import open_in_root
from seglog.indexer.locks import maintenance_lock
from seglog.indexer.names import CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file
from seglog.indexer.codec.records import BATCH_HEADER_SIZE, INT32_MAX, parse_header
from seglog.indexer.segment import LogSegment, sealed_summary

TXN_INDEX_SUFFIX = ".txnindex"      # Kafka's aborted transaction index: a merge cannot carry it
_OFFSET_ENTRY, _TIME_ENTRY = 8, 12
SMALL_KEY = "segment.merge.small.bytes"


@dataclass(frozen=True)
class MergeFacts:
    """One inactive segment as the plan sees it, oldest first."""
    base: int
    next_offset: int          # the next segment's base
    size: int
    first_timestamp: int      # of its first batch (-1: none)
    largest_timestamp: int    # -1: none
    index_entries: int
    time_index_entries: int
    mergeable: bool           # sealed, not empty, no .txnindex, timestamps on its records
    why_not: str = ""


@dataclass
class MergeResult:
    groups: list[list[int]] = field(default_factory=list)   # old segment bases per merged segment
    segments_merged: int = 0                                # old segments replaced
    bytes_merged: int = 0                                   # log bytes copied
    duration_ms: float = 0.0
    given_up: str | None = None                             # why a group was not swapped in
    lock_holds_ms: list[float] = field(default_factory=list)   # each hold of the partition's lock (swaps)

    @property
    def longest_lock_hold_ms(self) -> float:
        return max(self.lock_holds_ms, default=0.0)


def small_threshold(config) -> int:
    """segment.merge.small.bytes; -1 (the default) is half of segment.bytes, 0 turns merging off."""
    v = config[SMALL_KEY]
    return config["segment.bytes"] // 2 if v < 0 else v


def plan(facts: list[MergeFacts], config, *, end: int, breaks: tuple[int, ...] = ()) -> list[list[MergeFacts]]:
    """Groups of consecutive mergeable segments that each become one segment (see the module doc):
    greedy from the oldest, a group closed when the next segment would break a rule; only groups of
    two or more holding at least one segment smaller than `small_threshold` are kept. `facts` are the
    inactive segments; `end` the first offset nothing may be merged at or above; `breaks` offsets no
    merged segment may straddle (the cleaner checkpoint)."""
    small = small_threshold(config)
    if small <= 0:
        return []
    max_bytes, max_index, segment_ms = config["segment.bytes"], config["segment.index.bytes"], config["segment.ms"]
    out: list[list[MergeFacts]] = []
    group: list[MergeFacts] = []

    def close() -> None:
        if len(group) >= 2 and any(f.size < small for f in group):
            out.append(list(group))
        group.clear()

    for f in facts:
        if not f.mergeable or f.next_offset > end:
            close()
            continue
        if group:
            n = len(group) + 1
            # The index rule may add one entry per segment boundary, and the time index the seal entry.
            entries = sum(x.index_entries for x in group) + f.index_entries + n
            tentries = sum(x.time_index_entries for x in group) + f.time_index_entries + n + 1
            largest = max(max(x.largest_timestamp for x in group), f.largest_timestamp)
            if (f.base in breaks
                    or sum(x.size for x in group) + f.size > max_bytes
                    or entries * _OFFSET_ENTRY > max_index or tentries * _TIME_ENTRY > max_index
                    or f.next_offset - 1 - group[0].base > INT32_MAX
                    or largest - group[0].first_timestamp > segment_ms):
                close()
        group.append(f)
    close()
    return out


def segment_facts(log) -> list[MergeFacts]:
    """The plan's view of every inactive segment of `log`, sealed ones from their files alone."""
    from seglog.indexer.remote.metadata import mutable_from

    bases = log.segment_bases()
    tiered_end = mutable_from(log.path)      # a tiered segment is immutable (docs/tiered-storage.md §4)
    facts = []
    for i, base in enumerate(bases[:-1]):
        nxt = bases[i + 1]
        summary = sealed_summary(log.path, base, nxt)
        why = ""
        if base < tiered_end:
            why = "tiered (below the remote end)"
        elif summary is None:
            why = "not sealed"
        elif segment_file(log.path, base, TXN_INDEX_SUFFIX).exists():
            why = "has a .txnindex"
        elif summary.largest_timestamp < 0:
            why = "no record timestamps (retention judges it by its file's mtime)"
        if why:
            facts.append(MergeFacts(base, nxt, 0, -1, -1, 0, 0, False, why))
            continue
        stem = segment_file(log.path, base, "")
        with open(str(stem) + LOG_SUFFIX, "rb", buffering=0) as fh:
            head = fh.read(BATCH_HEADER_SIZE)
        h = parse_header(head, 0)
        first_ts = h.base_timestamp if h.base_timestamp >= 0 else h.max_timestamp
        # Sealed: both indexes trimmed to their entries (docs/spec.md §2.5).
        entries = os.stat(str(stem) + INDEX_SUFFIX).st_size // _OFFSET_ENTRY
        tentries = os.stat(str(stem) + TIME_INDEX_SUFFIX).st_size // _TIME_ENTRY
        facts.append(MergeFacts(base, nxt, summary.size, first_ts, summary.largest_timestamp, entries, tentries,
                                first_ts >= 0))
    return facts


def merge_end(log) -> int:
    """The first offset a merge may not reach: the active segment's base, or the sink's committed
    end (its high watermark) if lower, as the cleaner bounds itself (indexer/compaction/cleaner.py)."""
    from seglog.indexer.compaction.cleaner import committed_end

    end = log.segment_bases()[-1]
    committed = committed_end(log)
    return end if committed is None else min(end, committed)


def current_plan(log) -> list[list[MergeFacts]]:
    checkpoint = cleaner_offset(log.path)
    return plan(segment_facts(log), log.config, end=merge_end(log),
                breaks=() if checkpoint is None else (checkpoint,))


def merge_log(log, *, max_groups: int | None = None) -> MergeResult:
    """Merge `log`'s (writable: its lock held) small sealed segments by the plan; then reload its
    segments. `max_groups` bounds the work of one call (the sidecar's pass). The maintenance lock is
    tried once (never waited for while the partition's lock is held, indexer/locks.py)."""
    if log.readonly:
        raise CompactionError(f"{log.path}: merge_log takes a writable Log; merge_partition merges beside the writer")
    log.flush()
    with maintenance_lock(log.path).acquire(0):
        result = _merge(log, max_groups, SwapGate(log.path, None, held=True))
    if result.groups:
        log.reload_segments()
    return result


def merge_partition(path, config, *, max_groups: int | None = None, lock_timeout: float | None = None,
                    maintenance_timeout: float | None = 0) -> MergeResult:
    """Merge the partition folder `path`'s small sealed segments beside its writer: each group is
    built from a read-only view without the partition's lock, which is taken (waiting at most
    `lock_timeout`) for its swap only (indexer/compaction/swap_gate.py). MaintenanceLockedError when
    another cleaner or merger holds the partition past `maintenance_timeout` (0: try once)."""
    from seglog.indexer.log import Log

    with maintenance_lock(path).acquire(maintenance_timeout):
        clean_swap.remove_cleaned(Path(path))        # a crashed build's: ours now, the maintenance lock is held
        with Log.open(path, config, readonly=True) as view:
            return _merge(view, max_groups, SwapGate(Path(path), lock_timeout))


def _merge(log, max_groups: int | None, gate: SwapGate) -> MergeResult:
    started = time.perf_counter()
    result = MergeResult()
    try:
        groups = current_plan(log)
    except (FileNotFoundError, OffsetOutOfRangeError) as exc:   # retention beside the plan: the next pass plans again
        result.given_up = f"a segment went while the merge was planned: {exc}"
        return result
    if max_groups is not None:
        groups = groups[:max_groups]
    if not groups:
        return result
    clean_swap.remove_cleaned(log.path)
    dense = not may_have_gaps(log.path, log.config)
    for group in groups:
        result.given_up = _merge_group(log, group, dense, gate)
        if result.given_up is not None:
            break
        result.groups.append([f.base for f in group])
        result.segments_merged += len(group)
        result.bytes_merged += sum(f.size for f in group)
    result.lock_holds_ms = list(gate.holds_ms)
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


def _copy(src: Path, dst_fd: int, at: int) -> int:
    """Append `src`'s bytes to `dst_fd` at `at` in the kernel (copy_file_range: no bytes through Python)."""
    with open(src, "rb", buffering=0) as fh:
        n = os.fstat(fh.fileno()).st_size
        done = 0
        while done < n:
            k = os.copy_file_range(fh.fileno(), dst_fd, n - done, done, at + done)
            if k == 0:
                raise CompactionError(f"{src}: ended after {done} of {n} bytes while being merged")
            done += k
    return n


def _merge_group(log, group: list[MergeFacts], dense: bool, gate: SwapGate) -> str | None:
    """Build one group's merged segment as `.cleaned` files (no lock) and swap it in through `gate`;
    returns why the group was given up, or None when it is in."""
    d = log.path
    base, end = group[0].base, group[-1].next_offset
    try:
        snap = swap_gate.snapshot(d, [f.base for f in group], end)   # before copying: changes after it show
        _build_merged(log, group, dense)
    except FileNotFoundError as exc:      # retention or a truncation beside this build
        clean_swap.remove_cleaned(d)
        return f"group at {base}: a segment went while it was merged: {exc}"

    # 2-4. The cleaner's swap: `.swap` (the commit point), the group to `.deleted`, the swap in place.
    def swap() -> None:
        clean_swap.commit(d, base)
        from seglog.indexer.recovery import rename_deleted
        clean_swap.complete(d, base, rename_deleted, end)     # end: checked against the merged batches

    return gate.swap_in(snap, swap)


def _build_merged(log, group: list[MergeFacts], dense: bool) -> None:
    d = log.path
    base, end = group[0].base, group[-1].next_offset
    # 1. `<base>.*.cleaned`: the indexes created first and the .log last (a segment exists when its
    #    .log does), the .log the group's bytes back to back.
    for kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        os.close(open_in_root(segment_file(d, base, kind + CLEANED_SUFFIX), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644))
    log_out = segment_file(d, base, LOG_SUFFIX + CLEANED_SUFFIX)
    fd = open_in_root(log_out, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        at = 0
        for f in group:
            at += _copy(segment_file(d, f.base, LOG_SUFFIX), fd, at)
    finally:
        os.close(fd)
    # Indexes preallocated for what the group can need (the plan bounded it by segment.index.bytes).
    entries = sum(f.index_entries + f.time_index_entries + 2 for f in group) + 2
    small = log.config.with_overrides({"segment.index.bytes": min(log.config["segment.index.bytes"],
                                                                  max(24, entries * 12))})
    out = LogSegment(d, base, small, writable=True, active=True, file_suffix=CLEANED_SUFFIX)
    out.dense = dense
    try:
        _index(out)
        if out.next_offset != end:
            raise CompactionError(f"{d}: the merged segment at {base} ends at offset {out.next_offset}, not at its "
                                  f"group's end {end}: not swapped in")
        out.seal(end, durable=True)     # fsyncs the .log, writes the seal entry, trims and fsyncs the indexes
    finally:
        out.close()


def _index(seg: LogSegment) -> None:
    """Both indexes of the concatenated .log by the one index rule, over the batch headers (one
    strict scan: CRCs, offsets in order from the base, leader epochs), as recovery rebuilds them."""
    scan = seg.scan(0, seg.size, check_crc=True, strict=True)
    if scan.error or scan.valid_end != seg.size:
        raise CompactionError(f"{seg.log_path}: the merged bytes do not scan as whole batches "
                              f"({scan.error or 'short'}): not swapped in")
    if not len(scan.positions):
        raise CompactionError(f"{seg.log_path}: the merged segment holds no batch")
    seg.index_scanned(scan)
    seg.next_offset = int(scan.last_offsets[-1]) + 1
