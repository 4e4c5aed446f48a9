"""Prometheus metrics of the sidecar (served as text on /metrics).

Per partition (labels topic, partition), from the last time a job looked at it: segments, bytes,
log start and end offsets, largest timestamp, the oldest segment's largest timestamp, retention lag,
retention blocked, unsealed inactive segments. Per streaming query and partition (labels query_id,
query_name, topic, partition): its position and lag (compactor/lag.py). Per job (label job): durations, runs, failures,
partitions skipped because the sink held their lock, and what the jobs did.

Each Metrics owns its CollectorRegistry, so several services (tests) never share counters.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

JOBS = ("recover", "roll", "seal", "clean", "merge", "tier", "retention", "purge", "lag")

# Jobs are file operations over many partitions: milliseconds to minutes.
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, float("inf"))


@dataclass(frozen=True)
class PartitionStats:
    topic: str
    partition: int
    segments: int
    size_bytes: int
    log_start_offset: int
    log_end_offset: int
    largest_timestamp: int          # ms, -1 when no segment holds a timestamp
    oldest_segment_timestamp: int   # the oldest segment's largest timestamp (what retention looks at)
    retention_ms: int               # -1: no time retention
    retention_blocked: bool
    unsealed_segments: int          # inactive segments not yet sealed
    observed_ms: int                # when this was observed
    dirty_ratio: float = float("nan")   # compacted topics: dirty bytes / cleanable bytes (docs/spec.md §3.9)
    cleaner_checkpoint: int = -1        # the first dirty offset, -1: never cleaned

    def retention_lag_ms(self) -> float:
        """How far past retention.ms the oldest segment is (negative: not due yet); NaN without time retention."""
        if self.retention_ms < 0 or self.oldest_segment_timestamp < 0:
            return float("nan")
        return float(self.observed_ms - self.oldest_segment_timestamp - self.retention_ms)


class _PartitionCollector(Collector):
    def __init__(self, store: "Metrics"):
        self._store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        stats = self._store.partition_stats()
        labels = ["topic", "partition"]
        spec: tuple[tuple[str, str, object], ...] = (
            ("seglog_partition_segments", "Segments in the partition", lambda s: s.segments),
            ("seglog_partition_size_bytes", "Bytes of .log files in the partition", lambda s: s.size_bytes),
            ("seglog_partition_log_start_offset", "Log start offset", lambda s: s.log_start_offset),
            ("seglog_partition_log_end_offset", "Log end offset (next offset to be written)",
             lambda s: s.log_end_offset),
            ("seglog_partition_largest_timestamp_ms", "Largest record timestamp in the partition (ms)",
             lambda s: s.largest_timestamp),
            ("seglog_partition_oldest_segment_timestamp_ms",
             "Largest timestamp of the oldest segment (ms): what time retention compares",
             lambda s: s.oldest_segment_timestamp),
            ("seglog_partition_retention_ms", "Effective retention.ms (-1: none)", lambda s: s.retention_ms),
            ("seglog_partition_retention_lag_ms",
             "now - oldest segment's largest timestamp - retention.ms (positive: overdue; NaN: no time retention)",
             lambda s: s.retention_lag_ms()),
            ("seglog_partition_retention_blocked",
             "1 when a far-future timestamp keeps retention from ever deleting the oldest segment",
             lambda s: 1 if s.retention_blocked else 0),
            ("seglog_partition_unsealed_segments", "Inactive segments not yet sealed",
             lambda s: s.unsealed_segments),
            ("seglog_partition_dirty_ratio",
             "Compacted topics: dirty bytes / (clean + dirty) bytes, what min.cleanable.dirty.ratio is compared with "
             "(NaN: not compacted)", lambda s: s.dirty_ratio),
            ("seglog_partition_cleaner_checkpoint", "The cleaner's first dirty offset (-1: never cleaned)",
             lambda s: s.cleaner_checkpoint),
            ("seglog_partition_observed_timestamp_seconds", "When the sidecar last observed the partition",
             lambda s: s.observed_ms / 1000.0),
        )
        for name, doc, getter in spec:
            family = GaugeMetricFamily(name, doc, labels=labels)
            for s in stats:
                family.add_metric([s.topic, str(s.partition)], float(getter(s)))  # type: ignore[operator]
            yield family


class _ConsumerCollector(Collector):
    """Consumer lag per query and partition (compactor/lag.py), as the last lag pass measured it."""

    def __init__(self, store: "Metrics"):
        self._store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        lags, invalid = self._store.consumer_lag()
        labels = ["query_id", "query_name", "topic", "partition"]
        spec: tuple[tuple[str, str, object], ...] = (
            ("seglog_consumer_offset", "The streaming query's committed position: the next offset it reads",
             lambda c: c.offset),
            ("seglog_consumer_lag_records", "Records between the query's position and the partition's committed end",
             lambda c: c.records_behind),
            ("seglog_consumer_lag_seconds",
             "Now - the timestamp of the first record the query has not processed (0: caught up; NaN: unreadable)",
             lambda c: c.seconds_behind),
        )
        for name, doc, getter in spec:
            family = GaugeMetricFamily(name, doc, labels=labels)
            for c in lags:
                family.add_metric([c.query_id, c.name or "", c.topic, str(c.partition)], float(getter(c)))  # type: ignore[operator]
            yield family
        committed = GaugeMetricFamily("seglog_consumer_committed_timestamp_seconds",
                                      "When the query last committed its position (the driver's clock)",
                                      labels=["query_id", "query_name"])
        for query_id, name, ms in sorted({(c.query_id, c.name or "", c.committed_ms) for c in lags}):
            committed.add_metric([query_id, name], ms / 1000.0)
        yield committed
        yield GaugeMetricFamily("seglog_consumer_position_files_invalid",
                                "Consumer position files the last lag pass could not read (named in its log)",
                                value=float(invalid))


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, int], PartitionStats] = {}
        self._consumer_lag: tuple = ()
        self._invalid_positions = 0
        r = self.registry
        self.job_duration = Histogram("seglog_compactor_job_duration_seconds", "Duration of one job pass",
                                      ["job"], registry=r, buckets=_DURATION_BUCKETS)
        self.job_runs = Counter("seglog_compactor_job_runs", "Job passes run", ["job"], registry=r)
        self.job_failures = Counter("seglog_compactor_job_failures",
                                    "Job passes or partitions that failed with an error", ["job"], registry=r)
        self.partitions_skipped = Counter("seglog_compactor_partitions_skipped",
                                          "Partitions skipped because another writer held their lock",
                                          ["job"], registry=r)
        self.partitions_unchanged = Counter("seglog_compactor_partitions_unchanged",
                                            "Partitions a pass left unopened: no file changed and nothing was due",
                                            ["job"], registry=r)
        self.last_success = Gauge("seglog_compactor_job_last_success_timestamp_seconds",
                                  "When the job last completed a pass without a failure", ["job"], registry=r)
        self.segments_sealed = Counter("seglog_compactor_segments_sealed", "Segments sealed", registry=r)
        self.segments_rolled = Counter("seglog_compactor_segments_rolled", "Idle active segments rolled",
                                       registry=r)
        self.segments_deleted = Counter("seglog_compactor_segments_deleted",
                                        "Segments removed by retention (renamed to .deleted)", registry=r)
        self.files_purged = Counter("seglog_compactor_files_purged", ".deleted files unlinked", registry=r)
        self.bytes_cleaned = Counter("seglog_compactor_cleaned_dirty_bytes",
                                     "Bytes of dirty log the cleaner compacted", registry=r)
        self.bytes_rewritten = Counter("seglog_compactor_cleaned_read_bytes",
                                       "Bytes of log the cleaner read and rewrote (clean and dirty)", registry=r)
        self.records_removed = Counter("seglog_compactor_records_removed",
                                       "Records the cleaner removed (superseded, expired tombstones)", registry=r)
        self.clean_duration = Histogram("seglog_compactor_clean_duration_seconds", "Duration of one partition's clean",
                                        registry=r, buckets=_DURATION_BUCKETS)
        self.segments_merged = Counter("seglog_compactor_segments_merged",
                                       "Small sealed segments replaced by merged ones", registry=r)
        self.bytes_merged = Counter("seglog_compactor_merged_bytes", "Bytes of log copied into merged segments",
                                    registry=r)
        self.recovered = Counter("seglog_compactor_partitions_recovered",
                                 "Partitions whose recovery repaired something", registry=r)
        self.leader = Gauge("seglog_compactor_leader", "1 while this sidecar holds the root's leader lock",
                            registry=r)
        self.ready = Gauge("seglog_compactor_ready", "1 when leader and the start-up recovery is done",
                           registry=r)
        for job in JOBS:  # export every series from the start (a zero is information)
            self.job_runs.labels(job)
            self.job_failures.labels(job)
            self.partitions_skipped.labels(job)
            self.partitions_unchanged.labels(job)
        r.register(_PartitionCollector(self))
        r.register(_ConsumerCollector(self))

    def observe_partition(self, stats: PartitionStats) -> None:
        with self._lock:
            self._partitions[(stats.topic, stats.partition)] = stats

    def note_unchanged(self, topic: str, partition: int, now_ms: int, jobs: Iterable[str]) -> None:
        """A partition a pass skipped because nothing changed: its stats hold, observed now."""
        for job in jobs:
            self.partitions_unchanged.labels(job).inc()
        with self._lock:
            stats = self._partitions.get((topic, partition))
            if stats is not None:
                self._partitions[(topic, partition)] = dataclasses.replace(stats, observed_ms=now_ms)

    def forget_partitions_except(self, keep: Iterable[tuple[str, int]]) -> None:
        keep = set(keep)
        with self._lock:
            for key in [k for k in self._partitions if k not in keep]:
                del self._partitions[key]

    def partition_stats(self) -> list[PartitionStats]:
        with self._lock:
            return sorted(self._partitions.values(), key=lambda s: (s.topic, s.partition))

    def set_consumer_lag(self, lags: Iterable, invalid_files: int) -> None:
        """What the last lag pass measured (compactor/lag.py's ConsumerLag rows): replaces the previous view."""
        with self._lock:
            self._consumer_lag = tuple(lags)
            self._invalid_positions = invalid_files

    def consumer_lag(self) -> tuple[tuple, int]:
        with self._lock:
            return self._consumer_lag, self._invalid_positions

    def render(self) -> bytes:
        return generate_latest(self.registry)


def now_ms() -> int:
    return time.time_ns() // 1_000_000
