"""Storage-layer benchmarks (docs/spec.md §11), each against a baseline measured in the same run:

- bulk append (`Log.append_columns`) MB/s vs a raw sequential write (dd-style) of the same bytes;
- `offset_for_timestamp` median latency at 1,000 / 10,000 (/ 100,000) segments vs a linear walk of
  the segments (Kafka's method);
- index rebuild (recovery) of one segment vs a raw sequential read of its .log.
"""
from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.method import interleaved, ratio
from seglog.indexer import Log
from seglog.indexer.log import find_in_segment

TS = 1_700_000_000_000


def _columns(n: int, value_size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 255, size=n * 16, dtype=np.uint8)
    vals = rng.integers(0, 255, size=n * value_size, dtype=np.uint8)
    key_off = np.arange(0, (n + 1) * 16, 16, dtype=np.int32)
    val_off = np.arange(0, (n + 1) * value_size, value_size, dtype=np.int64)
    keys_arr = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(key_off), pa.py_buffer(keys)])
    vals_arr = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(val_off), pa.py_buffer(vals)])
    ts = TS + np.arange(n, dtype=np.int64)
    return keys_arr, vals_arr, ts


def raw_write(path: Path, nbytes: int, chunk: int = 1 << 20) -> float:
    """dd-style: sequential writes of a prepared buffer, then fsync. Returns seconds."""
    buf = os.urandom(chunk)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    left = nbytes
    while left > 0:
        left -= os.write(fd, buf[:min(chunk, left)])
    os.fsync(fd)
    os.close(fd)
    return time.perf_counter() - t0


