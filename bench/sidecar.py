"""Sidecar benchmark: one `seglog compactor run --once` pass (recover, roll, seal, retention, purge)
over P partitions x S unsealed segments, as a real process: wall time and peak memory (max RSS), and
how both grow with 10x the segments per partition. Baseline in the same run: the same process
starting and exiting over an empty root (its fixed cost: interpreter, imports)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from seglog.indexer import Log
from seglog.indexer.topics import create_topic

TS = 1_700_000_000_000
_MAXRSS = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
           "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode; "
           "print(rc, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def build_root(root: Path, partitions: int, segments: int) -> None:
    """One partition written through the Log API (segments rolled, left unsealed as the sink leaves
    them), copied to the others."""
    cfg = {"segment.bytes": 4096, "segment.index.bytes": 4096, "index.interval.bytes": 256,
           "retention.ms": 10 * 365 * 86_400_000}
    create_topic(root, "bench", partitions, cfg)
    template = root / "bench-0"
    vals = pa.array([b"x" * 100] * 30, type=pa.binary())
    with Log.open(template, cfg) as log:
        for s in range(segments):
            ts = TS + s * 1000 + np.arange(30, dtype=np.int64)
            log.append_columns(vals, None, ts, max_batch_bytes=1024)
            log.roll()
    for p in range(1, partitions):
        shutil.copytree(template, root / f"bench-{p}")


def run_once(root: Path, workdir: Path) -> dict:
    conf = workdir / "compactor.yaml"
    conf.write_text(f"root: {root}\nhttp: {{host: 127.0.0.1, port: 0}}\n")
    out = subprocess.run([sys.executable, "-c", _MAXRSS, sys.executable, "-m", "seglog", "compactor", "run",
                          "--config", str(conf), "--once"], capture_output=True, text=True, check=True)
    rc, seconds, maxrss_kb = out.stdout.split()
    if int(rc) != 0:
        raise RuntimeError(f"the sidecar pass failed with exit code {rc}")
    return {"seconds": float(seconds), "peak_rss_mb": int(maxrss_kb) / 1024}


def _case(work: Path, partitions: int, segments: int) -> dict:
    root = work / f"root-{partitions}x{segments}"
    t0 = time.perf_counter()
    build_root(root, partitions, segments)
    build_s = time.perf_counter() - t0
    first = run_once(root, work)      # seals every inactive segment
    second = run_once(root, work)     # nothing left to do: the steady-state pass
    shutil.rmtree(root)
    return {"partitions": partitions, "segments_per_partition": segments, "segments": partitions * segments,
            "build_s": build_s, "sealing_pass": first, "steady_pass": second}


def run(quick: bool = False) -> dict:
    """Growth with 10x the segments at a fixed partition count (100 x 20 vs 100 x 200), and the
    issue's 1,000 partitions x 20 segments (left out with --quick)."""
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-sidecar-"))
    try:
        (work / "empty").mkdir()
        results = {"baseline_empty_root": run_once(work / "empty", work), "passes": []}
        small, large = _case(work, 100, 20), _case(work, 100, 200)
        results["passes"] = [small, large]
        if not quick:
            results["passes"].append(_case(work, 1000, 20))
        results["partitions"] = 100
        results["time_growth_10x_segments"] = large["sealing_pass"]["seconds"] / small["sealing_pass"]["seconds"]
        results["steady_time_growth_10x_segments"] = large["steady_pass"]["seconds"] / small["steady_pass"]["seconds"]
        results["memory_growth_10x_segments"] = large["sealing_pass"]["peak_rss_mb"] / small["sealing_pass"]["peak_rss_mb"]
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
