"""One clean of a compacted partition (docs/spec.md §3.9), Kafka's Cleaner in small steps: the plan
(indexer/compaction/clean_plan.py), the offset map over the dirty section (indexer/compaction/offset_map.py), the filter
per chunk of batches (indexer/compaction/clean_batches.py) and the file work (indexer/compaction/clean_swap.py).

A clean runs beside the writer (`clean_partition`): it reads a read-only view without the partition's
lock and takes that lock only to swap each group in (indexer/compaction/swap_gate.py), under the
partition's maintenance lock (one cleaner or merger at a time, indexer/locks.py). `Log.clean` runs the
same steps with the partition's lock already held.

Invariants kept here:
- The active segment, every inactive segment not yet sealed, and everything from the first uncleanable
  offset on (which is also at most the sink's committed end) are never read for rewriting, let alone
  changed; nor is any segment below the partition's remote end (tiered: immutable, docs/tiered-storage.md
  §4), even when the topic was switched to `compact` after it was tiered.
- Surviving records keep their offsets; every cleaned segment keeps its group's first base and ends
  with its group's last batch, so segment bases and the next offset of each segment do not change.
- The cleaner checkpoint names the partition before the first swap (so readers know offsets may
  have gaps) and moves to the end of the mapped dirty part only after every group was swapped in; a
  group given up (its segments changed under the build) leaves it where it was.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from seglog.errors import CompactionError, CorruptRecordError, OffsetOutOfRangeError
from seglog.indexer.compaction import clean_plan, clean_swap, swap_gate
from seglog.indexer.compaction.swap_gate import SwapGate
from seglog.indexer.locks import maintenance_lock
from seglog.indexer.codec.batch_layout import TRANSACTIONAL_FLAG_MASK
from seglog.indexer.compaction.clean_batches import FilterContext, aborted_batches, filter_chunk, map_chunk
from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset, set_cleaner_offset
from seglog.indexer.names import CLEANED_SUFFIX
from seglog.indexer.remote.metadata import mutable_from
from seglog.indexer.compaction.offset_map import OffsetMapBuilder
from seglog.indexer.codec.records import BATCH_HEADER_SIZE, CONTROL_FLAG_MASK, NO_TIMESTAMP, parse_header
from seglog.indexer.segment import LogSegment, now_ms, read_checked
from seglog.indexer.transactions import TransactionFates

DEFAULT_DEDUPE_BUFFER_BYTES = 128 << 20     # Kafka's log.cleaner.dedupe.buffer.size default
# A segment that went under a build beside the writer (SegmentDeletedError is an OffsetOutOfRangeError).
_GONE = (FileNotFoundError, OffsetOutOfRangeError)


@dataclass
class CleanResult:
    plan: clean_plan.CleanPlan
    cleaned: bool = False
    first_dirty_after: int | None = None   # the new cleaner checkpoint
    bytes_read: int = 0                    # log bytes of the segments rewritten
    bytes_written: int = 0
    dirty_bytes_cleaned: int = 0           # bytes of the dirty segments the map covered
    records_read: int = 0
    records_removed: int = 0
    groups: list[list[int]] = field(default_factory=list)   # old segment bases per cleaned segment
    map_entries: int = 0
    map_bytes: int = 0
    map_peak_bytes: int = 0
    duration_ms: float = 0.0
    given_up: str | None = None            # why the clean stopped before its checkpoint moved
    lock_holds_ms: list[float] = field(default_factory=list)   # each hold of the partition's lock (swaps)

    @property
    def longest_lock_hold_ms(self) -> float:
        return max(self.lock_holds_ms, default=0.0)


def segment_facts(log) -> list[clean_plan.CleanFacts]:
    """The plan's view of every segment, oldest first."""
    bases = log.segment_bases()
    facts = []
    for i, base in enumerate(bases):
        seg = log.segment(base)
        size, largest, _, _ = log.segment_facts(i)
        nxt = bases[i + 1] if i + 1 < len(bases) else log.log_end_offset
        first_ts = NO_TIMESTAMP
        if seg.size >= BATCH_HEADER_SIZE:
            try:
                h = parse_header(seg.pread(0, BATCH_HEADER_SIZE), 0)
            except CorruptRecordError as exc:       # a fault names its file (issue 37)
                raise CorruptRecordError(f"{seg.log_path}: {exc}") from None
            first_ts = h.base_timestamp if h.base_timestamp >= 0 else h.max_timestamp
        facts.append(clean_plan.CleanFacts(base, nxt, size, largest, first_ts, seg.offset_index.entries,
                                           seg.time_index.entries))
    return facts


