"""Compaction benchmark (docs/compaction.md): cleaning throughput in MB/s of dirty log against a raw
sequential read of the same bytes in the same run, and the cleaner's peak memory against its dedupe
budget, at 1x and 10x the log (keys grow with the log: ~10 updates per key).

Method: one session builds both logs once (keyed updates with a few tombstones, rolled segments, every
segment dirty). Every case is warmed up once, then rounds are interleaved: (clean 1x, raw read 1x,
clean 10x, raw read 10x) x R. Each clean and each raw read runs in its own process on a fresh copy of
the built folder, so a round never reuses another's page cache state differently: the copy is read
back once before timing, warming the cache the same way for both. Reported: the median of per-round
ratios (clean MB/s / raw read MB/s) with min and max; peak memory is the process's peak RSS growth
during the clean (Linux VmHWM after clearing it, minus VmRSS before), next to the map's own size and
the budget. Each process is warmed first (codec and Arrow hash kernels loaded, as in a running
sidecar), so neither figure counts that one-off cost. Run: `python -m bench.compaction [--quick]`, or `python -m bench --only compaction`.
"""
from __future__ import annotations

import json
import os
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

TS = 1_700_000_000_000
CONFIG = {"cleanup.policy": "compact", "segment.bytes": 8 << 20, "index.interval.bytes": 4096,
          "min.cleanable.dirty.ratio": 0.01, "delete.retention.ms": 86_400_000}
VALUE = 200
BUDGET = 64 << 20

_CHILD = r"""
import json, os, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
logs = sorted(p for p in os.listdir(path) if p.endswith(".log"))
total = sum(os.path.getsize(os.path.join(path, p)) for p in logs)
for p in logs:                                   # the same cache state for both modes
    with open(os.path.join(path, p), "rb", buffering=0) as fh:
        while fh.read(8 << 20):
            pass
if mode == "raw":
    t = time.perf_counter()
    for p in logs:
        with open(os.path.join(path, p), "rb", buffering=0) as fh:
            while fh.read(8 << 20):
                pass
    print(json.dumps({"seconds": time.perf_counter() - t, "bytes": total}))
else:
    from seglog.indexer import Log
    import pyarrow as pa
    config = json.loads(sys.argv[3])
    budget = int(sys.argv[4])
    with Log.open(path, config) as log:
        # Warm the process: the codec kernels and Arrow's hash kernels load once per process (the
        # sidecar pays that once at start), so neither the time nor the memory below counts them.
        next(log.read_arrow(log.log_start_offset, log.log_start_offset + 10))
        import pyarrow.compute as pc
        t0 = pa.table({"key": pa.array([b"a", b"b", b"a"]), "offset": pa.array([1, 2, 3])})
        t0.group_by("key").aggregate([("offset", "max")])
        pc.index_in(pa.array([b"a"]), value_set=pa.array([b"a"]))
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")                        # reset VmHWM to the current RSS
        before = rss("VmRSS:")
        t = time.perf_counter()
        res = log.clean(TS_NOW, dedupe_buffer_bytes=budget)
        seconds = time.perf_counter() - t
        peak = rss("VmHWM:")
    print(json.dumps({"seconds": seconds, "bytes": total, "dirty_bytes": res.dirty_bytes_cleaned,
                      "records_read": res.records_read, "records_removed": res.records_removed,
                      "map_bytes": res.map_bytes, "map_peak_bytes": res.map_peak_bytes,
                      "peak_rss_growth": peak - before, "arrow_max_bytes": pa.default_memory_pool().max_memory()}))
""".replace("TS_NOW", str(TS + 10_000))


def build(path: Path, mb: int) -> None:
    """`mb` MB of keyed updates: keys = records / 10, every 50th record a tombstone; all segments rolled."""
    n = mb * (1 << 20) // (VALUE + 40)
    keys_n = max(1, n // 10)
    rng = np.random.default_rng(mb)
    with Log.open(path, CONFIG) as log:
        step = 50_000
        for lo in range(0, n, step):
            m = min(step, n - lo)
            ks = rng.integers(0, keys_n, m)
            keys = pa.array([b"key-%08d" % k for k in ks.tolist()], pa.binary())
            tomb = (np.arange(lo, lo + m) % 50) == 0
            vals = pa.array([None if t else b"v" * VALUE for t in tomb.tolist()], pa.binary())
            log.append_columns(vals, keys, np.full(m, TS, np.int64))
        log.roll()


def child(mode: str, src: Path, work: Path) -> dict:
    copy = work / f"copy-{mode}" / src.name
    shutil.rmtree(copy.parent, ignore_errors=True)
    shutil.copytree(src, copy)
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(copy), json.dumps(CONFIG), str(BUDGET)],
                         capture_output=True, text=True, check=True)
    shutil.rmtree(copy.parent)
    return json.loads(out.stdout)


def run(quick: bool = False) -> dict:
    sizes = (8, 80) if quick else (24, 240)
    rounds = 3 if quick else 5
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-compaction-"))
    try:
        srcs = {}
        for mb in sizes:
            srcs[mb] = work / f"src-{mb}" / "bench-0"
            build(srcs[mb], mb)
        for mb in sizes:                         # warm-up: every case once, not counted
            child("clean", srcs[mb], work)
            child("raw", srcs[mb], work)
        per = {mb: {"clean": [], "raw": []} for mb in sizes}
        for _ in range(rounds):                  # interleaved: A, B, A, B, ...
            for mb in sizes:
                per[mb]["clean"].append(child("clean", srcs[mb], work))
                per[mb]["raw"].append(child("raw", srcs[mb], work))
        cases = []
        for mb in sizes:
            ratios, clean_mbs, raw_mbs = [], [], []
            for c, r in zip(per[mb]["clean"], per[mb]["raw"]):
                cm = c["dirty_bytes"] / c["seconds"] / 1e6
                rm = r["bytes"] / r["seconds"] / 1e6
                clean_mbs.append(cm)
                raw_mbs.append(rm)
                ratios.append(cm / rm)
            last = per[mb]["clean"][-1]
            cases.append({
                "log_mb": mb, "log_bytes": last["bytes"], "dirty_bytes_cleaned": last["dirty_bytes"],
                "records": last["records_read"], "records_removed": last["records_removed"],
                "clean_mb_per_s_median": statistics.median(clean_mbs),
                "raw_read_mb_per_s_median": statistics.median(raw_mbs),
                "clean_vs_raw_ratio": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
                "peak_rss_growth_mb": statistics.median(c["peak_rss_growth"] for c in per[mb]["clean"]) / 2**20,
                "map_mb": last["map_bytes"] / 2**20, "map_peak_mb": last["map_peak_bytes"] / 2**20,
                "arrow_pool_max_mb": last["arrow_max_bytes"] / 2**20, "dedupe_budget_mb": BUDGET / 2**20,
                "rounds": rounds})
        small, large = cases
        return {"cases": cases, "method": __doc__.split("Method: ")[1].split("Run:")[0].strip().replace("\n", " "),
                "throughput_growth_10x": large["clean_mb_per_s_median"] / small["clean_mb_per_s_median"],
                "memory_growth_10x": large["peak_rss_growth_mb"] / max(small["peak_rss_growth_mb"], 1e-9),
                "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg(),
                            "time": time.strftime("%Y-%m-%d %H:%M:%S %Z")}}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    result = run(quick="--quick" in sys.argv)
    out = Path(__file__).resolve().parent / "results" / "compaction.json"
    out.write_text(json.dumps(result, indent=2, default=float))
    print(json.dumps(result, indent=2, default=float))
