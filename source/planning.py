"""Planning a `seglog` read on the driver: which offsets of which partitions, split into tasks by bytes.

Each partition's range is resolved here, once, from the options (docs/spec.md §8) and the pushed-down
filters: `[start, end)` where `end` never passes the partition's committed end (docs/spec.md §4). The work
is then cut into tasks of about a target number of bytes: small partitions share a task, large
ones are split at offsets taken from the offset indexes (`Log.split_offset`, no log scan),
because a Python task costs ~100 ms to start (docs/spark-notes.md).

This module is pure of Spark: it sees `SourceOptions`, a `ScanBounds` and readonly `Log`s.
"""
from __future__ import annotations

import logging
import math
import os
import re
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.root import LogRoot
from seglog.errors import InvalidTopicError, OffsetOutOfRangeError, SegmentDeletedError
from seglog.source.options import EARLIEST, LATEST, Bound, SourceOptions

_LOG = logging.getLogger("seglog.source")

MIN_TASK_BYTES = 8 << 20       # below this a second task costs more than it saves
SLACK = 8                      # a piece may overflow its task by target/SLACK rather than be cut


class NoOffsetForTimestampError(OffsetOutOfRangeError):
    """startingOffsetsByTimestampStrategy=error and a partition holds no record at or after the timestamp."""


@dataclass(frozen=True)
class ScanBounds:
    """What the pushed-down filters allow, as bounds the planner and the reader can use.

    Timestamps are in ms (the log's unit), inclusive; None means unbounded. `ts_in`/`offset_in` are
    finite sets (an empty set matches nothing). `partitions`/`topics` prune whole partitions.
    """
    ts_min: int | None = None
    ts_max: int | None = None
    ts_in: frozenset[int] | None = None
    offset_min: int | None = None
    offset_max: int | None = None
    offset_in: frozenset[int] | None = None
    partition_min: int | None = None
    partition_max: int | None = None
    partition_in: frozenset[int] | None = None
    topic_in: frozenset[str] | None = None

    def keeps_partition(self, topic: str, partition: int) -> bool:
        if self.topic_in is not None and topic not in self.topic_in:
            return False
        if self.partition_in is not None and partition not in self.partition_in:
            return False
        if self.partition_min is not None and partition < self.partition_min:
            return False
        return self.partition_max is None or partition <= self.partition_max

    def lowest_timestamp(self) -> int | None:
        """The smallest timestamp a kept record may have (a seek target), or None."""
        lows = [v for v in (self.ts_min, min(self.ts_in) if self.ts_in else None) if v is not None]
        return max(lows) if lows else None

    def offset_range(self) -> tuple[int, int | None]:
        """[lo, hi) of offsets the filters allow (hi None: unbounded)."""
        lo, hi = 0, None
        if self.offset_min is not None:
            lo = max(lo, self.offset_min)
        if self.offset_max is not None:
            hi = self.offset_max + 1
        if self.offset_in is not None:
            if not self.offset_in:
                return 0, 0
            lo = max(lo, min(self.offset_in))
            hi = max(self.offset_in) + 1 if hi is None else min(hi, max(self.offset_in) + 1)
        return lo, hi

    def is_empty(self) -> bool:
        if self.ts_in is not None and not self.ts_in:
            return True
        if self.ts_min is not None and self.ts_max is not None and self.ts_min > self.ts_max:
            return True
        lo, hi = self.offset_range()
        return hi is not None and hi <= lo

    def needs_row_filter(self) -> bool:
        """True when rows inside the planned offset ranges may still fail a pushed filter."""
        return (self.ts_min is not None or self.ts_max is not None or self.ts_in is not None
                or self.offset_in is not None)


@dataclass(frozen=True)
class Slice:
    """Offsets [start, end) of one partition, read by one task."""
    topic: str
    partition: int
    start: int
    end: int


