"""The sidecar's jobs (docs/spec.md §9): recover, roll idle segments, seal, clean, merge small segments,
tier (docs/tiered-storage.md §4), retention, purge ``.deleted`` files.

Every job walks the partitions of the root and, for each, opens the partition's writable Log with a
short ``lock_timeout``: opening takes the partition's lock (docs/spec.md §4) and runs recovery (docs/spec.md §3.8). A
partition the sink is writing is skipped and tried again on the next pass. Clean and merge run between
such opens, beside the writer: they build without the partition's lock and take it for each swap only
(indexer/compaction/swap_gate.py); a partition another cleaner or merger holds is skipped likewise. The storage work itself is
``indexer``'s (``roll_if_idle``, ``seal_inactive``, ``apply_retention``, ``purge_deleted``), each
idempotent and crash safe, so a job killed at any instant leaves files that the next open recovers and
the next pass finishes. Nothing here writes a file itself, and nothing makes a partition folder: a partition
whose folder is gone when the job opens it (its topic deleted by DROP TABLE ... PURGE since the listing) is skipped
as gone, told once per topic, and forgotten (indexer/partition_folder.py keeps the open from making it again).

A failure in one partition is logged and counted and does not stop the pass over the others.
"""
from __future__ import annotations

import errno
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from seglog.compactor import console_observe, partition_memo
from seglog.compactor.config import CompactorConfig
from seglog.compactor.console_view import ConsoleView
from seglog.compactor.logging import event
from seglog.compactor.metrics import Metrics, PartitionStats, now_ms
from seglog.conf import TopicConfig
from seglog.errors import (CompactionError, CorruptIndexError, CorruptRecordError, MaintenanceLockedError, PartitionLockedError,
                           SeglogError, UnknownTopicOrPartitionError)

# The order of a full pass: a roll makes the idle active segment inactive, sealing then writes its
# final time index entry, and retention reads sealed segments' largest timestamps from their files.
# Merging follows sealing (it takes sealed segments only) and precedes retention (which then judges
# the merged segments). Tiering follows merging (a merged segment is tiered whole) and does the
# retention of tiered topics itself, over both tiers.
PASS_ORDER = ("roll", "seal", "clean", "merge", "tier", "retention", "purge")


@dataclass
class JobResult:
    job: str
    partitions: int = 0
    skipped: list[str] = field(default_factory=list)          # locked by another writer
    gone: list[str] = field(default_factory=list)             # folder gone since the listing (topic deleted)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (partition, error)
    done: dict[str, Any] = field(default_factory=dict)         # partition -> what the job did
    unchanged: int = 0        # partitions left unopened: no file changed, nothing due (partition_memo)
    duration_s: float = 0.0
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> dict[str, Any]:
        return {"job": self.job, "partitions": self.partitions, "changed": len(self.done), "unchanged": self.unchanged,
                "skipped": self.skipped, "gone": self.gone, "failed": [f"{p}: {e}" for p, e in self.failed],
                "duration_s": round(self.duration_s, 3), "interrupted": self.interrupted}