def bench_append(work: Path, total_mb: int, value_size: int, rounds: int = 5) -> dict:
    """Bulk append (+ flush) vs a raw write of the same bytes, interleaved (bench/method.py)."""
    n = max(1000, total_mb * (1 << 20) // (value_size + 40))
    keys, vals, ts = _columns(n, value_size)
    step = 100_000  # the sink hands the Log Arrow batches of this many rows
    d = work / f"append-{value_size}"
    sizes = {}

    def seglog_append():
        shutil.rmtree(d, ignore_errors=True)
        t0 = time.perf_counter()
        with Log.open(d / "bench-0", {"segment.bytes": 1 << 30}) as log:
            for i in range(0, n, step):
                log.append_columns(vals.slice(i, step), keys.slice(i, step), ts[i:i + step])
            log.flush()
            sizes["log"] = log.size_bytes()
        return time.perf_counter() - t0

    def raw():
        seconds = raw_write(work / "raw.bin", sizes["log"])
        os.unlink(work / "raw.bin")
        return seconds

    times = interleaved({"seglog": seglog_append, "raw": raw}, rounds)
    shutil.rmtree(d, ignore_errors=True)
    s, rw = statistics.median(times["seglog"]), statistics.median(times["raw"])
    return {"value_bytes": value_size, "records": n, "log_bytes": sizes["log"],
            "seglog_MBps": sizes["log"] / s / 1e6, "raw_write_MBps": sizes["log"] / rw / 1e6,
            "seglog_records_per_s": n / s, "ratio_vs_raw": ratio(times["raw"], times["seglog"]),
            "target_ratio": 0.5}


def build_many_segments(path: Path, segments: int) -> Log:
    """A log of `segments` segments, ~40 records each, timestamps mostly increasing with some
    going backwards (CreateTime)."""
    cfg = {"segment.bytes": 1024, "segment.index.bytes": 1024, "index.interval.bytes": 128}
    per = 40
    n = segments * per
    rng = np.random.default_rng(1)
    ts = TS + np.arange(n, dtype=np.int64) * 10 - rng.integers(0, 25, size=n)
    vals = pa.array([b"v" * 8] * n, type=pa.binary())
    with Log.open(path, cfg) as log:
        for i in range(0, n, per):
            log.append_columns(vals.slice(i, per), None, ts[i:i + per], max_batch_bytes=1024)
            log.roll()
        log.seal_inactive(durable=False)   # benchmark data: no need to wait for 3 fsyncs a segment
    return Log.open(path, cfg, readonly=True)


def linear_walk(log: Log, timestamp: int) -> int | None:
    """Kafka's method: walk the segments in order to the first whose largest timestamp >= T."""
    maxes = log.segment_largest_timestamps()
    for i, base in enumerate(log.segment_bases()):
        if maxes[i] >= timestamp:
            seg = log.segment(base)
            found = find_in_segment(seg, timestamp, seg.base_offset)
            if found is not None:
                return found
    return None


def bench_lookup(work: Path, segments: int, probes: int = 300, warmup: int = 30) -> dict:
    """Per probe, interleaved: a cold lookup (the segment's files not open yet), the same lookup warm,
    and Kafka's linear walk (cold). `warmup` probes run first and are discarded."""
    path = work / f"lookup-{segments}" / "bench-0"
    shutil.rmtree(path.parent, ignore_errors=True)
    t0 = time.perf_counter()
    log = build_many_segments(path, segments)
    build_s = time.perf_counter() - t0
    os.sync()   # the build's 3 files a segment written back first: lookups, not the kernel's writeback, are timed
    log.segment_largest_timestamps()  # the per-segment maxima are loaded once per open Log
    rng = np.random.default_rng(2)
    last_ts = int(log.largest_timestamp)
    targets = rng.integers(TS, last_ts, size=warmup + probes).tolist()
    fast, slow, warm = [], [], []

    def cold():  # forget open segments: the next lookup pays for opening its segment
        log.close_inactive_segments()

    for i, t in enumerate(targets):
        cold()
        a = time.perf_counter_ns()
        got = log.offset_for_timestamp(t)
        b = time.perf_counter_ns()
        log.offset_for_timestamp(t)
        c = time.perf_counter_ns()
        cold()
        d = time.perf_counter_ns()
        want = linear_walk(log, t)
        e = time.perf_counter_ns()
        assert got == want, (t, got, want)
        if i >= warmup:
            fast.append((b - a) / 1000)
            warm.append((c - b) / 1000)
            slow.append((e - d) / 1000)
    log.close()
    shutil.rmtree(path.parent)
    return {"segments": segments, "build_s": build_s, "probes": probes, "warmup_probes": warmup,
            "median_us": statistics.median(fast), "p90_us": float(np.percentile(fast, 90)),
            "warm_median_us": statistics.median(warm), "linear_walk_median_us": statistics.median(slow),
            "speedup_vs_linear": ratio(slow, fast), "target_us": 100}


def raw_read(path: Path, chunk: int = 8 << 20) -> float:
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        while fh.read(chunk):
            pass
    return time.perf_counter() - t0


def bench_rebuild(work: Path, total_mb: int, rounds: int = 5) -> dict:
    """Recovery's index rebuild of one segment vs a raw read of its .log, interleaved."""
    d = work / "rebuild" / "bench-0"
    shutil.rmtree(d.parent, ignore_errors=True)
    n = total_mb * (1 << 20) // 240
    keys, vals, ts = _columns(n, 200)
    with Log.open(d, {"segment.bytes": 1 << 30}) as log:
        for i in range(0, n, 100_000):
            log.append_columns(vals.slice(i, 100_000), keys.slice(i, 100_000), ts[i:i + 100_000],
                               max_batch_bytes=16384)
        seg_log = log.active_segment.log_path
        entries = log.active_segment.offset_index.entries
        size = log.size_bytes()

    def rebuild():
        seg_log.with_suffix(".index").unlink()
        seg_log.with_suffix(".timeindex").unlink()
        t0 = time.perf_counter()
        with Log.open(d, {"segment.bytes": 1 << 30}) as log:
            seconds = time.perf_counter() - t0
            assert any("rebuilt" in line for line in log.recovery_report)
            assert log.active_segment.offset_index.entries == entries
        return seconds

    times = interleaved({"rebuild": rebuild, "raw": lambda: raw_read(seg_log)}, rounds)
    shutil.rmtree(d.parent)
    s, r = statistics.median(times["rebuild"]), statistics.median(times["raw"])
    return {"segment_bytes": size, "index_entries": entries, "rebuild_MBps": size / s / 1e6,
            "raw_read_MBps": size / r / 1e6, "ratio_vs_raw": ratio(times["raw"], times["rebuild"]),
            "target_ratio": 0.5}


def run(quick: bool = False, work: Path | None = None) -> dict:
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-")) if own else work
    work.mkdir(parents=True, exist_ok=True)
    try:
        mb = 64 if quick else 256
        results = {
            "append": [bench_append(work, mb, 100), bench_append(work, mb, 1024)],
            "lookup": [bench_lookup(work, 1000), bench_lookup(work, 10_000), bench_lookup(work, 100_000, probes=200)],
            "rebuild": bench_rebuild(work, mb),
        }
        lk = results["lookup"]
        results["lookup_growth_10x"] = lk[1]["median_us"] / lk[0]["median_us"]
        results["method"] = ("bench/method.py: warm-up, interleaved rounds, median of per-round ratios "
                             "(min, max); lookups interleaved per probe after warm-up probes")
        return results
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
