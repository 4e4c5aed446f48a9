"""Consumer lag: the streaming queries' positions (indexer/consumer_positions.py) against the committed end.

Per query and partition (docs/spec.md §9.1):
- records behind: the partition's committed end (the sink's commit log, what readers may read) minus the
  query's position, never below 0;
- seconds behind: now minus the timestamp of the first record at or after the query's position (the oldest
  record the query has not processed), 0 when it is caught up, NaN when that record cannot be read (its
  segment is remote, or was deleted meanwhile).

A query whose position is older than consumer.idle.forget.ms is forgotten: no longer exported, and its file
removed (Kafka expires a group's committed offsets alike, offsets.retention.minutes). A bad position file is
reported by name (a log event and seglog_consumer_position_files_invalid) and skipped; it never stops the pass.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from seglog.compactor.logging import event
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.consumer_positions import ConsumerPosition, forget, read_consumer_positions


@dataclass(frozen=True)
class ConsumerLag:
    query_id: str
    name: str | None
    topic: str
    partition: int
    offset: int                 # the query's position: the next offset it reads
    committed_end: int          # the partition's committed end now
    records_behind: int
    seconds_behind: float       # NaN: the record at the position could not be read
    committed_ms: int           # when the query's position was committed


@dataclass(frozen=True)
class LagView:
    lags: tuple[ConsumerLag, ...]
    invalid_files: tuple[tuple[str, str], ...]      # (path, reason)
    forgotten: tuple[str, ...]                       # query ids forgotten by this pass


def measure(root: Path, now_ms: int, forget_ms: int, open_log: Callable) -> LagView:
    """One look at every consumer position under `root`. `open_log(topic, partition)` opens a read-only Log."""
    bad: list[tuple[str, str]] = []
    positions = read_consumer_positions(root, bad)
    for path, reason in bad:
        event("consumer.position_invalid", level=logging.WARNING, file=path, reason=reason)
    live: list[ConsumerPosition] = []
    forgotten: list[str] = []
    for pos in positions:
        if now_ms - pos.committed_ms > forget_ms:
            try:
                forget(root, pos.query_id)
            except OSError as exc:
                event("consumer.forget_failed", level=logging.WARNING, query_id=pos.query_id,
                      error=f"{type(exc).__name__}: {exc}")
            forgotten.append(pos.query_id)
            event("consumer.forgotten", query_id=pos.query_id, name=pos.name, idle_ms=now_ms - pos.committed_ms)
            continue
        live.append(pos)
    ends: dict[str, dict[int, int]] = {}
    oldest: dict[tuple[str, int, int], float] = {}      # (topic, partition, offset) -> seconds behind
    lags = []
    for pos in live:
        for (topic, partition), offset in sorted(pos.offsets.items()):
            if topic not in ends:
                ends[topic] = _committed_ends(root, topic)
            end = ends[topic].get(partition, 0)
            behind = max(0, end - offset)
            key = (topic, partition, offset)
            if behind == 0:
                seconds = 0.0
            elif key in oldest:
                seconds = oldest[key]
            else:
                seconds = oldest[key] = _seconds_behind(open_log, topic, partition, offset, end, now_ms)
            lags.append(ConsumerLag(pos.query_id, pos.name, topic, partition, offset, end, behind, seconds,
                                    pos.committed_ms))
    return LagView(tuple(lags), tuple(bad), tuple(forgotten))


def _committed_ends(root: Path, topic: str) -> dict[int, int]:
    """The commit log's ends; a topic without one has committed nothing (docs/spec.md §4)."""
    try:
        state = CommitLog(root, topic).latest()
    except Exception as exc:     # a bad commit log is reported by the readers; lag is best effort
        event("consumer.lag_failed", level=logging.DEBUG, topic=topic, error=f"{type(exc).__name__}: {exc}")
        return {}
    return {} if state is None else dict(state.end_offsets)


def _seconds_behind(open_log: Callable, topic: str, partition: int, offset: int, end: int, now_ms: int) -> float:
    """now - the timestamp of the first record at or after `offset` (below `end`), in seconds."""
    try:
        with open_log(topic, partition) as log:
            start = max(offset, log.log_start_offset)
            for rec in log.read(start, end):
                if rec.timestamp is None or rec.timestamp < 0:     # a record without a timestamp
                    return math.nan
                return max(0.0, (now_ms - rec.timestamp) / 1000.0)
    except Exception as exc:      # remote, deleted meanwhile, damaged: unknown, never a failed pass
        event("consumer.lag_failed", level=logging.DEBUG, partition=f"{topic}-{partition}", offset=offset,
              error=f"{type(exc).__name__}: {exc}")
    return math.nan
