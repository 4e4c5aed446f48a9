"""Writable open benchmark: `Log.open(path, cfg)` of one partition after a clean close (the open timed),
what the sink's executors and the sidecar do for every partition they touch: 1,000 and 10,000 sealed
segments (5 records each) with the recovery point (indexer/recovery_point.py) to show growth, and
10,000 without it (the file removed: recovery examines every segment, as before the point existed).
bench/method.py: one session, every case warmed up, interleaved rounds, median of per-round ratios."""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.method import interleaved, ratio, summary
from seglog.indexer import Log
from seglog.indexer.recovery_point import RECOVERY_POINT_FILE
from seglog.indexer.topics import create_topic

TS = 1_700_000_000_000
CFG = {"segment.bytes": 4096, "segment.index.bytes": 4096, "index.interval.bytes": 256,
       "retention.ms": 10 * 365 * 86_400_000}


def build(root: Path, topic: str, segments: int) -> Path:
    create_topic(root, topic, 1, CFG)
    vals = pa.array([b"x" * 100] * 5, type=pa.binary())
    with Log.open(root / f"{topic}-0", CFG) as log:
        for s in range(segments):
            log.append_columns(vals, None, TS + s * 10 + np.arange(5, dtype=np.int64))
            log.roll()
    return root / f"{topic}-0"


def writable_open(path: Path, *, without_point: bool = False) -> float:
    """Seconds of the open alone; the close (and, without the point, the file's removal) untimed.
    A close after an open without the point raises it again, fsyncing every segment once."""
    if without_point:
        (path / RECOVERY_POINT_FILE).unlink()
    t0 = time.perf_counter()
    log = Log.open(path, CFG)
    seconds = time.perf_counter() - t0
    log.close()
    return seconds


def run(quick: bool = False) -> dict:
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-open-"))
    try:
        t0 = time.perf_counter()
        small, large = build(work, "small", 1_000), build(work, "large", 10_000)
        build_s = time.perf_counter() - t0
        with Log.open(large, CFG) as log:
            examined = log.recovery_examined
        times = interleaved({"open_1k": lambda: writable_open(small), "open_10k": lambda: writable_open(large),
                             "open_10k_no_point": lambda: writable_open(large, without_point=True)},
                            rounds=5 if quick else 15)
        return {"segments": {"small": 1_000, "large": 10_000}, "build_s": build_s,
                "segments_examined_10k": examined,
                "open_1k": summary(times["open_1k"]), "open_10k": summary(times["open_10k"]),
                "open_10k_no_point": summary(times["open_10k_no_point"]),
                "growth_10x_segments": ratio(times["open_10k"], times["open_1k"]),
                "no_point_over_point_10k": ratio(times["open_10k_no_point"], times["open_10k"]),
                "target_s": 0.050}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