@dataclass
class PartitionRange:
    topic: str
    partition: int
    start: int
    end: int
    bytes: int = 0
    log: object = field(default=None, repr=False)


def partition_path(root: str, topic: str, partition: int) -> str:
    return str(LogRoot(root).partition_path(topic, partition))


def topic_partitions(root: str, topic: str) -> list[int]:
    """The partitions of a topic (recorded count and folders: indexer.root.LogRoot)."""
    if not os.path.isdir(root):
        raise InvalidTopicError(f"seglog source: log root {root!r} does not exist or is not a folder")
    log_root = LogRoot(root)
    found = log_root.topic_partitions(topic)
    if not found:
        raise InvalidTopicError(f"seglog source: topic {topic!r} not found under {root!r} "
                                f"(topics there: {', '.join(log_root.topics()) or 'none'})")
    return found


def check_bound_partitions(bound: Bound, topic: str, partitions: Sequence[int]) -> None:
    """As Spark's Kafka source: a per-partition JSON must name every partition of each topic it names,
    and only partitions that exist."""
    if bound.kind not in ("offsets", "timestamps"):
        return
    named = {p for (t, p) in bound.values if t == topic}
    if not named and not any(t == topic for (t, _) in bound.values):
        missing = sorted(partitions)
    else:
        missing = sorted(set(partitions) - named)
    if missing:
        raise InvalidTopicError(
            f"seglog source: option {bound.option!r} must give every partition of topic {topic!r}; missing: "
            f"{', '.join(f'{topic}-{p}' for p in missing)}")
    unknown = sorted(named - set(partitions))
    if unknown:
        raise InvalidTopicError(
            f"seglog source: option {bound.option!r} names partitions that topic {topic!r} does not have: "
            f"{', '.join(f'{topic}-{p}' for p in unknown)} (partitions: {', '.join(map(str, partitions))})")


def check_layout(opts: SourceOptions) -> dict[str, list[int]]:
    """The topics and partitions read (subscribe, subscribePattern or assign resolved against the root):
    every topic named exists, every assigned partition exists, and every per-partition JSON covers the
    partitions read exactly. A pattern matching no topic reads nothing."""
    selection = opts.selection
    if selection.kind == "pattern":
        if not os.path.isdir(opts.root):
            raise InvalidTopicError(f"seglog source: log root {opts.root!r} does not exist or is not a folder")
        topics = [t for t in LogRoot(opts.root).topics() if re.fullmatch(selection.pattern, t)]
    else:
        topics = list(selection.topics)
    layout = {}
    for topic in topics:
        parts = topic_partitions(opts.root, topic)
        if selection.kind == "assign":
            absent = [p for p in selection.assigned[topic] if p not in parts]
            if absent:
                raise InvalidTopicError(
                    f"seglog source: option 'assign' names partitions that topic {topic!r} does not have: "
                    f"{', '.join(f'{topic}-{p}' for p in absent)} (partitions: {', '.join(map(str, parts))})")
            parts = list(selection.assigned[topic])
        layout[topic] = parts
    for bound in (opts.starting, opts.ending):
        if bound.kind in ("offsets", "timestamps"):
            for topic in sorted({t for (t, _) in bound.values} - set(layout)):
                raise InvalidTopicError(f"seglog source: option {bound.option!r} names topic {topic!r}, which is "
                                        f"not under {opts.root!r} or does not match the pattern")
    for topic, parts in layout.items():
        check_bound_partitions(opts.starting, topic, parts)
        check_bound_partitions(opts.ending, topic, parts)
    return layout


def committed_ends(root: str, topic: str) -> dict[int, int]:
    """The committed end of every partition (the high watermark). A partition the commit log does
    not name, or a topic with no commit log at all, has committed nothing (docs/spec.md §4): a
    reader sees none of its records, however many a writer has appended."""
    state = CommitLog(root, topic).latest()
    return {} if state is None else dict(state.end_offsets)