def committed_end(log) -> int | None:
    """The sink's committed end of this partition (its high watermark), when the topic has a commit
    log: nothing at or above it is cleaned, since the sink may still take it back (as Kafka cleans
    nothing past the last stable offset, which is at most the high watermark)."""
    if log.topic is None:
        return None
    from seglog.indexer.commit_log import CommitLog

    ends = CommitLog(log.path.parent, log.topic).end_offsets()
    return ends.get(log.partition, 0) if ends else None


def _first_unstable(log) -> int | None:
    """Where cleaning stops besides the active segment and the lag: the sink's committed end, and the
    first inactive segment not sealed (a clean beside the writer reads only sealed segments, whose
    files no append or seal changes)."""
    end = committed_end(log)
    bases = log.segment_bases()
    for i, base in enumerate(bases[:-1]):
        if not log.segment_facts(i)[3]:
            return base if end is None else min(end, base)
    return end


def current_plan(log, now: int | None = None) -> clean_plan.CleanPlan:
    """What a clean would cover now (`seglog describe`, the metrics)."""
    return clean_plan.plan(segment_facts(log), log.config, checkpoint=cleaner_offset(log.path),
                           log_start=log.log_start_offset, now=now_ms() if now is None else now,
                           first_unstable=_first_unstable(log), tiered_end=mutable_from(log.path))


def _chunks_with_last(seg: LogSegment):
    """read_checked's chunks of the whole segment, each with a flag: is it the segment's last."""
    prev = None
    for item in read_checked(seg, 0, seg.base_offset - 1):
        if prev is not None:
            yield prev, False
        prev = item
    if prev is not None:
        yield prev, True


@contextlib.contextmanager
def _naming(seg: LogSegment, pos: int):
    """A record fault the decoders find in a chunk (they know positions in the chunk only) named with the
    segment's file and the chunk's position in it."""
    try:
        yield
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"{seg.log_path}: in the batches read from position {pos}: {exc}") from exc


def _open_transaction(scan, fates) -> bool:
    attrs = scan.attributes
    for k in ((attrs & TRANSACTIONAL_FLAG_MASK != 0) & (attrs & CONTROL_FLAG_MASK == 0)).nonzero()[0].tolist():
        h = scan.headers[k]
        if fates.fate(h.producer_id, h.base_offset) is None:
            return True
    return False


def clean_log(log, *, now: int | None = None, dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
              force: bool = False) -> CleanResult:
    """Clean `log` (writable: its lock held; compacted) once if due (always with `force`, still within
    the lags), then reload its segments: `Log.clean`. The maintenance lock is tried once (a cleaner
    beside the writer may hold it and wait for this lock: never wait here, indexer/locks.py)."""
    if log.readonly:
        raise CompactionError(f"{log.path}: clean_log takes a writable Log; clean_partition cleans beside the writer")
    with maintenance_lock(log.path).acquire(0):
        result = _clean(log, now, dedupe_buffer_bytes, force, SwapGate(log.path, None, held=True))
    if result.groups:
        log.reload_segments()
    return result