def _name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class Jobs:
    """The jobs over one root. Thread safe to call from one scheduler thread at a time."""

    def __init__(self, config: CompactorConfig, metrics: Metrics, stop: threading.Event | None = None,
                 clock: Callable[[], int] = now_ms, view: ConsoleView | None = None):
        self.config = config
        self.metrics = metrics
        self.view = view            # the console's view (compactor/console_view.py), fed where metrics are
        self.stop = stop or threading.Event()
        self.clock = clock
        self.lock_timeout_s = config.schedule.partition_lock_timeout_ms / 1000.0
        # Per partition, what the last job that opened it saw (compactor/partition_memo.py): a steady
        # pass skips the partitions with nothing to do without opening them.
        self._memos: dict[tuple[str, int], partition_memo.Memo] = {}
        self._store = None          # the remote tier's store, made on first use

    # -- the remote tier (docs/tiered-storage.md) ---------------------------------------------
    def record_remote(self) -> None:
        """Record the configured remote tier under the root, so readers find it (at start-up, leader
        only). ConfigError when the root records another URI."""
        if self.config.remote is not None and self.config.root.is_dir():
            from seglog.indexer.remote.location import record_location

            record_location(self.config.root, self.config.remote)

    def store(self):
        if self.config.remote is None:
            return None
        if self._store is None:
            from seglog.indexer.remote.store import RemoteStore

            self._store = RemoteStore(self.config.remote)
        return self._store

    # -- root, topics ------------------------------------------------------------------------
    def _root(self):
        from seglog.indexer.root import LogRoot  # imported late: the sidecar's process starts without storage

        return LogRoot(self.config.root)

    def partitions(self) -> list[tuple[str, int]]:
        if not self.config.root.is_dir():
            return []
        return sorted(self._root().partitions())

    def topic_config(self, topic: str, root=None) -> TopicConfig:
        """Precedence, highest first: the file's topics.<topic>, the topic's recorded configuration,
        the file's log, the built-in defaults (docs/spec.md §9); LogRoot applies it."""
        root = root if root is not None else self._root()
        return root.topic_config(topic, overrides=self.config.topics.get(topic), base=self.config.log)

    # -- one job over every partition --------------------------------------------------------
    def run(self, job: str) -> JobResult:
        """Run one job ('recover', 'roll', 'seal', 'clean', 'merge', 'tier', 'retention', 'purge') over every
        partition, or 'lag': the streaming queries' lag (compactor/lag.py)."""
        if job == "lag":
            return self.measure_lag()
        return self._over_partitions(job, (job,))

    def measure_lag(self) -> JobResult:
        """The consumer positions under the root against the committed ends, into the metrics; read-only but for
        forgetting a query idle past consumer.idle.forget.ms. A bad position file is reported, not a failure."""
        from seglog.compactor import lag

        result = JobResult("lag")
        start = time.monotonic()
        started_ms = self.clock()
        configs: dict[str, TopicConfig] = {}

        def open_log(topic: str, partition: int):
            root = self._root()
            if topic not in configs:
                configs[topic] = self.topic_config(topic, root)
            return root.open_log(topic, partition, config=configs[topic], readonly=True)

        try:
            view = lag.measure(self.config.root, self.clock(), self.config.consumer.idle_forget_ms, open_log)
            self.metrics.set_consumer_lag(view.lags, len(view.invalid_files))
            if self.view is not None:
                self.view.observe_lag(view.lags, view.invalid_files)
            result.partitions = len(view.lags)
        except Exception as exc:  # never kills the scheduler: counted and logged, tried again next pass
            result.failed.append(("<consumers>", f"{type(exc).__name__}: {exc}"))
            self.metrics.job_failures.labels("lag").inc()
            event("job.failed", level=logging.ERROR, job="lag", root=self.config.root,
                  error=f"{type(exc).__name__}: {exc}", exc_info=True)
        result.duration_s = time.monotonic() - start
        if self.view is not None:
            self.view.job_finished(result, started_ms)
        self.metrics.job_runs.labels("lag").inc()
        self.metrics.job_duration.labels("lag").observe(result.duration_s)
        if result.ok:
            self.metrics.last_success.labels("lag").set(time.time())
        event("job.finished", level=logging.DEBUG, **result.summary())
        return result

    def full_pass(self) -> JobResult:
        """Every job once (roll, seal, retention, purge), opening each partition once: ``--once``."""
        return self._over_partitions("pass", PASS_ORDER)

    def _over_partitions(self, label: str, steps: Iterable[str]) -> JobResult:
        steps = tuple(steps)
        result = JobResult(label)
        start = time.monotonic()
        started_ms = self.clock()
        try:
            root = self._root() if self.config.root.is_dir() else None
            parts = sorted(root.partitions()) if root is not None else []
            configs: dict[str, TopicConfig] = {}
            gone_topics: set[str] = set()       # told once per pass; a gone folder is not listed by the next
            for topic, partition in parts:
                if self.stop.is_set():  # SIGTERM: finish the partition in hand, start no other
                    result.interrupted = True
                    break
                result.partitions += 1
                name = _name(topic, partition)
                try:
                    if topic not in configs:
                        configs[topic] = self.topic_config(topic, root)
                        self._observe_commits(root, topic)
                    # `tier` concerns remote.storage.enable topics, and partitions with tiered segments of a
                    # topic switched off (KIP-950: deleted with remote.log.delete.on.disable, else refused)
                    mine = tuple(s for s in steps if s != "tier" or configs[topic].tiered
                                 or self._has_tiered(root, topic, partition))
                    if not mine or self._nothing_to_do(root, topic, partition, configs[topic], mine):
                        result.unchanged += 1
                        continue
                    did = self._partition(root, topic, partition, configs[topic], mine)
                except PartitionLockedError:
                    self._memos.pop((topic, partition), None)
                    result.skipped.append(name)
                    for step in steps:
                        self.metrics.partitions_skipped.labels(step).inc()
                    event("partition.skipped", level=logging.DEBUG, job=label, partition=name,
                          reason="locked by another writer")
                    self._observe_readonly(root, topic, partition, configs.get(topic))
                    continue
                except Exception as exc:  # one partition's failure never stops the pass over the others
                    if isinstance(exc, UnknownTopicOrPartitionError) or not root.partition_path(topic, partition).is_dir():
                        self._gone(result, label, topic, partition, gone_topics, exc)
                        continue
                    result.failed.append((name, f"{type(exc).__name__}: {exc}"))
                    self.metrics.job_failures.labels(label).inc()
                    event("partition.failed", level=logging.ERROR, job=label, partition=name,
                          error=f"{type(exc).__name__}: {exc}",
                          exc_info=not isinstance(exc, (SeglogError, OSError)))
                    continue
                if did:
                    result.done[name] = did
            if not self.stop.is_set():
                parts = [p for p in parts if _name(*p) not in result.gone]
                self.metrics.forget_partitions_except(parts)
                if self.view is not None:
                    self.view.forget_partitions_except(parts)
                kept = set(parts)
                self._memos = {k: v for k, v in self._memos.items() if k in kept}
        except Exception as exc:  # the root itself could not be listed: the whole pass failed
            result.failed.append(("<root>", f"{type(exc).__name__}: {exc}"))
            self.metrics.job_failures.labels(label).inc()
            event("job.failed", level=logging.ERROR, job=label, root=self.config.root,
                  error=f"{type(exc).__name__}: {exc}", exc_info=True)
        result.duration_s = time.monotonic() - start
        for step in steps if label == "pass" else (label,):
            self.metrics.job_runs.labels(step).inc()
        self.metrics.job_duration.labels(label).observe(result.duration_s)
        if result.ok:
            self.metrics.last_success.labels(label).set(time.time())
        if self.view is not None:
            self.view.job_finished(result, started_ms)
            self.view.pass_done(self.clock())
        level = logging.INFO if (result.done or result.failed or label in ("recover", "pass")) else logging.DEBUG
        event("job.finished", level=level, **result.summary())
        return result

    def _gone(self, result: JobResult, label: str, topic: str, partition: int, told: set[str], exc: Exception) -> None:
        """A listed partition whose folder is gone when opened: its topic was deleted (DROP TABLE ... PURGE) since the
        listing. Not a failure: nothing is made again (the open creates no folder), its memo and metrics go, and the
        topic is told once per pass."""
        result.gone.append(_name(topic, partition))
        self._memos.pop((topic, partition), None)
        if topic not in told:
            told.add(topic)
            event("topic.gone", job=label, topic=topic, reason=f"{type(exc).__name__}: {exc}")

    def _nothing_to_do(self, root, topic: str, partition: int, cfg: TopicConfig, steps: tuple[str, ...]) -> bool:
        """True when the partition is as the last job left it and none of `steps` is due: not opened
        (no lock, no recovery). Its metrics stay those observed then (its files did not change), with
        the observation time moved to now (the retention lag is computed from it)."""
        if "recover" in steps:
            return False
        memo = self._memos.get((topic, partition))
        now = self.clock()
        if memo is None or any(memo.due_ms.get(step, partition_memo.NOW) <= now for step in steps):
            return False
        if not partition_memo.unchanged(memo, str(root.path / _name(topic, partition)), cfg):
            return False
        self.metrics.note_unchanged(topic, partition, now, steps)
        return True

    def _partition(self, root, topic: str, partition: int, cfg: TopicConfig,
                   steps: tuple[str, ...]) -> dict[str, Any]:
        """Run ``steps`` on one partition, in order: the steps that change the live log under its lock
        (a writable open: lock + recovery, always first), clean and merge beside the writer (their own
        maintenance lock; the partition's lock for each swap only, so the sink never waits for a
        build); then observe it."""
        did: dict[str, Any] = {}
        name = _name(topic, partition)
        runs = _runs(steps)
        if not runs or runs[0][0]:
            runs.insert(0, (False, ()))          # recovery before any clean or merge reads the files
        due = active_base = None
        fault: Exception | None = None
        for i, (beside, run_steps) in enumerate(runs):
            if beside:
                for step in run_steps:
                    try:
                        if step == "clean":
                            if cfg.compacted:
                                self._clean(root, topic, partition, cfg, name, self.clock(), did)
                        elif step == "tier":
                            self._tier(root, topic, partition, cfg, name, did)
                        else:
                            self._merge(root, topic, partition, cfg, name, did)
                    except MaintenanceLockedError as exc:    # another sidecar or `seglog compact` is at it
                        did[f"{step}_skipped"] = str(exc)
                        self.metrics.partitions_skipped.labels(step).inc()
                        event("partition.skipped", level=logging.DEBUG, job=step, partition=name,
                              reason="another cleaner or merger holds it")
                    except OSError as exc:
                        if not _no_space(exc):
                            raise
                        self._defer(step, name, exc, did)
                    except (CorruptRecordError, CorruptIndexError, CompactionError) as exc:
                        # A fault in the files (a corrupt batch the clean or merge reads): the partition
                        # is reported failed once its other steps ran; retention may yet delete the segment.
                        did[f"{step}_failed"] = f"{type(exc).__name__}: {exc}"
                        fault = fault or exc
                continue
            with root.open_log(topic, partition, config=cfg, lock_timeout=self.lock_timeout_s, create=False) as log:
                if i == 0 and log.recovery_report:
                    did["recovered"] = log.recovery_report
                    self.metrics.recovered.inc()
                    event("partition.recovered", level=logging.WARNING, partition=name, report=log.recovery_report)
                self._locked_steps(log, name, run_steps, did)
                if i == len(runs) - 1:
                    due, active_base = self._observe(log, topic, partition, cfg)
        if runs[-1][0]:
            with root.open_log(topic, partition, config=cfg, readonly=True) as log:
                due, active_base = self._observe(log, topic, partition, cfg)
        # Taken once the log is closed: the close may write the recovery point (a folder change).
        memo = partition_memo.take(str(root.path / name), active_base, cfg, due, time.time_ns)
        if memo is None:
            self._memos.pop((topic, partition), None)
        else:
            self._memos[(topic, partition)] = memo
        if fault is not None:
            raise fault
        return did

    def _observe(self, log, topic: str, partition: int, cfg: TopicConfig) -> tuple[dict, int]:
        """The partition's metrics, and what the pass memo needs: when each time-driven step comes due
        next, and the active segment's base."""
        now = self.clock()
        segments = list(log.segments())
        stats = observe(log, topic, partition, cfg, now, segments)
        self.metrics.observe_partition(stats)
        self._observe_view(root_path=log.path.parent, log=log, stats=stats, cfg=cfg, segments=segments, now=now)
        return partition_memo.due_times(log, segments, cfg, now, stats.retention_blocked), log.segment_bases()[-1]

    def _defer(self, step: str, name: str, exc: OSError, did: dict[str, Any]) -> None:
        """A step that needs room on a full volume: left to a later pass, so that retention, which needs
        none, runs in this one and frees the volume (issue 36 item 9)."""
        did[f"{step}_deferred"] = str(exc)
        event("step.deferred", level=logging.WARNING, job=step, partition=name,
              reason=f"no space left on the volume: {exc}")

    def _locked_steps(self, log, name: str, steps: tuple[str, ...], did: dict[str, Any]) -> None:
        for step in steps:
            try:
                self._locked_step(log, name, step, did)
            except OSError as exc:
                if step not in _NEED_ROOM or not _no_space(exc):
                    raise
                self._defer(step, name, exc, did)

    def _locked_step(self, log, name: str, step: str, did: dict[str, Any]) -> None:
        if step == "recover":
            return  # opening the log was the recovery
        now = self.clock()
        if step == "roll":
            if log.roll_if_idle(now):
                did["rolled"] = True
                self.metrics.segments_rolled.inc()
                event("segment.rolled", partition=name, log_end_offset=log.log_end_offset)
        elif step == "seal":
            sealed = list(log.seal_inactive())
            if sealed:
                did["sealed"] = sealed
                self.metrics.segments_sealed.inc(len(sealed))
                event("segments.sealed", partition=name, bases=sealed)
        elif step == "retention":
            if log.config.tiered and self.config.remote is not None:
                return      # the tier job judges a tiered topic's retention over both tiers (no hole between them)
            res = log.apply_retention(now)
            deleted = list(res.deleted_bases)
            if deleted:
                did["deleted"] = deleted
                self.metrics.segments_deleted.inc(len(deleted))
                event("segments.deleted", partition=name, bases=deleted,
                      log_start_offset=res.log_start_offset)
            if res.blocked_by is not None:
                event("retention.blocked", level=logging.WARNING, partition=name,
                      blocked_by_timestamp=res.blocked_by, now_ms=now)
        elif step == "purge":
            purged = list(log.purge_deleted(now))
            if purged:
                did["purged"] = [p.name for p in purged]
                self.metrics.files_purged.inc(len(purged))
                event("files.purged", partition=name, files=[p.name for p in purged])
        else:
            raise ValueError(f"unknown job step {step!r}")

    def _clean(self, root, topic: str, partition: int, cfg: TopicConfig, name: str, now: int,
               did: dict[str, Any]) -> None:
        """One clean of a compacted partition if due, beside its writer (docs/spec.md §3.9:
        indexer/compaction/cleaner.py's clean_partition does the work)."""
        from seglog.indexer.compaction.cleaner import clean_partition

        res = clean_partition(root.partition_path(topic, partition), cfg, now=now,
                              dedupe_buffer_bytes=self.config.schedule.log_cleaner_dedupe_buffer_size,
                              lock_timeout=self.lock_timeout_s)
        if res.given_up is not None:
            did["clean_given_up"] = res.given_up
            event("partition.clean_given_up", partition=name, reason=res.given_up, groups_in=res.groups)
        if not res.cleaned:
            return
        did["cleaned"] = {"groups": res.groups, "records_removed": res.records_removed,
                          "first_dirty_offset": res.first_dirty_after}
        self.metrics.bytes_cleaned.inc(res.dirty_bytes_cleaned)
        self.metrics.bytes_rewritten.inc(res.bytes_read)
        self.metrics.records_removed.inc(res.records_removed)
        self.metrics.clean_duration.observe(res.duration_ms / 1000.0)
        event("partition.cleaned", partition=name, dirty_ratio=round(res.plan.dirty_ratio, 4),
              dirty_bytes=res.dirty_bytes_cleaned, bytes_read=res.bytes_read, bytes_written=res.bytes_written,
              records_removed=res.records_removed, first_dirty_offset=res.first_dirty_after,
              map_entries=res.map_entries, duration_ms=round(res.duration_ms, 1),
              longest_lock_hold_ms=round(res.longest_lock_hold_ms, 1))

    def _has_tiered(self, root, topic: str, partition: int) -> bool:
        """The partition has a remote segment metadata log (it was tiered)."""
        from seglog.indexer.remote.metadata import metadata_path

        return metadata_path(root.path, topic, partition).exists()

    def _tier(self, root, topic: str, partition: int, cfg: TopicConfig, name: str, did: dict[str, Any]) -> None:
        """One tier pass of a remote.storage.enable partition beside the writer (docs/tiered-storage.md §4:
        indexer/remote/tier.py's tier_partition does the work); of a partition with tiered segments on a topic
        switched off, disable_partition (§4a)."""
        from seglog.errors import ConfigError
        from seglog.indexer.remote.tier import disable_partition, tier_partition

        store = self.store()
        if store is None:
            raise ConfigError(f"topic {topic} has remote.storage.enable = {str(cfg.tiered).lower()} and tiered "
                              f"segments but the sidecar's configuration ({self.config.source}) has no remote: "
                              f"section naming the remote tier")
        if not cfg.tiered:
            res = disable_partition(root.path, topic, partition, cfg, store)
        else:
            res = tier_partition(root.path, topic, partition, cfg, store, now=self.clock(),
                                 lock_timeout=self.lock_timeout_s)
        if res.summary():
            did["tier"] = res.summary()
            event("partition.tiered", partition=name, **res.summary())

    def _merge(self, root, topic: str, partition: int, cfg: TopicConfig, name: str, did: dict[str, Any]) -> None:
        """Merge small sealed segments beside the writer (docs/spec.md §3.10: indexer/compaction/segment_merge.py's
        merge_partition does the work)."""
        from seglog.indexer.compaction.segment_merge import merge_partition

        res = merge_partition(root.partition_path(topic, partition), cfg,
                              max_groups=self.config.schedule.merge_max_groups_per_pass,
                              lock_timeout=self.lock_timeout_s)
        if res.given_up is not None:
            did["merge_given_up"] = res.given_up
            event("partition.merge_given_up", partition=name, reason=res.given_up, groups_in=res.groups)
        if not res.groups:
            return
        did["merged"] = res.groups
        self.metrics.segments_merged.inc(res.segments_merged)
        self.metrics.bytes_merged.inc(res.bytes_merged)
        event("segments.merged", partition=name, groups=res.groups, segments=res.segments_merged,
              bytes=res.bytes_merged, duration_ms=round(res.duration_ms, 1),
              longest_lock_hold_ms=round(res.longest_lock_hold_ms, 1))

    def _observe_readonly(self, root, topic: str, partition: int, cfg: TopicConfig | None) -> None:
        """A partition the sink holds: refresh its metrics from a read-only view (no lock, no writes)."""
        try:
            cfg = cfg or self.topic_config(topic, root)
            with root.open_log(topic, partition, config=cfg, readonly=True) as log:
                now = self.clock()
                stats = observe(log, topic, partition, cfg, now)
                self.metrics.observe_partition(stats)
                self._observe_view(root_path=root.path, log=log, stats=stats, cfg=cfg, segments=list(log.segments()),
                                   now=now)
        except Exception as exc:  # metrics are best effort; the next pass tries again
            event("partition.observe_failed", level=logging.DEBUG, partition=_name(topic, partition),
                  error=f"{type(exc).__name__}: {exc}")

    # -- the console's view (best effort: a figure the console cannot gather never fails a job) ---
    def _observe_view(self, *, root_path, log, stats: PartitionStats, cfg: TopicConfig, segments, now: int) -> None:
        if self.view is None:
            return
        try:
            self.view.observe(console_observe.partition_view(self.view, root_path, log, stats, cfg, segments, now))
        except Exception as exc:
            event("console.observe_failed", level=logging.DEBUG, partition=_name(stats.topic, stats.partition),
                  error=f"{type(exc).__name__}: {exc}")

    def _observe_commits(self, root, topic: str) -> None:
        if self.view is None:
            return
        try:
            console_observe.observe_commits(self.view, root.path, topic)
        except Exception as exc:
            event("console.observe_failed", level=logging.DEBUG, topic=topic, error=f"{type(exc).__name__}: {exc}")


