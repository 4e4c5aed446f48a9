"""The console's in-memory view of the root: what the sidecar's passes already gather, kept for pages.

Jobs write it (compactor/jobs.py, on the scheduler's one thread): each partition a pass opens is
observed with its segments (`observe`), each topic's latest commit state is read when its commit
folder changed (`observe_commits`), each job's run is recorded (`job_finished`), and at the end of a
pass the per-topic figures are summed once and a size sample is taken (`pass_done`). The HTTP server
reads it from its own thread.

Invariants kept here:
- No page reads a file: every figure a page shows is in this view, put there by a pass.
- A page costs O(rows it shows): topics, partitions, segments and writers are held in lists sorted at
  `pass_done`, and each page slices one; `rows_read` counts the rows a query touched, so a test can
  pin that cost without timing it.
- Memory is bounded by the root (one row per partition and segment, as the metrics hold) plus fixed
  rings: `JOB_RUNS_KEPT` runs per job, `samples_max` samples of at most `SAMPLE_TOPICS` topics each,
  `FAILURES_KEPT` failures per run, `INVALID_KEPT` bad consumer position files; the consumers' lag rows
  are what the lag job measured (one per query and partition, as its metrics hold).
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from seglog.compactor.metrics import PartitionStats

JOB_RUNS_KEPT = 20          # runs remembered per job
FAILURES_KEPT = 20          # failed partitions remembered per run (a run may fail on thousands)
SAMPLE_TOPICS = 8           # topics a sample keeps apart, the largest; the rest are in the totals
INVALID_KEPT = 20           # bad consumer position files shown (the lag job logs them all)


@dataclass(frozen=True)
class SegmentRow:
    base_offset: int
    next_offset: int
    size_bytes: int
    state: str                  # active, inactive (not yet sealed), sealed, or tiered (remote only)
    first_timestamp: int        # the first batch's base timestamp (-1: none known)
    largest_timestamp: int      # -1: no record has one
    index_bytes: int
    time_index_bytes: int
    tiered: bool = False        # a copy is on the remote tier


@dataclass(frozen=True)
class PartitionView:
    stats: PartitionStats
    segments: tuple[SegmentRow, ...]        # oldest first; remote-only segments first of all
    cleanup_policy: str
    retention_bytes: int
    remote_bytes: int = 0
    remote_segments: int = 0
    remote_start: int = -1                  # the remote tier's log start, -1: nothing tiered
    retention_next_segments: int = 0        # what the next retention pass deletes, as of the observation
    retention_next_bytes: int = 0

    @property
    def log_start(self) -> int:
        """The first offset a reader can read, across both tiers."""
        if self.remote_start >= 0:
            return min(self.remote_start, self.stats.log_start_offset)
        return self.stats.log_start_offset

    @property
    def records(self) -> int:
        """Offsets held (end - start): records, less what compaction removed and control records."""
        return max(0, self.stats.log_end_offset - self.log_start)

    @property
    def oldest_timestamp(self) -> int:
        known = [s.first_timestamp for s in self.segments if s.first_timestamp >= 0]
        return min(known) if known else -1


@dataclass(frozen=True)
class TopicSummary:
    topic: str
    partitions: int
    records: int
    local_bytes: int
    remote_bytes: int
    segments: int
    oldest_timestamp: int
    newest_timestamp: int
    cleanup_policy: str
    retention_ms: int
    retention_bytes: int
    retention_next_segments: int
    retention_next_bytes: int
    dirty_ratio: float          # the largest of its partitions' (NaN: not compacted)
    observed_ms: int


@dataclass(frozen=True)
class JobRun:
    job: str
    started_ms: int
    duration_s: float
    partitions: int
    changed: int
    unchanged: int
    skipped: int
    failed: int
    failures: tuple[str, ...]       # the first FAILURES_KEPT, "partition: error"
    interrupted: bool


@dataclass(frozen=True)
class WriterRow:
    topic: str
    writer: str
    last_batch: int
    latest: bool                # this writer made the topic's newest commit
    commit_seq: int
    commit_time_ms: int


@dataclass(frozen=True)
class Sample:
    at_ms: int
    local_bytes: int
    remote_bytes: int
    records: int
    topics: tuple[tuple[str, int], ...]     # (topic, local + remote bytes), the largest SAMPLE_TOPICS
    lag_records: int = 0                    # records behind, summed over the queries' partitions (last lag pass)


@dataclass
class _Runs:
    runs: deque = field(default_factory=lambda: deque(maxlen=JOB_RUNS_KEPT))
    total: int = 0
    failed: int = 0


class ConsoleView:
    """Thread safe: one writer (the scheduler's thread), any number of readers (the HTTP server)."""

    def __init__(self, samples_max: int = 720, sample_interval_ms: int = 60_000):
        self._lock = threading.Lock()
        self._parts: dict[tuple[str, int], PartitionView] = {}
        self._writers: dict[str, tuple[Any, tuple[WriterRow, ...]]] = {}     # topic -> (folder signature, rows)
        self._jobs: dict[str, _Runs] = {}
        self._samples: deque[Sample] = deque(maxlen=samples_max)
        self._sample_interval_ms = sample_interval_ms
        # Published at pass_done: the sorted lists pages slice.
        self._topics: list[TopicSummary] = []
        self._topic_index: dict[str, int] = {}
        self._topic_parts: dict[str, list[int]] = {}
        self._writer_rows: list[WriterRow] = []
        self._lags: list = []                   # compactor/lag.py's ConsumerLag rows, by query then partition
        self._invalid: list[tuple[str, str]] = []
        self.rows_read = 0          # rows the queries below touched (a test's measure of a page's cost)

    # -- written by the jobs ---------------------------------------------------------------------
    def observe(self, part: PartitionView) -> None:
        s = part.stats
        with self._lock:
            self._parts[(s.topic, s.partition)] = part

    def previous_segments(self, topic: str, partition: int) -> dict[int, SegmentRow]:
        """The rows last observed, by base offset: facts of sealed segments need not be read again."""
        with self._lock:
            part = self._parts.get((topic, partition))
        return {} if part is None else {r.base_offset: r for r in part.segments}

    def forget_partitions_except(self, keep: Iterable[tuple[str, int]]) -> None:
        keep = set(keep)
        with self._lock:
            for key in [k for k in self._parts if k not in keep]:
                del self._parts[key]
            topics = {t for t, _ in keep}
            for topic in [t for t in self._writers if t not in topics]:
                del self._writers[topic]

    def commits_signature(self, topic: str) -> Any:
        with self._lock:
            known = self._writers.get(topic)
        return None if known is None else known[0]

    def observe_commits(self, topic: str, signature: Any, state) -> None:
        """A topic's newest commit state (indexer/commit_log.py's CommitState, or None before any)."""
        rows: tuple[WriterRow, ...] = ()
        if state is not None:
            rows = tuple(WriterRow(topic, w, b, w == state.writer_id, state.seq, state.time)
                         for w, b in sorted(state.writers.items()))
        with self._lock:
            self._writers[topic] = (signature, rows)

    def job_finished(self, result, started_ms: int) -> None:
        """One run of a job (compactor/jobs.py's JobResult)."""
        run = JobRun(result.job, started_ms, result.duration_s, result.partitions, len(result.done), result.unchanged,
                     len(result.skipped), len(result.failed),
                     tuple(f"{p}: {e}" for p, e in result.failed[:FAILURES_KEPT]), result.interrupted)
        with self._lock:
            runs = self._jobs.setdefault(result.job, _Runs())
            runs.runs.appendleft(run)
            runs.total += 1
            runs.failed += 1 if run.failed else 0

    def observe_lag(self, lags: Sequence, invalid: Sequence[tuple[str, str]]) -> None:
        """What the lag job measured (compactor/lag.py): lag per query and partition, and the bad files."""
        rows = sorted(lags, key=lambda x: (x.name or "", x.query_id, x.topic, x.partition))
        with self._lock:
            self._lags = rows
            self._invalid = list(invalid[:INVALID_KEPT])

    def pass_done(self, now_ms: int) -> None:
        """Sum each topic's partitions, sort what pages slice, and take a size sample when one is due:
        O(partitions), once per pass (a pass already costs that)."""
        with self._lock:
            parts = sorted(self._parts.items())
            writers = [row for _, (_, rows) in sorted(self._writers.items()) for row in rows]
        topics: list[TopicSummary] = []
        topic_parts: dict[str, list[int]] = {}
        i = 0
        while i < len(parts):
            topic = parts[i][0][0]
            j = i
            while j < len(parts) and parts[j][0][0] == topic:
                j += 1
            group = [p for _, p in parts[i:j]]
            topic_parts[topic] = [p.stats.partition for p in group]
            topics.append(_summarise(topic, group))
            i = j
        with self._lock:
            self._topics = topics
            self._topic_index = {t.topic: k for k, t in enumerate(topics)}
            self._topic_parts = topic_parts
            self._writer_rows = writers
            last = self._samples[-1].at_ms if self._samples else None
            if last is None or now_ms - last >= self._sample_interval_ms:
                self._samples.append(_sample(topics, now_ms, sum(x.records_behind for x in self._lags)))

    # -- read by the pages ----------------------------------------------------------------------
    def _count(self, rows: Sequence) -> None:
        self.rows_read += len(rows)

    def topics_page(self, page: int, size: int) -> tuple[list[TopicSummary], int]:
        """(the topics of page `page`, 0-based, and how many topics there are)."""
        with self._lock:
            rows = self._topics[page * size:(page + 1) * size]
            self._count(rows)
            return rows, len(self._topics)

    def topic(self, topic: str) -> TopicSummary | None:
        with self._lock:
            k = self._topic_index.get(topic)
            self.rows_read += 1
            return None if k is None else self._topics[k]

    def partitions_page(self, topic: str, page: int, size: int) -> tuple[list[PartitionView], int]:
        with self._lock:
            ids = self._topic_parts.get(topic, [])
            rows = [self._parts[(topic, p)] for p in ids[page * size:(page + 1) * size] if (topic, p) in self._parts]
            self._count(rows)
            return rows, len(ids)

    def partition(self, topic: str, partition: int) -> PartitionView | None:
        with self._lock:
            self.rows_read += 1
            return self._parts.get((topic, partition))

    def writers_page(self, page: int, size: int) -> tuple[list[WriterRow], int]:
        with self._lock:
            rows = self._writer_rows[page * size:(page + 1) * size]
            self._count(rows)
            return rows, len(self._writer_rows)

    def consumers_page(self, page: int, size: int) -> tuple[list, int, list[tuple[str, str]]]:
        """(lag rows of page `page`, how many rows, the bad position files)."""
        with self._lock:
            rows = self._lags[page * size:(page + 1) * size]
            self._count(rows)
            return rows, len(self._lags), list(self._invalid)

    def jobs(self) -> list[tuple[str, int, int, list[JobRun]]]:
        """(job, runs, failed runs, the last runs newest first) per job that ran, by name."""
        with self._lock:
            return [(job, r.total, r.failed, list(r.runs)) for job, r in sorted(self._jobs.items())]

    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._samples)


