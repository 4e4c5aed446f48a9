"""SIGKILL of the real sidecar process (`seglog compactor run --once`) at random moments while it cleans a
compacted topic (docs/spec.md §3.9, docs/reliability.md). Between kills more keyed updates and
tombstones are appended, so every pass has dirty segments to clean. After every kill, recovery on
open must give: no offset twice, every key's latest record present at its offset (nothing a clean
keeps is ever lost), nothing that was never written (each record read is the one appended at its
offset), a clean `verify`, and no `.cleaned` or `.swap` file left. A last uninterrupted pass then
leaves exactly the latest record per key (tombstones included: delete.retention.ms is long)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from seglog.indexer import Log, Record
from seglog.indexer.topics import create_topic

pytestmark = pytest.mark.slow
KILLS = int(os.environ.get("SEGLOG_KILLS", "10"))
CONFIG = {"cleanup.policy": "compact", "segment.bytes": 16384, "index.interval.bytes": 512, "segment.ms": 1 << 62,
          "min.cleanable.dirty.ratio": 0.01, "delete.retention.ms": 86_400_000}
SIDECAR = """
root: {root}
schedule: {{partition.lock.timeout.ms: 2000}}
http: {{host: 127.0.0.1, port: 0}}
"""


def append_round(path, rng: random.Random, written: dict, round_: int) -> None:
    with Log.open(path, CONFIG) as log:
        for _ in range(6):
            recs = [Record(key=b"key-%d" % rng.randrange(400),
                           value=None if rng.random() < 0.05 else b"r%d-" % round_ + b"v" * rng.randrange(60),
                           timestamp=1_700_000_000_000 + round_)
                    for _ in range(500)]
            info = log.append(recs)
            for i, r in enumerate(recs):
                written[info.first_offset + i] = (r.key, r.value)
        log.roll()
        log.flush()


def check(path, written: dict) -> list[tuple]:
    with Log.open(path, CONFIG) as log:                 # recovery runs here
        got = [(r.offset, r.key, r.value) for r in log.read()]
        assert log.verify() == []
    offsets = [g[0] for g in got]
    assert offsets == sorted(set(offsets)), "an offset twice"
    assert all(written[o] == (k, v) for o, k, v in got), "a record that was never written at its offset"
    latest = {}
    for o in sorted(written):
        latest[written[o][0]] = o
    assert set(latest.values()) <= set(offsets), "a key's latest record was lost"
    assert not [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap")) or ".tmp-" in n]
    return got


class SidecarEvents:
    """Reads a sidecar's JSON-line log as it runs: when it started working, and how long its pass took."""

    def __init__(self, proc):
        self.working = threading.Event()
        self.work_s: float | None = None
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self.reader.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line)
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("event") == "compactor.starting":
                self.working.set()
            elif entry.get("event") == "compactor.pass_done":
                self.work_s = float(entry["duration_s"])
        self.working.set()   # the process ended (killed, or failed before the lock): nothing to wait for

    def tail(self) -> str:
        return "".join(self.lines[-20:])


def test_sidecar_killed_mid_clean(tmp_path):
    root = tmp_path / "root"
    path = root / "state-0"
    create_topic(root, "state", 1, CONFIG)
    config = tmp_path / "compactor.yaml"
    config.write_text(SIDECAR.format(root=root))
    rng = random.Random(7)
    written: dict[int, tuple] = {}
    kills = rounds = interrupted = 0
    work_s = 1.0    # how long a pass's work took when left alone (its pass_done event); kills are drawn within it
    # Each kill lands at a random moment of the pass's work (after the sidecar logged compactor.starting:
    # leader lock, recovery, seal, clean, merge), not in the interpreter's start-up; a pass that ends before its
    # kill counts as a round and teaches how long the work takes. Rounds go on (bounded) until KILLS kills.
    while kills < KILLS and rounds < 3 * KILLS:
        append_round(path, rng, written, rounds)
        rounds += 1
        proc = subprocess.Popen([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        events = SidecarEvents(proc)
        assert events.working.wait(120), "the sidecar never started: " + events.tail()
        # Every other kill near the pass's end, where the clean writes its .cleaned files and swaps them in.
        time.sleep((rng.uniform(0.0, 0.9) if rounds % 2 else rng.uniform(0.85, 1.0)) * work_s)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        events.reader.join(10)
        if events.work_s is not None:
            work_s = events.work_s
        left = [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap"))]
        interrupted += bool(left)
        check(path, written)
    done = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = check(path, written)
    latest = {}
    for o in sorted(written):
        latest[written[o][0]] = o
    assert [g[0] for g in got] == sorted(latest.values())     # exactly the latest record per key
    print(f"kill loop (sidecar cleaning): {kills} kills mid-pass in {rounds} rounds (passes of {work_s:.2f} s), "
          f"{interrupted} left a clean half done (.cleaned or .swap files) for recovery")
    assert kills >= KILLS // 2
