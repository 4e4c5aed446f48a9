"""What the long-running sidecar remembers of a partition between passes, so that a steady pass skips
the partitions with nothing to do without opening them (no lock, no recovery): a pass then costs
O(partitions that changed), plus two stats per partition.

A memo is taken after a job closed the partition: the folder's signature (its mtime, and the active
segment's `.log` size and mtime: an append changes the file, a roll, swap, truncation or deletion the
folder) and, per job, the wall-clock time from which it may have work even if no file changes
(`due_ms`): roll by segment.ms, retention by time, purge after file.delete.delay.ms. A job with work
whatever the time (an unsealed inactive segment for the seal job; a compacted topic's clean, whose
dirty ratio is the cleaner's to judge; a far-future timestamp holding retention back) is due at once.

Invariant: a partition is skipped only when its signature is the memo's, the signature is not too
close to when it was taken (a change in the same clock tick as the observation would keep the mtime:
such a memo counts as changed, `MTIME_SLACK_NS`), its topic configuration is the memo's, and no job of
the pass is due. Anything else opens the partition as before.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from seglog.indexer.names import DELETED_SUFFIX

# Filesystems stamp mtimes from a coarse clock (a kernel tick; whole seconds on some network
# filesystems): a folder changed within this long of the observation may keep the mtime it had.
MTIME_SLACK_NS = 2_000_000_000
NOW = 0                      # due at once
NEVER = float("inf")         # not due until a file changes


@dataclass(frozen=True)
class Memo:
    active_base: int
    signature: tuple[int, ...]
    observed_ns: int                 # wall clock just after the signature was taken
    config: Mapping[str, Any]
    due_ms: Mapping[str, float]      # job -> from when it may have work without a file changing


def signature(partition_dir: str, active_base: int) -> tuple[int, ...] | None:
    """(folder mtime, active .log size, active .log mtime, and both inodes: a folder or file replaced
    by another is a change), mtimes in ns; None when either is gone."""
    try:
        d = os.stat(partition_dir)
        a = os.stat(os.path.join(partition_dir, f"{active_base:020d}.log"))
    except FileNotFoundError:
        return None
    return d.st_mtime_ns, a.st_size, a.st_mtime_ns, d.st_ino, a.st_ino


def take(partition_dir: str, active_base: int, config: Mapping[str, Any],
         due_ms: Mapping[str, float], clock_ns) -> Memo | None:
    sig = signature(partition_dir, active_base)
    if sig is None:
        return None
    return Memo(active_base, sig, clock_ns(), config, dict(due_ms))


def unchanged(memo: Memo | None, partition_dir: str, config: Mapping[str, Any]) -> bool:
    """The partition's files and configuration are as the memo saw them, and the memo is trustworthy."""
    if memo is None or memo.config != config:
        return False
    if memo.observed_ns - max(memo.signature[0], memo.signature[2]) < MTIME_SLACK_NS:
        return False
    return signature(partition_dir, memo.active_base) == memo.signature


def due_times(log, segments, config: Mapping[str, Any], now: int, retention_blocked: bool) -> dict[str, float]:
    """Per job, when it next may have work on this (open) partition if no file changes."""
    due: dict[str, float] = {"roll": NEVER, "seal": NEVER, "clean": NEVER, "merge": NEVER,
                             "retention": NEVER, "purge": NEVER}
    active = log.active_segment
    roll_at = active.idle_roll_due_ms() if active is not None else None
    if roll_at is not None:
        due["roll"] = roll_at
    if any(s.state == "inactive" for s in segments):
        due["seal"] = NOW
    if config.compacted:
        due["clean"] = NOW         # the cleaner's plan decides (dirty ratio, lag): not predicted here
    if config.tiered:
        due["tier"] = NOW          # the remote tier's state (records, objects) is not in the folder's signature
    retention_ms = config["retention.ms"]
    if retention_blocked:
        due["retention"] = NOW
    elif retention_ms >= 0:
        judged = [s.retention_timestamp for s in segments if s.size_bytes > 0]
        if judged:
            due["retention"] = min(judged) + retention_ms + 1   # retention's test: now - ts > retention.ms
    delay = config["file.delete.delay.ms"]
    with os.scandir(log.path) as entries:
        deleted = [e.stat().st_ctime_ns // 1_000_000 for e in entries if e.name.endswith(DELETED_SUFFIX)]
    if deleted:
        due["purge"] = min(deleted) + delay
    return due