def clean_partition(path, config, *, now: int | None = None,
                    dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES, force: bool = False,
                    lock_timeout: float | None = None, maintenance_timeout: float | None = 0) -> CleanResult:
    """Clean the partition folder `path` once if due, beside its writer: the output is built from a
    read-only view without the partition's lock, which is taken (waiting at most `lock_timeout`) for
    each group's swap only (indexer/compaction/swap_gate.py). MaintenanceLockedError when another
    cleaner or merger holds the partition past `maintenance_timeout` (0: try once)."""
    from seglog.indexer.log import Log

    with maintenance_lock(path).acquire(maintenance_timeout):
        clean_swap.remove_cleaned(Path(path))        # a crashed build's: ours now, the maintenance lock is held
        with Log.open(path, config, readonly=True) as view:
            return _clean(view, now, dedupe_buffer_bytes, force, SwapGate(Path(path), lock_timeout))


def _clean(log, now: int | None, dedupe_buffer_bytes: int, force: bool, gate: SwapGate) -> CleanResult:
    started = time.perf_counter()
    now = now_ms() if now is None else now
    cfg = log.config
    if not cfg.compacted:
        raise CompactionError(f"{log.path}: cleanup.policy is {cfg['cleanup.policy']!r}; only a compacted "
                              f"topic (compact or compact,delete) is cleaned")
    if not log.readonly:
        log.flush()
    checkpoint = cleaner_offset(log.path)
    # Read once, under the maintenance lock the tier job also takes: it cannot move during this clean.
    tiered_end = mutable_from(log.path)
    try:
        facts = segment_facts(log)
        first_unstable = _first_unstable(log)
    except _GONE as exc:       # retention beside the plan (a view's segment went): the next clean plans again
        result = CleanResult(clean_plan.plan([], cfg, checkpoint=checkpoint, log_start=log.log_start_offset, now=now,
                                             tiered_end=tiered_end))
        result.given_up = f"a segment went while the clean was planned: {exc}"
        return result
    plan = clean_plan.plan(facts, cfg, checkpoint=checkpoint, log_start=log.log_start_offset, now=now,
                           first_unstable=first_unstable, tiered_end=tiered_end)
    result = CleanResult(plan)
    if not plan.dirty_bytes or not (plan.due or force):
        return result
    if checkpoint is None:
        set_cleaner_offset(log.path, plan.first_dirty)   # before any gap exists (cleaner_checkpoint.py)
    log.allow_offset_gaps()
    fates = TransactionFates(log._control_markers)
    try:
        inodes = swap_gate.log_inodes(log.path, [f.base for f in facts])   # before reading: see swap_gate
    except FileNotFoundError as exc:
        result.given_up = f"a segment went before the clean read it: {exc}"
        return result

    # 1. The offset map over the dirty section, whole segments, within the budget.
    builder = OffsetMapBuilder(dedupe_buffer_bytes, plan.first_dirty, most_bytes=plan.dirty_bytes)
    open_txn = False
    try:
        for f in facts[:-1]:
            if f.base < plan.first_dirty or f.next_offset > plan.first_uncleanable:
                continue
            seg = log.segment(f.base)
            for pos, buf, scan in read_checked(seg, 0, seg.base_offset - 1):
                if _open_transaction(scan, fates):
                    open_txn = True       # Kafka cleans only below the first unstable offset
                    break
                with _naming(seg, pos):
                    map_chunk(buf, scan, aborted_batches(scan, fates), plan.first_dirty, builder)
            if open_txn:
                builder.drop_segment()
                break
            if not builder.end_segment(f.next_offset):
                break
            result.dirty_bytes_cleaned += f.size
    except _GONE as exc:      # retention or a truncation beside this build: the next clean plans again
        result.given_up = f"a segment went while its keys were mapped: {exc}"
        return result
    result.map_peak_bytes = builder.peak_bytes
    if builder.end == plan.first_dirty and open_txn:
        return result          # an open transaction in the first dirty segment: nothing cleanable yet
    if builder.end == plan.first_dirty:
        raise CompactionError(f"{log.path}: the dedupe buffer ({dedupe_buffer_bytes} bytes, "
                              f"log.cleaner.dedupe.buffer.size) cannot hold the keys of the first dirty "
                              f"segment at offset {plan.first_dirty}; raise it")
    latest = builder.build()
    result.map_entries, result.map_bytes = latest.size, latest.memory_bytes
    ctx = FilterContext(latest, now, cfg["delete.retention.ms"])

    # 2. Every group from the log start to the map's end, rewritten (no lock) and swapped in (the
    #    partition's lock, one group at a time). A group given up ends the clean: the checkpoint stays.
    clean_swap.remove_cleaned(log.path)
    for group in clean_plan.groups(facts, latest.end, cfg, tiered_end):
        guard = (latest.end, inodes[latest.end])
        result.given_up = _clean_group(log, group, ctx, fates, result, gate, inodes, guard)
        if result.given_up is not None:
            break
    result.lock_holds_ms = list(gate.holds_ms)
    result.duration_ms = (time.perf_counter() - started) * 1000
    if result.given_up is not None:
        return result
    set_cleaner_offset(log.path, latest.end)      # only after every group is in
    result.cleaned = True
    result.first_dirty_after = latest.end
    return result


