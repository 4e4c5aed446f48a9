"""Sidecar benchmark: one `seglog compactor run --once` pass (recover, roll, seal, retention, purge)
over P partitions x S unsealed segments, as a real process: wall time and peak memory (max RSS), and
how both grow with 10x the segments per partition. Baseline in the same run: the same process
starting and exiting over an empty root (its fixed cost: interpreter, imports)."""
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


# The long-running service's passes, in one process as the scheduler runs them (each job over every
# partition): the first seals, a second after the mtime slack (compactor/partition_memo.py) takes the
# memos the steady passes trust; then the steady passes, timed, and the process's peak RSS.
_SERVICE = """
import json, resource, sys, time
from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.compactor.partition_memo import MTIME_SLACK_NS
root, steady = sys.argv[1], int(sys.argv[2])
jobs = Jobs(parse_config({"root": root}, source="bench"), Metrics())
JOBS = ("roll", "seal", "retention", "purge")
def one_pass():
    t = time.perf_counter()
    results = [jobs.run(job) for job in JOBS]
    assert not any(r.failed or r.skipped for r in results), [r.summary() for r in results]
    return time.perf_counter() - t, sum(r.partitions - r.unchanged for r in results)
jobs.run("recover")
first = one_pass()
time.sleep(MTIME_SLACK_NS / 1e9 + 0.1)
second = one_pass()
passes = [one_pass() for _ in range(steady)]
print(json.dumps({"first_pass_s": first[0], "second_pass_s": second[0], "second_pass_opened": second[1],
                  "steady_pass_s": [p[0] for p in passes], "steady_pass_opened": [p[1] for p in passes],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_service(root: Path, steady: int = 5) -> dict:
    out = subprocess.run([sys.executable, "-c", _SERVICE, str(root), str(steady)], capture_output=True, text=True,
                         check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["steady_pass_median_s"] = statistics.median(result["steady_pass_s"])
    return result


def _service_case(work: Path, partitions: int, segments: int) -> dict:
    root = work / f"service-{partitions}x{segments}"
    t0 = time.perf_counter()
    build_root(root, partitions, segments)
    build_s = time.perf_counter() - t0
    result = run_service(root)
    shutil.rmtree(root)
    return {"partitions": partitions, "segments_per_partition": segments, "build_s": build_s, **result}


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
        # The long-running service's steady passes, 10x the partitions: 100 -> 1,000 (--quick), 1,000 -> 10,000.
        few, many = (100, 1_000) if quick else (1_000, 10_000)
        service = [_service_case(work, few, 20), _service_case(work, many, 20)]
        results["service"] = {"cases": service, "target_steady_pass_s_10k": 15.0,
                              "steady_time_growth_10x_partitions": service[1]["steady_pass_median_s"]
                              / service[0]["steady_pass_median_s"],
                              "memory_growth_10x_partitions": service[1]["peak_rss_mb"] / service[0]["peak_rss_mb"]}
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