def _summarise(topic: str, group: list[PartitionView]) -> TopicSummary:
    oldest = [p.oldest_timestamp for p in group if p.oldest_timestamp >= 0]
    newest = [p.stats.largest_timestamp for p in group if p.stats.largest_timestamp >= 0]
    ratios = [p.stats.dirty_ratio for p in group if p.stats.dirty_ratio == p.stats.dirty_ratio]
    first = group[0]
    return TopicSummary(
        topic=topic, partitions=len(group), records=sum(p.records for p in group),
        local_bytes=sum(p.stats.size_bytes for p in group), remote_bytes=sum(p.remote_bytes for p in group),
        segments=sum(p.stats.segments + p.remote_segments for p in group),
        oldest_timestamp=min(oldest) if oldest else -1, newest_timestamp=max(newest) if newest else -1,
        cleanup_policy=first.cleanup_policy, retention_ms=first.stats.retention_ms,
        retention_bytes=first.retention_bytes,
        retention_next_segments=sum(p.retention_next_segments for p in group),
        retention_next_bytes=sum(p.retention_next_bytes for p in group),
        dirty_ratio=max(ratios) if ratios else float("nan"),
        observed_ms=min(p.stats.observed_ms for p in group))


def _sample(topics: list[TopicSummary], now_ms: int, lag_records: int) -> Sample:
    largest = sorted(topics, key=lambda t: t.local_bytes + t.remote_bytes, reverse=True)[:SAMPLE_TOPICS]
    return Sample(now_ms, sum(t.local_bytes for t in topics), sum(t.remote_bytes for t in topics),
                  sum(t.records for t in topics),
                  tuple((t.topic, t.local_bytes + t.remote_bytes) for t in largest), lag_records)