_BESIDE_WRITER = ("clean", "merge", "tier")     # steps that work without the partition's lock (their own locks)
# Locked steps that write new blocks (a seal entry, a new segment's files): deferred on a full volume.
# Retention and purge need none (renames, unlinks), so they run and free it.
_NEED_ROOM = ("roll", "seal")


def _no_space(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)


def _runs(steps: tuple[str, ...]) -> list[tuple[bool, tuple[str, ...]]]:
    """``steps`` cut into consecutive runs, each (beside the writer?, its steps), order kept."""
    runs: list[tuple[bool, tuple[str, ...]]] = []
    for step in steps:
        beside = step in _BESIDE_WRITER
        if runs and runs[-1][0] == beside:
            runs[-1] = (beside, runs[-1][1] + (step,))
        else:
            runs.append((beside, (step,)))
    return runs


def observe(log, topic: str, partition: int, cfg: TopicConfig, now: int, segments=None) -> PartitionStats:
    segments = list(log.segments()) if segments is None else segments
    # What time retention compares: the largest timestamp, or the file's mtime where there is none.
    oldest_ts = segments[0].retention_timestamp if segments and segments[0].size_bytes else -1
    return PartitionStats(
        topic=topic, partition=partition, segments=len(segments),
        size_bytes=sum(s.size_bytes for s in segments),
        log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
        largest_timestamp=log.largest_timestamp if segments else -1,
        oldest_segment_timestamp=oldest_ts,
        retention_ms=cfg["retention.ms"],
        retention_blocked=log.retention_blocked(now) is not None,
        unsealed_segments=sum(1 for s in segments if s.state == "inactive"),
        observed_ms=now,
        **_cleaner_stats(log, cfg, now),
    )


def _cleaner_stats(log, cfg: TopicConfig, now: int) -> dict[str, Any]:
    from seglog.indexer.compaction.cleaner import current_plan
    from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset

    checkpoint = cleaner_offset(log.path)
    stats: dict[str, Any] = {"cleaner_checkpoint": -1 if checkpoint is None else checkpoint}
    if cfg.compacted:
        stats["dirty_ratio"] = current_plan(log, now).dirty_ratio
    return stats