def data_loss_message(topic: str, partition: int, start: int, log_start: int) -> str:
    return (f"seglog source: {topic}-{partition}: offsets {start} to {log_start - 1} are no longer in the "
            f"log (deleted by retention; the log now starts at offset {log_start}). Some data may have been "
            f"lost. Set failOnDataLoss=false to skip to offset {log_start} instead of failing.")


def _timestamp_of(bound: Bound, topic: str, partition: int) -> int:
    return bound.timestamp if bound.kind == "timestamp" else bound.values[(topic, partition)]


def resolve_range(opts: SourceOptions, bounds: ScanBounds, topic: str, partition: int,
                  log, committed: int | None) -> PartitionRange:
    """[start, end) for one partition. Raises on data loss (failOnDataLoss), on a start past the end
    given as offsets, and on a starting timestamp with no offset under strategy `error`."""
    log.require_start_within_end()
    log_start = log.log_start_offset
    # Readers never pass the committed end (docs/spec.md §4); nothing committed means nothing to read.
    end_cap = log_start if committed is None else committed
    end_cap = max(end_cap, log_start)

    # Ending bound (exclusive).
    ending = opts.ending
    if ending.kind == "latest":
        end = end_cap
    elif ending.kind == "offsets":
        value = ending.values[(topic, partition)]
        end = end_cap if value == LATEST else min(value, end_cap)
    else:  # by timestamp: no offset for it means latest (Spark's Kafka source); -1 / -2: latest / earliest
        ts = _timestamp_of(ending, topic, partition)
        found = end_cap if ts == LATEST else log_start if ts == EARLIEST else log.offset_for_timestamp(ts)
        end = end_cap if found is None else min(found, end_cap)

    log.require_committed_end(end)     # a log that ends below the committed range lost records

    # Starting bound.
    starting = opts.starting
    explicit = False
    if starting.kind == "earliest":
        start = log_start
    elif starting.kind == "offsets":
        value = starting.values[(topic, partition)]
        start = log_start if value == EARLIEST else value
        explicit = value != EARLIEST
    elif _timestamp_of(starting, topic, partition) in (LATEST, EARLIEST):
        # Kafka's ListOffsets sentinels in a by-timestamp JSON, as Spark hands them to the broker: always an offset
        start = min(end_cap if _timestamp_of(starting, topic, partition) == LATEST else log_start, end)
    else:
        ts = _timestamp_of(starting, topic, partition)
        found = log.offset_for_timestamp(ts)
        if found is None or found >= end_cap:
            if opts.strategy == "error":
                raise NoOffsetForTimestampError(
                    f"seglog source: {topic}-{partition} has no record with a timestamp at or after {ts} "
                    f"({starting.option}); set startingOffsetsByTimestampStrategy=latest to start at the "
                    f"latest offset ({end_cap}) instead")
            found = end_cap
        start = min(found, end)

    skipped = False
    if start < log_start:
        if explicit and opts.fail_on_data_loss:
            raise OffsetOutOfRangeError(data_loss_message(topic, partition, start, log_start))
        if explicit:
            # Spark's Kafka source warns of every skip failOnDataLoss=false allows: so does this one.
            _LOG.warning("%s; the read goes on from offset %d because failOnDataLoss=false",
                         data_loss_message(topic, partition, start, log_start).split(" Set failOnDataLoss")[0],
                         log_start)
        start, skipped = log_start, True
    if explicit and not skipped and start > end:
        raise OffsetOutOfRangeError(
            f"seglog source: {topic}-{partition}: starting offset {start} ({starting.option}) is after the "
            f"ending offset {end} (committed end {end_cap}); ask for a start at or below the end")

    # Pushed-down filters narrow the range: an offset window, and a timestamp seek (docs/spec.md §3.5: every
    # record with a timestamp >= T is at or after offset_for_timestamp(T)).
    lo, hi = bounds.offset_range()
    start = max(start, lo)
    if hi is not None:
        end = min(end, hi)
    low_ts = bounds.lowest_timestamp()
    if low_ts is not None and start < end:
        found = log.offset_for_timestamp(low_ts)
        start = end if found is None else max(start, min(found, end))
    if bounds.is_empty() or start > end:
        start = end
    size = log.byte_size(start, end) if start < end else 0
    return PartitionRange(topic, partition, start, end, size, log)


