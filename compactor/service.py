"""The sidecar's process: ``seglog compactor run --config FILE [--once]`` (docs/spec.md §9).

Life of a sidecar:
1. parse and validate the configuration (a bad file stops it here, naming the key);
2. serve ``/healthz``, ``/readyz``, ``/metrics`` and the read-only console (compactor/http.py);
3. take the root's leader lock, retrying; a sidecar that is not the leader does no work and is not ready;
4. recover every partition (opening a writable Log runs recovery), then report ready;
5. run the jobs on an APScheduler BackgroundScheduler: one worker thread, so jobs never race each
   other for a partition's lock; ``max_instances=1`` and ``coalesce`` so a slow pass is never stacked;
6. on SIGTERM or SIGINT: finish the partition in hand, stop the scheduler, release the lock, exit 0.

``--once``: take the leader lock, one full pass (recover, roll, seal, retention, purge) over every
partition, print the summary, exit 0; non-zero with the reason when a partition failed or was locked.
"""
from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from seglog.compactor import logging as jlog
from seglog.compactor.config import CompactorConfig, load_config
from seglog.compactor.console_view import ConsoleView
from seglog.compactor.http import EndpointServer
from seglog.compactor.jobs import Jobs, JobResult
from seglog.compactor.leader import LeaderLock
from seglog.compactor.logging import event
from seglog.compactor.metrics import Metrics
from seglog.errors import ConfigError, SymlinkInRootError

EXIT_OK = 0
EXIT_FAILED = 1        # a job failed, or a partition could not be processed
EXIT_CONFIG = 2        # the configuration (or the command line) is wrong
EXIT_NOT_LEADER = 3    # --once: another sidecar holds the root's leader lock

# Jobs and the schedule keys that drive them.
_SCHEDULE = (
    ("roll", "roll_interval_ms"),
    ("seal", "seal_interval_ms"),
    ("retention", "retention_check_interval_ms"),
    ("purge", "delete_check_interval_ms"),
    ("clean", "clean_interval_ms"),
    ("merge", "merge_interval_ms"),
    ("tier", "tier_interval_ms"),
)
# --once waits at least this long for a partition the sink is writing before giving up on it.
_ONCE_LOCK_TIMEOUT_MS = 5_000


class Service:
    def __init__(self, config: CompactorConfig):
        self.config = config
        self.metrics = Metrics()
        self.stop_event = threading.Event()
        self.leader = LeaderLock(config.root)
        c = config.console
        self.view = ConsoleView(c.samples_max, c.sample_interval_ms) if c.enable else None
        self.jobs = Jobs(config, self.metrics, self.stop_event, view=self.view)
        self.scheduler = None
        self.recovered = False
        self.http: EndpointServer | None = None
        self.started_at = time.time()

    # -- probes ------------------------------------------------------------------------------
    def health(self) -> tuple[bool, dict]:
        sched = self.scheduler
        if sched is None:
            # Waiting for the leader lock or recovering: alive, and restarting would not help.
            return True, {"state": "waiting for leader" if not self.leader.held else "recovering"}
        thread = getattr(sched, "_thread", None)
        alive = bool(sched.running) and (thread is None or thread.is_alive())
        return alive, {"state": "running" if alive else "scheduler stopped"}

    def ready(self) -> tuple[bool, dict]:
        if self.stop_event.is_set():
            return False, {"reason": "stopping"}
        if not self.leader.held:
            return False, {"reason": "not leader: another sidecar holds " + str(self.leader.path)}
        if not self.recovered:
            return False, {"reason": "start-up recovery in progress"}
        return True, {"leader": True}

    # -- life ----------------------------------------------------------------------------------
    def request_stop(self, reason: str) -> None:
        if not self.stop_event.is_set():
            event("compactor.stopping", reason=reason)
        self.stop_event.set()
        self.metrics.ready.set(0)

    def start_http(self) -> None:
        h = self.config.http
        console = None
        if self.view is not None:
            from seglog.compactor.console_app import Console

            console = Console(self.view, self.config.console, self.config.root, self.jobs.topic_config,
                              store=self.jobs.store)
        self.http = EndpointServer(h.host, h.port, self.health, self.ready, self.metrics.render,
                                   read_timeout_s=h.read_timeout_ms / 1000, max_connections=h.max_connections,
                                   bearer_token=h.bearer_token, console_routes=console.routes() if console else None)
        self.http.start()
        host, port = self.http.address
        event("http.listening", host=host, port=port, bearer_token=h.bearer_token is not None,
              paths=["/healthz", "/readyz", "/metrics"] + (["/console/"] if console else []))

    def serve(self) -> int:
        """Run until stop is requested. Returns the exit code."""
        self.start_http()
        try:
            return self._serve()
        finally:
            self._shutdown()

    def _serve(self) -> int:
        retry_s = self.config.schedule.leader_retry_interval_ms / 1000.0
        got = self.leader.acquire(self.stop_event, retry_s, on_wait=lambda: event(
            "leader.waiting", lock=self.leader.path, retry_ms=self.config.schedule.leader_retry_interval_ms))
        if not got:
            return EXIT_OK  # stopped while waiting: nothing was done, nothing to finish
        self.metrics.leader.set(1)
        event("leader.acquired", lock=self.leader.path)
        self.jobs.record_remote()       # readers find the remote tier under the root (docs/tiered-storage.md §1)

        self.jobs.run("recover")
        if self.stop_event.is_set():
            return EXIT_OK
        self.recovered = True
        self.metrics.ready.set(1)
        event("compactor.ready", root=self.config.root)

        self.scheduler = self._make_scheduler()
        self.scheduler.start()
        while not self.stop_event.wait(0.5):
            ok, detail = self.health()
            if not ok:  # the scheduler died under us: exit non-zero so the pod restarts
                event("compactor.scheduler_died", level=logging.ERROR, **detail)
                return EXIT_FAILED
        return EXIT_OK

    def _intervals(self):
        for job, key in _SCHEDULE:
            yield job, getattr(self.config.schedule, key)
        yield "lag", self.config.consumer.lag_interval_ms

    def _make_scheduler(self):
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler
        from apscheduler.triggers.interval import IntervalTrigger

        scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=1)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone=timezone.utc,
        )
        now = datetime.now(timezone.utc)
        for job, interval_ms in self._intervals():
            scheduler.add_job(self._run_job, IntervalTrigger(seconds=interval_ms / 1000.0, timezone=timezone.utc),
                              args=(job,), id=job, name=job, next_run_time=now)
        return scheduler

    def _run_job(self, job: str) -> None:
        if self.stop_event.is_set():
            return
        try:
            self.jobs.run(job)
        except Exception:  # Jobs.run catches per partition; this is a bug, keep the scheduler alive
            self.metrics.job_failures.labels(job).inc()
            event("job.crashed", level=logging.ERROR, job=job, exc_info=True)

    def _shutdown(self) -> None:
        self.stop_event.set()
        self.metrics.ready.set(0)
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=True)  # waits for the job in hand (it stops between partitions)
        self.leader.release()
        self.metrics.leader.set(0)
        if self.http is not None:
            self.http.stop()
        event("compactor.stopped", uptime_s=round(time.time() - self.started_at, 3))


