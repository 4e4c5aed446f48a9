"""One clean of a compacted partition (docs/spec.md §3.9), Kafka's Cleaner in small steps: the plan
(indexer/compaction/clean_plan.py), the offset map over the dirty section (indexer/compaction/offset_map.py), the filter
per chunk of batches (indexer/compaction/clean_batches.py) and the file work (indexer/compaction/clean_swap.py).

Invariants kept here:
- The active segment and everything from the first uncleanable offset on (which is also at most
  the sink's committed end) are never read for rewriting, let alone changed.
- Surviving records keep their offsets; every cleaned segment keeps its group's first base and ends
  with its group's last batch, so segment bases and the next offset of each segment do not change.
- The cleaner checkpoint names the partition before the first swap (so readers know offsets may
  have gaps) and moves to the end of the mapped dirty part only after every group was swapped in.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from seglog.errors import CompactionError
from seglog.indexer.compaction import clean_plan, clean_swap
from seglog.indexer.codec.batch_layout import TRANSACTIONAL_FLAG_MASK
from seglog.indexer.compaction.clean_batches import FilterContext, aborted_batches, filter_chunk, map_chunk
from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset, set_cleaner_offset
from seglog.indexer.names import CLEANED_SUFFIX
from seglog.indexer.compaction.offset_map import OffsetMapBuilder
from seglog.indexer.codec.records import BATCH_HEADER_SIZE, CONTROL_FLAG_MASK, NO_TIMESTAMP, parse_header
from seglog.indexer.segment import LogSegment, now_ms, read_checked
from seglog.indexer.transactions import TransactionFates

DEFAULT_DEDUPE_BUFFER_BYTES = 128 << 20     # Kafka's log.cleaner.dedupe.buffer.size default


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
            h = parse_header(seg.pread(0, BATCH_HEADER_SIZE), 0)
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


def current_plan(log, now: int | None = None) -> clean_plan.CleanPlan:
    """What a clean would cover now (`seglog describe`, the metrics)."""
    return clean_plan.plan(segment_facts(log), log.config, checkpoint=cleaner_offset(log.path),
                           log_start=log.log_start_offset, now=now_ms() if now is None else now,
                           first_unstable=committed_end(log))


def _chunks_with_last(seg: LogSegment):
    """read_checked's chunks of the whole segment, each with a flag: is it the segment's last."""
    prev = None
    for item in read_checked(seg, 0, seg.base_offset - 1):
        if prev is not None:
            yield prev, False
        prev = item
    if prev is not None:
        yield prev, True


def _open_transaction(scan, fates) -> bool:
    attrs = scan.attributes
    for k in ((attrs & TRANSACTIONAL_FLAG_MASK != 0) & (attrs & CONTROL_FLAG_MASK == 0)).nonzero()[0].tolist():
        h = scan.headers[k]
        if fates.fate(h.producer_id, h.base_offset) is None:
            return True
    return False


def clean_log(log, *, now: int | None = None, dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
              force: bool = False) -> CleanResult:
    """Clean `log` (writable, compacted) once if due (always with `force`, still within the lags).
    `Log.clean` calls this and then reloads its segments."""
    started = time.perf_counter()
    now = now_ms() if now is None else now
    cfg = log.config
    if not cfg.compacted:
        raise CompactionError(f"{log.path}: cleanup.policy is {cfg['cleanup.policy']!r}; only a compacted "
                              f"topic (compact or compact,delete) is cleaned")
    log.flush()
    facts = segment_facts(log)
    checkpoint = cleaner_offset(log.path)
    plan = clean_plan.plan(facts, cfg, checkpoint=checkpoint, log_start=log.log_start_offset, now=now,
                           first_unstable=committed_end(log))
    result = CleanResult(plan)
    if not plan.dirty_bytes or not (plan.due or force):
        return result
    if checkpoint is None:
        set_cleaner_offset(log.path, plan.first_dirty)   # before any gap exists (cleaner_checkpoint.py)
    log.allow_offset_gaps()
    fates = TransactionFates(log._control_markers)

    # 1. The offset map over the dirty section, whole segments, within the budget.
    builder = OffsetMapBuilder(dedupe_buffer_bytes, plan.first_dirty, most_bytes=plan.dirty_bytes)
    open_txn = False
    for f in facts[:-1]:
        if f.base < plan.first_dirty or f.next_offset > plan.first_uncleanable:
            continue
        seg = log.segment(f.base)
        for _, buf, scan in read_checked(seg, 0, seg.base_offset - 1):
            if _open_transaction(scan, fates):
                open_txn = True       # Kafka cleans only below the first unstable offset
                break
            map_chunk(buf, scan, aborted_batches(scan, fates), plan.first_dirty, builder)
        if open_txn:
            builder.drop_segment()
            break
        if not builder.end_segment(f.next_offset):
            break
        result.dirty_bytes_cleaned += f.size
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

    # 2. Every group from the log start to the map's end, rewritten and swapped in one at a time.
    clean_swap.remove_cleaned(log.path)
    for group in clean_plan.groups(facts, latest.end, cfg):
        _clean_group(log, group, ctx, fates, result)
    set_cleaner_offset(log.path, latest.end)
    log.reload_segments()
    result.cleaned = True
    result.first_dirty_after = latest.end
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


def _clean_group(log, group: list[clean_plan.CleanFacts], ctx: FilterContext, fates, result: CleanResult) -> None:
    d = log.path
    base, end = group[0].base, group[-1].next_offset
    # Indexes preallocated for what the group can need (the plan bounded it by segment.index.bytes),
    # not the full segment.index.bytes: trimming a large preallocation costs more than the rewrite.
    entries = sum(f.index_entries + f.time_index_entries + 2 for f in group) + 2
    small = log.config.with_overrides({"segment.index.bytes": min(log.config["segment.index.bytes"],
                                                                  max(24, entries * 12))})
    out = LogSegment(d, base, small, writable=True, active=True, create=True, file_suffix=CLEANED_SUFFIX)
    try:
        for k, f in enumerate(group):
            seg = log.segment(f.base)
            result.bytes_read += seg.size
            for (_, buf, scan), last_chunk in _chunks_with_last(seg):
                chunk = filter_chunk(buf, scan, ctx, aborted_batches(scan, fates),
                                     keep_last=last_chunk and k == len(group) - 1)
                result.records_read += chunk.records_read
                result.records_removed += chunk.records_read - chunk.records_kept
                if chunk.num_batches:
                    out.append(chunk, 0, chunk.num_batches)
        if out.next_offset != end:
            raise CompactionError(f"{d}: the cleaned segment at {base} ends at {out.next_offset}, not at its "
                                  f"group's end {end}: not swapped in")
        out.seal(end, durable=True)
        result.bytes_written += out.size
    finally:
        out.close()
    clean_swap.commit(d, base)
    from seglog.indexer.recovery import rename_deleted
    clean_swap.complete(d, base, rename_deleted)
    result.groups.append([f.base for f in group])