def target_task_bytes(total: int, opts: SourceOptions, cores: int | None = None) -> int:
    """About one task per core for a modest read, never tasks above maxBytesPerTask; `minPartitions`
    asks for at least that many tasks (Spark's Kafka source): total // minPartitions, so that tasks of
    at most the target make at least that many."""
    if opts.min_partitions is not None:
        return max(1, min(opts.max_bytes_per_task, total // opts.min_partitions))
    cores = cores or os.cpu_count() or 2
    return max(1, min(opts.max_bytes_per_task, max(MIN_TASK_BYTES, math.ceil(total / cores))))


def task_slack(target: int, opts: SourceOptions) -> int:
    """The overflow a task may take rather than cut a range: target/SLACK, none when minPartitions asks
    for a task count (an overflow could make one task fewer)."""
    return 0 if opts.min_partitions is not None else max(1, target // SLACK)


def pack(ranges: Iterable[PartitionRange], target: int,
         split: Callable[[PartitionRange, int, int, int], tuple[int, int] | None],
         slack: int | None = None) -> list[list[Slice]]:
    """Cut the ranges, in order, into tasks of at most `target` bytes, as if they were one stream
    (docs/spec.md §8; the JVM planner's `Planner.pack` keeps the same rule): a range that fits the
    task's room (with `slack`, target/SLACK unless given) joins it whole; else it is cut where
    `split(range, start, end, room)` says (the cut and the bytes before it, or None: it cannot be cut)
    and the task closes; a first piece that does not fit the room closes a task that holds something
    and goes to the next one, where a piece larger than the target is taken as it is (one batch cannot
    be cut). Empty ranges are dropped."""
    tasks: list[list[Slice]] = []
    current: list[Slice] = []
    room = target
    slack = max(1, target // SLACK) if slack is None else slack
    for rng in ranges:
        start, end, left = rng.start, rng.end, rng.bytes
        while start < end:
            if left <= room + slack:
                current.append(Slice(rng.topic, rng.partition, start, end))
                room -= left
                break
            found = split(rng, start, end, max(1, room))
            if found is None or not start < found[0] < end:   # it cannot be cut
                current.append(Slice(rng.topic, rng.partition, start, end))
                room -= left
                break
            cut, piece = found
            if piece > room + slack and current:   # not even one piece fits: the next task
                tasks.append(current)
                current, room = [], target
                continue
            current.append(Slice(rng.topic, rng.partition, start, cut))
            left = max(0, left - piece)
            start = cut
            tasks.append(current)
            current, room = [], target
        if room <= 0:
            tasks.append(current)
            current, room = [], target
    if current:
        tasks.append(current)
    return [t for t in tasks if t]


def cap_records(tasks: list[list[Slice]], maximum: int | None) -> list[list[Slice]]:
    """maxRecordsPerPartition (Spark's Kafka source): no task holds more than `maximum` offsets. A task of
    the byte packing above it is cut into the fewest tasks of at most that many offsets, of about equal
    size, at exact offsets (a batch may then be read by two tasks, each keeping its own offsets); the JVM
    planner's `Planner.capRecords` keeps the same rule."""
    if not maximum:
        return tasks
    out: list[list[Slice]] = []
    for task in tasks:
        total = sum(s.end - s.start for s in task)
        if total <= maximum:
            out.append(task)
            continue
        pieces = -(-total // maximum)
        base, rem = divmod(total, pieces)       # piece k holds base or base + 1 <= maximum offsets
        given, piece, current = 0, 0, []
        for s in task:
            start = s.start
            while start < s.end:
                piece_end = base * (piece + 1) + min(piece + 1, rem)    # offsets in pieces 0..piece
                take = min(s.end - start, piece_end - given)
                if take > 0:
                    current.append(Slice(s.topic, s.partition, start, start + take))
                    start += take
                    given += take
                if given >= piece_end and piece < pieces - 1:
                    out.append(current)
                    current, piece = [], piece + 1
        if current:
            out.append(current)
    return out


def split_with_log(rng: PartitionRange, start: int, end: int, nbytes: int) -> tuple[int, int] | None:
    cut = rng.log.split_offset(start, end, nbytes)
    return None if cut is None else (cut, rng.log.byte_size(start, cut))


def open_readonly(root: str, topic: str, partition: int):
    """The partition read-only, with its topic's recorded configuration: a topic recorded compacted
    may have offset gaps before any clean of seglog's (a broker's folder), and readers must know. A
    partition with tiered segments reads across both tiers (TieredLog)."""
    from seglog.indexer.log import Log
    from seglog.indexer.remote.metadata import metadata_path
    from seglog.indexer.remote.tiered_log import TieredLog
    from seglog.indexer.topics import load_topic
    meta = load_topic(root, topic)
    cfg = meta.topic_config() if meta else None
    if metadata_path(root, topic, partition).exists():     # tiered segments: one log across both tiers
        return TieredLog(root, topic, partition, cfg)       # (docs/tiered-storage.md §6)
    return Log.open(partition_path(root, topic, partition), cfg, readonly=True)


def plan(opts: SourceOptions, bounds: ScanBounds, *, cores: int | None = None,
         opener=None) -> list[list[Slice]]:
    """Resolve every partition's range and cut the work into tasks (a list of slices per task).
    Planning takes no lock: retention may delete a segment between listing and splitting; then the
    partitions are planned again from their new log starts (a start that is now lost is reported
    by resolve_range, honouring failOnDataLoss)."""
    for attempt in range(_PLAN_ATTEMPTS):
        try:
            return _plan_once(opts, bounds, cores=cores, opener=opener or open_readonly)
        except SegmentDeletedError:
            if attempt == _PLAN_ATTEMPTS - 1:
                raise


_PLAN_ATTEMPTS = 5


def _plan_once(opts: SourceOptions, bounds: ScanBounds, *, cores: int | None = None,
         opener=open_readonly) -> list[list[Slice]]:
    """One planning pass over the partitions as they are now."""
    layout = check_layout(opts)
    logs = []
    try:
        ranges: list[PartitionRange] = []
        for topic, parts in layout.items():
            kept = [p for p in parts if bounds.keeps_partition(topic, p)]
            if not kept:
                continue
            ends = committed_ends(opts.root, topic)
            for p in kept:
                if not Path(partition_path(opts.root, topic, p)).is_dir():
                    # A partition the sink never wrote has no folder: zero rows. Unless the commit
                    # log says records were committed there: then its folder was lost.
                    lost = ends.get(p, 0)
                    if lost > 0 and opts.fail_on_data_loss:
                        raise OffsetOutOfRangeError(
                            f"seglog source: {topic}-{p}: the commit log says offsets 0 to {lost - 1} were "
                            f"committed, but the partition folder {partition_path(opts.root, topic, p)} is gone. "
                            f"Set failOnDataLoss=false to read the other partitions.")
                    continue
                log = opener(opts.root, topic, p)
                logs.append(log)
                committed = ends.get(p, log.log_start_offset)
                ranges.append(resolve_range(opts, bounds, topic, p, log, committed))
        total = sum(r.bytes for r in ranges)
        target = target_task_bytes(total, opts, cores)
        tasks = pack([r for r in ranges if r.start < r.end], target, split_with_log, task_slack(target, opts))
        return cap_records(tasks, opts.max_records_per_partition)
    finally:
        for log in logs:
            log.close()
