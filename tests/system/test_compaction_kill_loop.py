"""SIGKILL of the real sidecar process (`seglog compactor run --once`) at random moments while it cleans a
compacted topic (docs/spec.md §3.9, docs/reliability.md). Between kills more keyed updates and
tombstones are appended, so every pass has dirty segments to clean. After every kill, recovery on
open must give: no offset twice, every key's latest record present at its offset (nothing a clean
keeps is ever lost), nothing that was never written (each record read is the one appended at its
offset), a clean `verify`, and no `.cleaned` or `.swap` file left. A last uninterrupted pass then
leaves exactly the latest record per key (tombstones included: delete.retention.ms is long)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
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


def test_sidecar_killed_mid_clean(tmp_path):
    root = tmp_path / "root"
    path = root / "state-0"
    create_topic(root, "state", 1, CONFIG)
    config = tmp_path / "compactor.yaml"
    config.write_text(SIDECAR.format(root=root))
    rng = random.Random(7)
    written: dict[int, tuple] = {}
    kills = rounds = 0
    # A pass that ends before its kill counts as a round, not a kill: rounds go on (bounded) until
    # KILLS kills landed mid-pass, whatever the machine's speed.
    while kills < KILLS and rounds < 3 * KILLS:
        append_round(path, rng, written, rounds)
        rounds += 1
        proc = subprocess.Popen([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 3.0))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        check(path, written)
    done = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = check(path, written)
    latest = {}
    for o in sorted(written):
        latest[written[o][0]] = o
    assert [g[0] for g in got] == sorted(latest.values())     # exactly the latest record per key
    print(f"kill loop (sidecar cleaning): {kills} kills mid-pass in {rounds} rounds")
    assert kills >= KILLS // 2
