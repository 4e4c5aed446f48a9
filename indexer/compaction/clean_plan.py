"""The cleaner's plan (docs/spec.md §3.9): pure functions of segment facts, as Kafka's LogCleanerManager
and Cleaner decide, with no file work.

- The dirty section starts at the first dirty offset (the cleaner checkpoint, reset to the log start
  when it is below it or past the log end) and ends at the first uncleanable offset: the active
  segment's base, the first unstable offset (an open transaction), and the base of the first
  segment whose largest timestamp is within `min.compaction.lag.ms` of now, whichever comes first.
- The dirty ratio is dirty bytes / (clean bytes + dirty bytes), both over whole segments.
- A clean is due when the ratio exceeds `min.cleanable.dirty.ratio` (strictly, as Kafka), or when the first dirty
  segment's first timestamp is older than `max.compaction.lag.ms` (that lag forces a clean).
- What is tiered is immutable (docs/tiered-storage.md §4): below the partition's remote end nothing is
  rewritten, mapped or counted; the plan starts there as if it were the log start.
- Groups: consecutive segments from the log start (or the remote end) up to the end of the mapped dirty part, merged
  while their bytes stay within `segment.bytes` and their index entries within `segment.index.bytes`
  (Kafka's groupSegmentsBySize), and their offsets within int32 of the group's base.
"""
from __future__ import annotations

from dataclasses import dataclass

INT32_MAX = (1 << 31) - 1
_OFFSET_ENTRY, _TIME_ENTRY = 8, 12


@dataclass(frozen=True)
class CleanFacts:
    """One segment as the plan sees it, oldest first (the last is the active segment)."""
    base: int
    next_offset: int              # the next segment's base (the log end for the active one)
    size: int
    largest_timestamp: int        # -1: none
    first_timestamp: int          # of its first batch, -1: none
    index_entries: int            # offset index entries
    time_index_entries: int


@dataclass(frozen=True)
class CleanPlan:
    first_dirty: int              # where the dirty section starts
    first_uncleanable: int        # where it ends (exclusive)
    clean_bytes: int
    dirty_bytes: int
    due: bool
    reason: str                   # why due, or why not

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def first_dirty_offset(checkpoint: int | None, log_start: int, log_end: int) -> int:
    """Kafka's rule: the checkpoint, unless it is missing, below the log start or past the log end."""
    if checkpoint is None or checkpoint < log_start or checkpoint > log_end:
        return log_start
    return checkpoint


def plan(facts: list[CleanFacts], config, *, checkpoint: int | None, log_start: int, now: int,
         first_unstable: int | None = None, tiered_end: int = 0) -> CleanPlan:
    """What a clean of these segments would cover now, and whether one is due. `tiered_end`: the
    partition's remote end (indexer/remote/metadata.py mutable_from), below which nothing is cleaned."""
    log_start = max(log_start, tiered_end)     # tiered segments are neither clean nor dirty: immutable
    if not facts:
        return CleanPlan(log_start, log_start, 0, 0, False, "empty log")
    log_end = facts[-1].next_offset
    first_dirty = first_dirty_offset(checkpoint, log_start, log_end)
    uncleanable = facts[-1].base                      # the active segment is never cleaned
    if first_unstable is not None:
        uncleanable = min(uncleanable, first_unstable)
    lag = config["min.compaction.lag.ms"]
    for f in facts[:-1]:
        if f.next_offset > first_dirty and f.largest_timestamp > now - lag:
            uncleanable = min(uncleanable, f.base)    # records younger than the minimum lag stay
            break
    # Whole segments only: a segment counts as dirty when it lies in [first_dirty, uncleanable).
    clean = sum(f.size for f in facts[:-1] if f.next_offset <= first_dirty and f.next_offset > log_start)
    dirty_segs = [f for f in facts[:-1] if f.base >= first_dirty and f.next_offset <= uncleanable]
    dirty = sum(f.size for f in dirty_segs)
    if not dirty_segs:
        return CleanPlan(first_dirty, uncleanable, clean, 0, False, "no cleanable dirty segment")
    ratio = dirty / (clean + dirty) if clean + dirty else 0.0
    first_ts = next((f.first_timestamp for f in dirty_segs if f.first_timestamp >= 0), -1)
    max_lag = config["max.compaction.lag.ms"]
    if 0 <= first_ts < now - max_lag:
        return CleanPlan(first_dirty, uncleanable, clean, dirty, True, "max.compaction.lag.ms passed")
    if ratio > config["min.cleanable.dirty.ratio"]:
        return CleanPlan(first_dirty, uncleanable, clean, dirty, True, "dirty ratio reached")
    return CleanPlan(first_dirty, uncleanable, clean, dirty, False,
                     f"dirty ratio {ratio:.3f} below min.cleanable.dirty.ratio")


def groups(facts: list[CleanFacts], end: int, config, tiered_end: int = 0) -> list[list[CleanFacts]]:
    """Consecutive inactive segments with next offset <= `end`, none below `tiered_end` (tiered: never
    rewritten), in groups that each become one cleaned segment: bytes within segment.bytes, index entries
    within segment.index.bytes (with room for one entry per merged segment and the seal entry: a rewrite
    may index a little differently)."""
    max_bytes = config["segment.bytes"]
    max_index = config["segment.index.bytes"]
    segs = [f for f in facts[:-1] if f.next_offset <= end and f.base >= tiered_end]
    out: list[list[CleanFacts]] = []
    for f in segs:
        if out:
            g = out[-1]
            n = len(g) + 1
            entries = sum(x.index_entries for x in g) + f.index_entries + n
            tentries = sum(x.time_index_entries for x in g) + f.time_index_entries + n + 1
            if (sum(x.size for x in g) + f.size <= max_bytes
                    and entries * _OFFSET_ENTRY <= max_index and tentries * _TIME_ENTRY <= max_index
                    and f.next_offset - 1 - g[0].base <= INT32_MAX):
                g.append(f)
                continue
        out.append([f])
    return out