def run_once(config: CompactorConfig) -> int:
    """Recover and one full pass of every job over every partition; the summary goes to stdout."""
    once_cfg = config
    if config.schedule.partition_lock_timeout_ms < _ONCE_LOCK_TIMEOUT_MS:
        from dataclasses import replace

        once_cfg = replace(config, schedule=replace(config.schedule, partition_lock_timeout_ms=_ONCE_LOCK_TIMEOUT_MS))
    service = Service(once_cfg)
    _install_signals(service)
    if not service.leader.try_acquire():
        event("compactor.failed", level=logging.ERROR,
              error=f"another sidecar holds the leader lock {service.leader.path}; "
                    f"--once would race it (stop it, or let it do the work)")
        return EXIT_NOT_LEADER
    try:
        service.jobs.record_remote()
        result: JobResult = service.jobs.full_pass()
    except ConfigError as exc:
        event("compactor.failed", level=logging.ERROR, error=f"invalid configuration: {exc}")
        return EXIT_CONFIG
    finally:
        service.leader.release()
    summary = result.summary()
    summary["root"] = str(config.root)
    summary["recovered"] = sorted(p for p, d in result.done.items() if "recovered" in d)
    print(json.dumps(summary, default=str), flush=True)
    if result.interrupted:
        event("compactor.stopped", interrupted=True)
        return EXIT_OK
    if result.failed or result.skipped:
        problems = [f"{p}: {e}" for p, e in result.failed] + [f"{p}: locked by another writer" for p in result.skipped]
        event("compactor.failed", level=logging.ERROR, error="the pass did not complete for: " + "; ".join(problems))
        return EXIT_FAILED
    event("compactor.pass_done", partitions=result.partitions, duration_s=round(result.duration_s, 3))
    return EXIT_OK


def _install_signals(service: Service) -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # signals can only be handled on the main thread (e.g. a test running the service)

    def handler(signum, _frame):
        service.request_stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run(config_path: str | Path, once: bool = False) -> int:
    """``seglog compactor run --config FILE [--once]``: the exit code."""
    jlog.setup()
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        event("compactor.failed", level=logging.ERROR, error=f"invalid configuration: {exc}")
        return EXIT_CONFIG
    event("compactor.starting", config=str(config_path), root=config.root, once=once)
    try:
        if once:
            return run_once(config)
        service = Service(config)
        _install_signals(service)
        return service.serve()
    except SymlinkInRootError as exc:   # _seglog/ or a folder in it linked away: nothing is written there
        event("compactor.failed", level=logging.ERROR, error=str(exc))
        return EXIT_FAILED
    except ConfigError as exc:      # the root records another remote tier
        event("compactor.failed", level=logging.ERROR, error=f"invalid configuration: {exc}")
        return EXIT_CONFIG
    except OSError as exc:  # e.g. the HTTP port is taken, or the root is not writable
        event("compactor.failed", level=logging.ERROR, error=f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED


def build_parser(prog: str = "seglog compactor run") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="seglog's sidecar: seal, roll, retention, purge, recovery.")
    p.add_argument("--config", required=True, help="the sidecar's YAML file (see conf/compactor.yaml)")
    p.add_argument("--once", action="store_true", help="recover and run every job once, then exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m seglog.compactor --config FILE [--once]``; also what ``seglog compactor run`` calls."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    return run(args.config, once=args.once)
