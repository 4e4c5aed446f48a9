"""Merge benchmark (docs/spec.md §3.10): merging small sealed segments, in MB/s of log merged, against a
raw copy of the same bytes into one file in the same run.

Method (bench/method.py): one process builds one partition once: 64 sealed segments of ~2 MB (as the
sink's JVM writer leaves them: 32 partitions of a 1e6-row batch give ~1.9 MB each), with batches of
the given size. Each case gets a fresh copy of that folder (not timed; the copy leaves the sources in
the page cache for both cases alike). Cases: `merge` (a writable open's `merge_log`: concatenation,
the strict scan with CRCs, both indexes by the index rule, seal with fsyncs, the swap), and `raw` (the
same .log bytes copied with copy_file_range into one file, then fsynced: the floor any merge pays).
Every case warmed up once, then interleaved rounds; reported: the median of per-round ratios
(merge MB/s / raw MB/s) with min and max, and each side's median MB/s. Two batch sizes: 1 MiB batches
(the JVM writer's) and 16 KiB batches (a producer's), where the per-batch work shows.
Run: `python -m bench.merge [--quick]`; JSON in bench/results/merge.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.method import interleaved, ratio, summary
from seglog.indexer import Log
from seglog.indexer.compaction import segment_merge

TS = 1_700_000_000_000
SEGMENTS = 64
SEGMENT_BYTES = 2 << 20
VALUE = 240
CONFIG = {"segment.bytes": 1 << 30, "index.interval.bytes": 4096}


def build(path: Path, batch_bytes: int, segments: int) -> int:
    rows = SEGMENT_BYTES // (VALUE + 20)
    with Log.open(path, CONFIG) as log:
        for s in range(segments):
            log.append_columns(pa.array([b"v" * VALUE] * rows, pa.binary()),
                               timestamps=np.full(rows, TS + s, np.int64), max_batch_bytes=batch_bytes)
            log.roll()
        log.flush()
        return sum(log.segment(b).size for b in log.segment_bases()[:-1])


def _fresh(built: Path, work: Path) -> Path:
    """A fresh copy of the built partition folder under `work` (same folder name)."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(built, work / built.name)
    return work / built.name


def merge_case(built: Path, work: Path):
    def run() -> float:
        path = _fresh(built, work)
        with Log.open(path, CONFIG) as log:
            t = time.perf_counter()
            res = segment_merge.merge_log(log)
            seconds = time.perf_counter() - t
        assert len(res.groups) == 1
        return seconds
    return run


def raw_case(built: Path, work: Path):
    def run() -> float:
        path = _fresh(built, work)
        logs = sorted(p for p in path.iterdir() if p.suffix == ".log")[:-1]
        t = time.perf_counter()
        fd = os.open(path / "raw.out", os.O_RDWR | os.O_CREAT, 0o644)
        at = 0
        for p in logs:
            with open(p, "rb", buffering=0) as fh:
                n = os.fstat(fh.fileno()).st_size
                done = 0
                while done < n:
                    done += os.copy_file_range(fh.fileno(), fd, n - done, done, at + done)
                at += n
        os.fsync(fd)
        os.close(fd)
        return time.perf_counter() - t
    return run


def run(quick: bool = False) -> dict:
    rounds = 3 if quick else 9
    segments = 16 if quick else SEGMENTS
    out = {"segments": segments, "rounds": rounds, "method": "bench/method.py: warm-up, interleaved rounds, "
           "median of per-round ratios (merge MB/s / raw copy MB/s) with min and max"}
    base = Path(tempfile.mkdtemp(prefix="seglog-bench-merge-"))
    try:
        for label, batch_bytes in (("1MiB_batches", 1 << 20), ("16KiB_batches", 16 << 10)):
            built = base / label / "t-0"
            size = build(built, batch_bytes, segments)
            times = interleaved({"merge": merge_case(built, base / "w-merge"),
                                 "raw": raw_case(built, base / "w-raw")}, rounds=rounds)
            mbs = {k: [size / 1e6 / s for s in v] for k, v in times.items()}
            out[label] = {"bytes": size, "merge": summary(times["merge"]), "raw": summary(times["raw"]),
                          "merge_MBps_median": statistics.median(mbs["merge"]),
                          "raw_MBps_median": statistics.median(mbs["raw"]),
                          "merge_vs_raw_throughput": ratio(mbs["merge"], mbs["raw"])}
            print(label, json.dumps(out[label]["merge_vs_raw_throughput"]),
                  round(out[label]["merge_MBps_median"]), "MB/s vs", round(out[label]["raw_MBps_median"]), "MB/s")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    result = run(quick=args.quick)
    result["_meta"] = {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "quick": args.quick,
                       "time": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    out = Path(__file__).resolve().parent / "results" / "merge.json"
    out.write_text(json.dumps(result, indent=2, default=float))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
