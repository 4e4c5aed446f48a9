"""Retention (docs/spec.md §3.7): which of the oldest segments go, by time and by size.

Time: walk from the oldest segment; delete while its largest timestamp (or mtime where it has
none) is older than now - retention.ms; stop at the first that is not (docs/spec.md §3.7), so a segment is
never deleted while an older one is kept. Size: delete the oldest while what remains is still at
least retention.bytes (Kafka's rule). The active segment counts toward size; it is deleted only
after being rolled, which happens here when every segment has expired.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetentionResult:
    deleted_bases: list[int] = field(default_factory=list)
    log_start_offset: int = 0
    blocked_by: int | None = None     # a far-future timestamp that holds retention back


def expired_by_time(timestamps: list[int], now: int, retention_ms: int) -> int:
    """How many leading segments have expired (stop at the first one that has not)."""
    if retention_ms < 0:
        return 0
    count = 0
    for ts in timestamps:
        if now - ts > retention_ms:
            count += 1
        else:
            break
    return count


def excess_by_size(sizes: list[int], retention_bytes: int) -> int:
    """How many leading segments can go while the rest still holds at least retention_bytes."""
    if retention_bytes < 0:
        return 0
    remaining = sum(sizes)
    count = 0
    for size in sizes:
        if remaining - size >= retention_bytes:
            remaining -= size
            count += 1
        else:
            break
    return count


@dataclass(frozen=True)
class SegmentFacts:
    """What retention judges about one segment, oldest first."""
    size: int
    judged_timestamp: int | None   # largest timestamp, or mtime where it has none; None when empty


@dataclass(frozen=True)
class RetentionPlan:
    """What to do: delete the `count` oldest segments, rolling the active one first if it goes."""
    count: int
    roll_active: bool
    blocked_by: int | None


def judged_timestamp(size: int, largest: int, mtime_ms: int) -> int | None:
    """The one rule for the timestamp retention judges a segment by (docs/spec.md §3.7): its
    largest timestamp; its file's mtime where no record has one (KIP-33 migration); none when empty."""
    if size == 0:
        return None
    return largest if largest >= 0 else mtime_ms


def plan(facts: list[SegmentFacts], config, now: int) -> RetentionPlan:
    """Pure: which of the oldest segments retention removes now, from their facts alone."""
    timestamps = [f.judged_timestamp for f in facts]
    if "delete" not in config["cleanup.policy"].split(","):
        return RetentionPlan(0, False, None)    # compact alone: the cleaner, never retention, removes records
    # An empty active segment neither expires nor holds bytes: it is where the next append goes.
    live = [t for t in timestamps if t is not None]
    by_time = expired_by_time(live, now, config["retention.ms"])
    by_size = excess_by_size([f.size for f in facts if f.judged_timestamp is not None], config["retention.bytes"])
    count = max(by_time, by_size)
    # Only the last segment can be empty (a roll needs records); `count` counts non-empty ones.
    roll = count > 0 and count == len(facts) and timestamps[-1] is not None
    return RetentionPlan(count, roll, blocked_by(timestamps, now, config["retention.ms"]))


def blocked_by(timestamps: list[int | None], now: int, retention_ms: int) -> int | None:
    """The timestamp in the future (later than now) at which the retention walk stops, if any:
    such a record keeps every later segment, however old, until its time comes."""
    if retention_ms < 0:
        return None
    for ts in timestamps:
        if ts is None:
            continue
        if now - ts > retention_ms:
            continue
        return ts if ts > now else None
    return None
