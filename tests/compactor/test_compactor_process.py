"""The real sidecar process (docs/spec.md §4, 9): `python -m seglog.compactor --config ...` on a root with data, its
endpoints over loopback, sealing and retention as they happen, SIGTERM -> exit 0, a second sidecar
that waits for the leader lock, SIGKILL at random instants during busy passes, and `--once` repairing
everything afterwards."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.crash_states import unseal_rolled_segments
from seglog.indexer import Log, Record
from seglog.indexer.topics import create_topic

from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
DAY = 86_400_000
SMALL = {"segment.bytes": 1024, "segment.ms": 1 << 62, "index.interval.bytes": 64}

pytestmark = pytest.mark.slow


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def write_partition(root: Path, topic: str, partition: int, partitions: int, old: int, recent: int,
                    cfg: dict) -> dict[int, bytes]:
    """`old` one-record segments 10 days old, then `recent` fresh ones. Returns offset -> value."""
    create_topic(root, topic, partitions, cfg)
    now = now_ms()
    written = {}
    with Log.open(root / f"{topic}-{partition}", cfg) as log:
        for i in range(old + recent):
            ts = now - 10 * DAY + i if i < old else now + i
            value = f"{topic}/{partition}/{i}/".encode().ljust(800, b".")  # one record per 1 KiB segment
            info = log.append([Record(key=b"%d" % i, value=value, timestamp=ts)])
            written[info.first_offset] = value
        log.flush()
    return written


def write_config(tmp_path: Path, root: Path, port: int, **schedule) -> Path:
    sched = {"seal.interval.ms": 200, "roll.interval.ms": 300, "retention.check.interval.ms": 300,
             "delete.check.interval.ms": 300, "partition.lock.timeout.ms": 100, "leader.retry.interval.ms": 200}
    sched.update(schedule)
    path = tmp_path / f"compactor-{port}.yaml"
    path.write_text(yaml.safe_dump({
        "root": str(root),
        "log": {"retention.ms": DAY, "file.delete.delay.ms": 500},
        "topics": {"clicks": {"retention.ms": 2 * DAY}},
        "schedule": sched,
        "http": {"host": "127.0.0.1", "port": port},
    }))
    return path


class Sidecar:
    def __init__(self, tmp_path: Path, config: Path, port: int, *extra: str):
        self.port = port
        self.log_path = tmp_path / f"sidecar-{port}-{time.monotonic_ns()}.log"
        self._err = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "seglog.compactor", "--config", str(config), *extra],
                                     cwd=REPO, stdout=subprocess.DEVNULL, stderr=self._err)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def wait_for(self, path: str, status: int, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"sidecar exited {self.proc.returncode}: {self.logs()[-2000:]}"
            try:
                code, body = self.get(path)
                if code == status:
                    return body
                last = (code, body)
            except OSError as exc:
                last = exc
            time.sleep(0.1)
        raise AssertionError(f"{path} never answered {status} (last: {last}); logs: {self.logs()[-2000:]}")

    def metric(self, name: str, **labels) -> float | None:
        from prometheus_client.parser import text_string_to_metric_families

        _, text = self.get("/metrics")
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name == name and all(s.labels.get(k) == str(v) for k, v in labels.items()):
                    return s.value
        return None

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._err.close()


def inactive_unsealed(root: Path) -> int:
    count = 0
    for part in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "_seglog"):
        with Log.open(part, readonly=True) as log:
            count += sum(1 for s in log.segments() if s.state == "inactive")
    return count


def log_start(root: Path, name: str) -> int:
    with Log.open(root / name, readonly=True) as log:
        return log.log_start_offset


@pytest.fixture
def root_with_data(tmp_path):
    root = tmp_path / "root"
    written = {}
    for topic in ("events", "clicks"):
        for p in range(2):
            written[f"{topic}-{p}"] = write_partition(root, topic, p, 2, old=5, recent=8, cfg=SMALL)
            unseal_rolled_segments(root / f"{topic}-{p}")   # as writers killed mid-roll leave them
    return root, written


def wait_until(cond, timeout=60, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_sidecar_serves_seals_enforces_retention_and_stops_on_sigterm(tmp_path, root_with_data):
    root, written = root_with_data
    assert inactive_unsealed(root) > 0
    port = free_port()
    side = Sidecar(tmp_path, write_config(tmp_path, root, port), port)
    try:
        health = json.loads(side.wait_for("/healthz", 200))
        assert health["ok"] is True
        ready = json.loads(side.wait_for("/readyz", 200))
        assert ready["leader"] is True
        wait_until(lambda: inactive_unsealed(root) == 0, what="every inactive segment sealed")
        # events: retention.ms 1 day (the file's log) -> the 5 old segments go; clicks: 2 days -> also.
        for name in written:
            wait_until(lambda: log_start(root, name) == 5, what=f"retention on {name}")
        # .deleted files are unlinked after file.delete.delay.ms (500 ms).
        wait_until(lambda: not list(root.rglob("*.deleted")), what=".deleted files purged")
        assert side.metric("seglog_partition_log_start_offset", topic="events", partition=0) == 5
        assert side.metric("seglog_partition_log_end_offset", topic="clicks", partition=1) == 13
        assert side.metric("seglog_partition_segments", topic="events", partition=1) == 8
        assert side.metric("seglog_partition_unsealed_segments", topic="events", partition=1) == 0
        assert side.metric("seglog_partition_retention_blocked", topic="clicks", partition=0) == 0
        assert side.metric("seglog_partition_retention_ms", topic="clicks", partition=0) == 2 * DAY
        assert side.metric("seglog_partition_size_bytes", topic="events", partition=0) > 0
        assert side.metric("seglog_compactor_leader") == 1 and side.metric("seglog_compactor_ready") == 1
        assert side.metric("seglog_compactor_job_runs_total", job="seal") >= 1
        assert side.metric("seglog_compactor_job_duration_seconds_count", job="retention") >= 1
        assert side.metric("seglog_compactor_job_failures_total", job="seal") == 0
        assert side.metric("seglog_compactor_segments_deleted_total") == 20
        code, _ = side.get("/nope")
        assert code == 404
    finally:
        rc = side.stop(signal.SIGTERM)
    assert rc == 0, side.logs()[-3000:]
    lines = [json.loads(line) for line in side.logs().splitlines() if line.strip()]
    assert all({"ts", "level", "event"} <= set(line) for line in lines)
    events = [line["event"] for line in lines]
    assert "leader.acquired" in events and "compactor.ready" in events and "segments.sealed" in events
    assert "segments.deleted" in events and events[-1] == "compactor.stopped"
    # No record that retention did not remove is lost.
    for name, values in written.items():
        with Log.open(root / name, readonly=True) as log:
            assert {r.offset: r.value for r in log.read()} == {o: v for o, v in values.items() if o >= 5}
            assert log.verify() == []


def test_second_sidecar_waits_for_the_leader_lock_and_is_not_ready(tmp_path, root_with_data):
    root, _ = root_with_data
    p1, p2 = free_port(), free_port()
    first = Sidecar(tmp_path, write_config(tmp_path, root, p1), p1)
    second = None
    try:
        first.wait_for("/readyz", 200)
        second = Sidecar(tmp_path, write_config(tmp_path, root, p2), p2)
        second.wait_for("/healthz", 200)
        time.sleep(1.0)  # several leader retries
        code, body = second.get("/readyz")
        assert code == 503 and "not leader" in json.loads(body)["reason"]
        assert second.metric("seglog_compactor_leader") == 0
        assert second.metric("seglog_compactor_job_runs_total", job="seal") == 0  # it does no work
        assert first.stop(signal.SIGTERM) == 0
        # The lock is free: the second takes over.
        second.wait_for("/readyz", 200, timeout=30)
        assert second.metric("seglog_compactor_leader") == 1
        assert second.stop(signal.SIGINT) == 0
        assert any(json.loads(line)["event"] == "leader.waiting" for line in second.logs().splitlines())
    finally:
        first.stop(signal.SIGKILL)
        if second is not None:
            second.stop(signal.SIGKILL)


def test_once_refuses_to_race_a_running_sidecar(tmp_path, root_with_data):
    root, _ = root_with_data
    port = free_port()
    side = Sidecar(tmp_path, write_config(tmp_path, root, port), port)
    try:
        side.wait_for("/readyz", 200)
        proc = subprocess.run([sys.executable, "-m", "seglog.compactor", "--config", str(write_config(tmp_path, root, 1)),
                               "--once"], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 3
        assert "leader lock" in proc.stderr
    finally:
        assert side.stop() == 0


def test_sigkill_at_random_instants_then_once_repairs_everything(tmp_path):
    root = tmp_path / "root"
    written = {}
    for p in range(3):
        written[f"events-{p}"] = write_partition(root, "events", p, 3, old=40, recent=110, cfg=SMALL)
        unseal_rolled_segments(root / f"events-{p}")
    rng = random.Random(int(os.environ.get("SEGLOG_TEST_SEED", "20240611")))
    kills = 0
    for attempt in range(6):
        port = free_port()
        side = Sidecar(tmp_path, write_config(tmp_path, root, port, **{"seal.interval.ms": 50}), port)
        # Kill somewhere in start-up recovery, the first seal/retention pass, or between passes.
        time.sleep(rng.uniform(0.3, 2.5))
        if side.stop(signal.SIGKILL, timeout=30) == -signal.SIGKILL:
            kills += 1
    assert kills == 6
    proc = subprocess.run([sys.executable, "-m", "seglog.compactor", "--config", str(write_config(tmp_path, root, 1)),
                           "--once"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["failed"] == [] and summary["skipped"] == [] and summary["partitions"] == 3
    assert inactive_unsealed(root) == 0
    for name, values in written.items():
        with Log.open(root / name, readonly=True) as log:
            assert log.verify() == [], name
            assert log.log_start_offset == 40  # exactly the expired records went
            assert {r.offset: r.value for r in log.read()} == {o: v for o, v in values.items() if o >= 40}
        # Sealed from the files alone: trimmed indexes and the final time index entry.
        from test_compactor_jobs import assert_sealed_on_disk  # noqa: E402 (shared check)
        assert assert_sealed_on_disk(root / name) == 109