def _clean_group(log, group: list[clean_plan.CleanFacts], ctx: FilterContext, fates, result: CleanResult,
                 gate: SwapGate, inodes: dict[int, int], guard: tuple[int, int]) -> str | None:
    """Rewrite one group into `.cleaned` files and swap them in through `gate`; returns why the group
    was given up, or None when it is in."""
    d = log.path
    base, end = group[0].base, group[-1].next_offset
    try:
        snap = swap_gate.snapshot(d, [f.base for f in group], end, guard)   # before reading: changes after it show
    except FileNotFoundError as exc:
        return f"group at {base}: a segment went before its rewrite: {exc}"
    if [ino for ino, _, _ in snap.files] != [inodes[f.base] for f in group]:
        return f"group at {base}: a segment was replaced since the clean began (a truncation)"
    # Indexes preallocated for what the group can need (the plan bounded it by segment.index.bytes),
    # not the full segment.index.bytes: trimming a large preallocation costs more than the rewrite.
    entries = sum(f.index_entries + f.time_index_entries + 2 for f in group) + 2
    small = log.config.with_overrides({"segment.index.bytes": min(log.config["segment.index.bytes"],
                                                                  max(24, entries * 12))})
    stats = [0, 0, 0, 0]     # bytes read, records read, records removed, bytes written
    try:
        out = LogSegment(d, base, small, writable=True, active=True, create=True, file_suffix=CLEANED_SUFFIX)
        try:
            for k, f in enumerate(group):
                seg = log.segment(f.base)
                stats[0] += seg.size
                for (pos, buf, scan), last_chunk in _chunks_with_last(seg):
                    with _naming(seg, pos):
                        chunk = filter_chunk(buf, scan, ctx, aborted_batches(scan, fates),
                                             keep_last=last_chunk and k == len(group) - 1)
                    stats[1] += chunk.records_read
                    stats[2] += chunk.records_read - chunk.records_kept
                    if chunk.num_batches:
                        out.append(chunk, 0, chunk.num_batches)
            if out.next_offset != end:
                raise CompactionError(f"{d}: the cleaned segment at {base} ends at {out.next_offset}, not at its "
                                      f"group's end {end}: not swapped in")
            out.seal(end, durable=True)
            stats[3] = out.size
        finally:
            out.close()
    except _GONE as exc:       # retention or a truncation beside this build
        clean_swap.remove_cleaned(d)
        return f"group at {base}: a segment went while it was rewritten: {exc}"

    def swap() -> None:
        clean_swap.commit(d, base)
        from seglog.indexer.recovery import rename_deleted
        clean_swap.complete(d, base, rename_deleted, end)     # end: checked above against the cleaned batches

    why = gate.swap_in(snap, swap)
    if why is None:
        result.bytes_read += stats[0]
        result.records_read += stats[1]
        result.records_removed += stats[2]
        result.bytes_written += stats[3]
        result.groups.append([f.base for f in group])
    return why
