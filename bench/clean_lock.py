"""A writer beside the cleaner (issue 24, docs/compaction.md): a batch of 1,000 rows (`Log.open` with the
sink's lock wait, `append_columns`, `flush`, close: what a sink task does for one partition) on a
compacted partition while another process cleans ~200 MB of it, against the same batches on the same
partition with no clean running. Target: at most 1.2x; and the clean's longest hold of the partition's
lock (its `CleanResult.lock_holds_ms`) at most 100 ms.

Method (bench/method.py): the partition is built once; every round copies it afresh for each case
(untimed) and runs both cases, interleaved A, B / B, A, after one warm-up round. In the `beside` case a
cleaner process (`clean_partition`, as the sidecar and `seglog compact` run it) starts on the copy; once
its first `.cleaned` file shows (the rewrite and its swaps under way) the writer runs BATCHES batches,
50 ms apart; the case's time is the sum of the batches' times. The `alone` case runs the same batches
with no cleaner. Reported: the median of per-round ratios (beside / alone) with min and max, the
clean's longest lock hold and its number of holds, each batch's `Log.open` time (the lock wait: apart
from the CPU and disk the clean takes from the writer on a small machine), and how long the clean took (the writer's wait when
the whole clean held the lock). Run: `python -m bench.clean_lock [--quick]`, or `python -m bench --only clean_lock`.
"""
from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench import method
from seglog.indexer import Log

TS = 1_700_000_000_000
CONFIG = {"cleanup.policy": "compact", "segment.bytes": 8 << 20, "index.interval.bytes": 4096,
          "min.cleanable.dirty.ratio": 0.01, "delete.retention.ms": 86_400_000}
VALUE = 200
ROWS = 1_000
BATCHES = 10

_CLEANER = r"""
import json, sys
from seglog.indexer.compaction.cleaner import clean_partition
res = clean_partition(sys.argv[1], json.loads(sys.argv[2]), force=True, lock_timeout=600)
print(json.dumps({"holds_ms": res.lock_holds_ms, "groups": len(res.groups), "given_up": res.given_up,
                  "duration_ms": res.duration_ms, "dirty_bytes": res.dirty_bytes_cleaned}))
"""


def build(path: Path, mb: int) -> None:
    """`mb` MB of keyed updates (keys = records / 10, every 50th a tombstone), every segment rolled: all dirty."""
    n = mb * (1 << 20) // (VALUE + 40)
    keys_n = max(1, n // 10)
    rng = np.random.default_rng(mb)
    with Log.open(path, CONFIG) as log:
        for lo in range(0, n, 50_000):
            m = min(50_000, n - lo)
            keys = pa.array([b"key-%08d" % k for k in rng.integers(0, keys_n, m).tolist()], pa.binary())
            vals = pa.array([None if (lo + i) % 50 == 0 else b"v" * VALUE for i in range(m)], pa.binary())
            log.append_columns(vals, keys, np.full(m, TS, np.int64))
        log.roll()


_BATCH_KEYS = pa.array([b"batch-key-%04d" % i for i in range(ROWS)], pa.binary())
_BATCH_VALUES = pa.array([b"w" * VALUE] * ROWS, pa.binary())


def batches(path: Path, opens: list[float]) -> float:
    """BATCHES sink-like batches, 50 ms apart (untimed): the seconds they took together. `opens` gets
    each batch's `Log.open` time (the lock wait and recovery: where a clean holding the lock shows)."""
    total = 0.0
    for _ in range(BATCHES):
        t = time.perf_counter()
        with Log.open(path, CONFIG, lock_timeout=600) as log:
            opens.append(time.perf_counter() - t)
            log.append_columns(_BATCH_VALUES, _BATCH_KEYS, np.full(ROWS, TS + 1, np.int64))
            log.flush()
        total += time.perf_counter() - t
        time.sleep(0.05)
    return total


def run(quick: bool = False) -> dict:
    mb = 48 if quick else 200
    rounds = 5 if quick else 7
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-clean-lock-"))
    cleans: list[dict] = []
    opens: dict[str, list[float]] = {"beside": [], "alone": []}
    try:
        src = work / "src" / "bench-0"
        build(src, mb)

        def fresh(name: str) -> Path:
            copy = work / name / "bench-0"
            shutil.rmtree(copy.parent, ignore_errors=True)
            shutil.copytree(src, copy)
            for p in copy.iterdir():              # the same page cache state for both cases
                with open(p, "rb", buffering=0) as fh:
                    while fh.read(8 << 20):
                        pass
            return copy

        def alone() -> float:
            return batches(fresh("alone"), opens["alone"])

        def beside() -> float:
            path = fresh("beside")
            proc = subprocess.Popen([sys.executable, "-c", _CLEANER, str(path), json.dumps(CONFIG)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            while proc.poll() is None and not any(p.name.endswith(".log.cleaned") for p in path.iterdir()):
                time.sleep(0.005)
            seconds = batches(path, opens["beside"])
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(err[-2000:])
            cleans.append(json.loads(out))
            return seconds

        times = method.interleaved({"beside": beside, "alone": alone}, rounds)
        cleans = cleans[1:]                       # the warm-up round's clean is not reported
        holds = [h for c in cleans for h in c["holds_ms"]]
        return {
            "params": {"mb": mb, "rows_per_batch": ROWS, "batches": BATCHES, "rounds": rounds,
                       "segment_bytes": CONFIG["segment.bytes"]},
            "batch_beside_clean_vs_alone": method.ratio(times["beside"], times["alone"]),
            "beside": method.summary(times["beside"]), "alone": method.summary(times["alone"]),
            "clean_longest_lock_hold_ms": max(holds, default=0.0),
            # Log.open per batch (lock wait + recovery), warm-up included: ms median and max per case.
            "open_ms": {k: {"median": 1000 * statistics.median(v), "max": 1000 * max(v)} for k, v in opens.items()},
            "clean_lock_holds_per_clean": [len(c["holds_ms"]) for c in cleans],
            "clean_duration_ms": [round(c["duration_ms"], 1) for c in cleans],
            "clean_dirty_bytes": [c["dirty_bytes"] for c in cleans],
            "given_up": [c["given_up"] for c in cleans if c["given_up"]],
            "targets": {"ratio_max": 1.2, "longest_lock_hold_ms_max": 100},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
