"""Retention (docs/spec.md §3.7): which of the oldest segments go, by time and by size.

Time: walk from the oldest segment; delete while its largest timestamp (or mtime where it has
none) is older than now - retention.ms; stop at the first that is not (docs/spec.md §3.7), so a segment is
never deleted while an older one is kept. Size: delete the oldest while what remains is still at
least retention.bytes (Kafka's rule). The active segment counts toward size; it is deleted only
after being rolled, which happens here when every segment has expired.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seglog.indexer.log import Log


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


def _sizes_and_timestamps(log: "Log") -> tuple[list[int], list[int | None]]:
    """Each segment's size and the timestamp retention judges (None for an empty segment), read
    once per segment (a sealed one from its files alone)."""
    sizes, timestamps = [], []
    for i in range(len(log._bases)):
        size, largest, mtime, _ = log.segment_facts(i)
        sizes.append(size)
        timestamps.append(None if size == 0 else (largest if largest >= 0 else mtime))
    return sizes, timestamps


def apply(log: "Log", now: int) -> RetentionResult:
    cfg = log.config
    bases = list(log._bases)
    sizes, timestamps = _sizes_and_timestamps(log)
    # An empty active segment neither expires nor holds bytes: it is where the next append goes.
    live = [t for t in timestamps if t is not None]
    by_time = expired_by_time(live, now, cfg["retention.ms"])
    by_size = excess_by_size([s for s, t in zip(sizes, timestamps) if t is not None], cfg["retention.bytes"])
    count = max(by_time, by_size)
    blocked = blocked_by(log, now, timestamps)
    if count == 0:
        return RetentionResult([], log.log_start_offset, blocked)
    # Only the last segment can be empty (a roll needs records); `count` counts non-empty ones.
    if count == len(bases) and timestamps[-1] is not None:
        log.roll()  # the active segment is deleted only once rolled: a new empty one takes its place
    deleted = log._bases[:count]
    log._delete_oldest(count)
    return RetentionResult(deleted, log.log_start_offset, blocked)


def blocked_by(log: "Log", now: int, timestamps: list[int | None] | None = None) -> int | None:
    """The timestamp in the future (later than now) at which the retention walk stops, if any:
    such a record keeps every later segment, however old, until its time comes."""
    if log.config["retention.ms"] < 0:
        return None
    timestamps = _sizes_and_timestamps(log)[1] if timestamps is None else timestamps
    for ts in timestamps:
        if ts is None:
            continue
        if now - ts > log.config["retention.ms"]:
            continue
        return ts if ts > now else None
    return None
