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

from indexer import Log
from indexer.topics import create_topic

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


def run(quick: bool = False) -> dict:
    partitions = 100 if quick else 1000
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-sidecar-"))
    try:
        (work / "empty").mkdir()
        baseline = run_once(work / "empty", work)
        results = {"partitions": partitions, "baseline_empty_root": baseline, "passes": []}
        for segments in (20, 200):
            root = work / f"root-{segments}"
            t0 = time.perf_counter()
            build_root(root, partitions, segments)
            build_s = time.perf_counter() - t0
            first = run_once(root, work)      # seals every inactive segment
            second = run_once(root, work)     # nothing left to do: the steady-state check
            results["passes"].append({"segments_per_partition": segments, "segments": partitions * segments,
                                      "build_s": build_s, "sealing_pass": first, "steady_pass": second})
            shutil.rmtree(root)
        a, b = results["passes"]
        results["time_growth_10x_segments"] = b["sealing_pass"]["seconds"] / a["sealing_pass"]["seconds"]
        results["memory_growth_10x_segments"] = b["sealing_pass"]["peak_rss_mb"] / a["sealing_pass"]["peak_rss_mb"]
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
