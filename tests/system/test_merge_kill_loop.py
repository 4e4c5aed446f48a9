"""SIGKILL of the real sidecar process (`seglog compactor run --once`) while it merges small segments
(docs/spec.md §3.10, docs/reliability.md). Each round appends more small segments to every partition
(as the sink's JVM writer publishes them), then runs a pass and kills it: most kills aim at the merge
(the moment a `.cleaned` or `.swap` file appears, plus a random delay), the others at a random
instant. After every kill, recovery on open must give every record ever written, once, at its offset,
with its value; a clean `verify`; no `.cleaned` or `.swap` file left. The loop runs until KILLS kills
landed while the process ran (bounded), and a last uninterrupted pass leaves fewer, larger segments."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from seglog.indexer import Log
from seglog.indexer.compaction import segment_merge
from seglog.indexer.topics import create_topic

pytestmark = pytest.mark.slow
KILLS = int(os.environ.get("SEGLOG_KILLS", "10"))
PARTITIONS = 3
CONFIG = {"segment.bytes": 64 << 20, "index.interval.bytes": 4096, "file.delete.delay.ms": 0}
SIDECAR = """
root: {root}
schedule: {{partition.lock.timeout.ms: 2000}}
http: {{host: 127.0.0.1, port: 0}}
"""
VALUE = 4000


def value(p: int, offset: int) -> bytes:
    return (b"%d:%d:" % (p, offset)).ljust(VALUE, b"x")


def append_round(root, rng: random.Random) -> None:
    import pyarrow as pa

    now = time.time_ns() // 1_000_000
    for p in range(PARTITIONS):
        with Log.open(root / f"events-{p}", CONFIG) as log:
            for _ in range(rng.randrange(10, 30)):            # small segments of 40 to 200 records
                n = rng.randrange(40, 200)
                start = log.log_end_offset
                log.append_columns(pa.array([value(p, start + i) for i in range(n)], pa.binary()),
                                   timestamps=np.full(n, now, np.int64))
                log.roll()
            log.flush()


def leftovers(path) -> list[str]:
    return [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap"))]


def check(root) -> int:
    segments = 0
    for p in range(PARTITIONS):
        path = root / f"events-{p}"
        with Log.open(path, CONFIG) as log:                  # recovery runs here
            assert log.verify() == []
            offsets, values = [], []
            for b in log.read_arrow(log.log_start_offset):
                offsets += b.column("offset").to_pylist()
                values += b.column("value").to_pylist()
            assert offsets == list(range(log.log_end_offset)), f"events-{p}: a record lost or twice"
            assert all(v == value(p, o) for o, v in zip(offsets, values)), f"events-{p}: a record changed"
            segments += len(log.segment_bases())
        assert leftovers(path) == []
    return segments


def run_pass(config):
    return subprocess.Popen([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_sidecar_killed_mid_merge(tmp_path):
    root = tmp_path / "root"
    create_topic(root, "events", PARTITIONS, CONFIG)
    config = tmp_path / "compactor.yaml"
    config.write_text(SIDECAR.format(root=root))
    rng = random.Random(13)
    kills = mid_merge = rounds = 0
    dirs = [root / f"events-{p}" for p in range(PARTITIONS)]
    while kills < KILLS and rounds < 3 * KILLS:
        append_round(root, rng)
        rounds += 1
        proc = run_pass(config)
        if rounds % 3:
            # Aim at the merge: kill once its files appear (a random moment of its file work).
            while proc.poll() is None and not any(leftovers(d) for d in dirs):
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.03))
        else:
            time.sleep(rng.uniform(0.3, 3.0))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
            mid_merge += any(leftovers(d) for d in dirs)
        proc.wait()
        check(root)
    append_round(root, rng)                 # work for the last pass, whatever the last kill interrupted
    before = check(root)
    done = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    after = check(root)
    print(f"kill loop (sidecar merging): {kills} kills in {rounds} rounds, {mid_merge} left merge files behind; "
          f"segments {before} -> {after}")
    assert kills >= KILLS // 2 and mid_merge >= 1
    assert after < before
    for d in dirs:          # nothing left to merge: the pass finished the work the kills interrupted
        with Log.open(d, CONFIG) as log:
            assert segment_merge.current_plan(log) == []
