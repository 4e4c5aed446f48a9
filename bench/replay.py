"""Replay benchmark (docs/spec.md §11, Replay), every baseline measured in the same run:

- a seglog log of 4 partitions (16-byte keys, 200-byte values, increasing timestamps), written
  with the storage API directly (`Log.append_columns`), and the same rows in a Delta table written
  in timestamp order in many files (so that data skipping on `timestamp` is meaningful);
- time to first row from a timestamp (`.limit(1).collect()`) on that log and on a log 10x larger,
  for seglog and for Delta `where(timestamp >= T)`;
- total time (a `noop` write: every row reaches the JVM, none the driver) for the last 1%, 10%
  and 100% of the log by timestamp, for seglog and Delta, and a full scan (no timestamp) of both;
- the ceiling for any Python source: a data source yielding prepared Arrow batches from memory,
  with the same rows and the same number of tasks as seglog's wide read.

Targets: time to first row does not grow with the log's size; a narrow replay (1%) in at most
half of Delta's time; a wide replay (100%) at no less than 0.8 of the ceiling's throughput.
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import _spark_bench as sb  # noqa: E402
from seglog.indexer.commit_log import CommitLog
from seglog.indexer import Log  # noqa: E402

PARTITIONS = 4
ROW_BYTES = sb.KEY_BYTES + sb.VALUE_BYTES
CHUNK_ROWS = 200_000                # rows appended per Log.append_columns call (per partition)
DELTA_FILE_ROWS = 131_072           # ~28 MB Parquet files: Delta's skipping has many files to prune


def _now() -> float:
    return time.perf_counter()


# ---------------------------------------------------------------------------------------------
# Data.

def write_log(root: Path, rows: int, parquet_dir: Path | None = None) -> dict:
    """`rows` records spread over PARTITIONS partitions (row g -> partition g % P, timestamp
    TS0 + g), appended in chunks with Log.append_columns; optionally the same rows as Parquet
    files in timestamp order (the Delta table's input)."""
    pool = sb._pool(5)
    logs = [Log.open(root / f"{sb.TOPIC}-{p}", {"segment.bytes": 256 << 20}) for p in range(PARTITIONS)]
    step = CHUNK_ROWS * PARTITIONS
    t0 = _now()
    try:
        for lo in range(0, rows, step):
            hi = min(rows, lo + step)
            g, keys, values = sb.global_rows(lo, hi, PARTITIONS, pool)
            part = (g % PARTITIONS).astype(np.int32)
            for p in range(PARTITIONS):
                idx = np.nonzero(part == p)[0]
                logs[p].append_columns(values.take(pa.array(idx)), keys.take(pa.array(idx)), sb.TS0 + g[idx])
            if parquet_dir is not None:
                # Offsets per partition: row g is the (g // P)-th record of its partition.
                table = pa.table({
                    "key": keys, "value": values,
                    "topic": pa.array([sb.TOPIC] * (hi - lo), pa.string()),
                    "partition": pa.array(part),
                    "offset": pa.array(g // PARTITIONS),
                    "timestamp": pa.array((sb.TS0 + g) * 1000, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                    "timestampType": pa.array(np.zeros(hi - lo, dtype=np.int32)),
                })
                pq.write_table(table, parquet_dir / f"part-{lo:012d}.parquet", compression="snappy")
        for log in logs:
            log.flush()
        # Readers see only committed records: commit what was written, as the sink would.
        CommitLog(root, sb.TOPIC).commit("bench", 0, {p: log.log_end_offset for p, log in enumerate(logs)})
        nbytes = sum(log.size_bytes() for log in logs)
        segments = sum(len(log.segments()) for log in logs)
    finally:
        for log in logs:
            log.close()
    return {"rows": rows, "log_bytes": nbytes, "segments": segments, "write_s": _now() - t0}


def write_delta(spark, parquet_dir: Path, delta_dir: Path) -> dict:
    """The Parquet chunks (each a contiguous timestamp range) rewritten as a Delta table of many
    files, each a narrow timestamp range, with Delta's per-file statistics."""
    t0 = _now()
    (spark.read.parquet(str(parquet_dir)).write.format("delta")
     .option("maxRecordsPerFile", DELTA_FILE_ROWS).mode("overwrite").save(str(delta_dir)))
    files = [f for f in os.listdir(delta_dir) if f.endswith(".parquet")]
    size = sum(os.path.getsize(delta_dir / f) for f in files)
    return {"files": len(files), "bytes": size, "write_s": _now() - t0}


# ---------------------------------------------------------------------------------------------
# Spark cases.

def _ts_literal(ms: int):
    import datetime as dt
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


def seglog_df(spark, root: Path, start_ms: int | None):
    r = spark.read.format("seglog").option("topic", sb.TOPIC)
    if start_ms is not None:
        r = r.option("startingTimestamp", str(start_ms))
    return r.load(str(root))


def delta_df(spark, delta_dir: Path, start_ms: int | None):
    from pyspark.sql import functions as F
    df = spark.read.format("delta").load(str(delta_dir))
    if start_ms is not None:
        df = df.where(F.col("timestamp") >= F.lit(_ts_literal(start_ms)))
    return df


def ceiling_df(spark, task_rows: list[int], rows_per_batch: int):
    return (spark.read.format("seglog_ceiling").option("taskRows", ",".join(map(str, task_rows)))
            .option("rowsPerBatch", str(rows_per_batch)).load())


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = _now()
        fn()
        out.append(_now() - t0)
    return out


def interleaved(cases: dict, repeats: int) -> dict[str, list[float]]:
    """Seconds of each case, `repeats` times, round robin over the cases."""
    out: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            out[name].extend(timed(fn, 1))
    return out


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def first_row(df) -> None:
    got = df.limit(1).collect()
    assert len(got) == 1


def seglog_plan(root: Path, start_ms: int | None):
    """The tasks seglog plans for this read (run on the driver, in plain Python)."""
    from seglog.source.options import parse_options
    from seglog.source.planning import ScanBounds, plan
    opts = {"path": str(root), "topic": sb.TOPIC}
    if start_ms is not None:
        opts["startingtimestamp"] = str(start_ms)
    return plan(parse_options(opts), ScanBounds())


def plain_read(root: Path, start_ms: int | None) -> dict:
    """Plan plus every task's read in this process (no Spark): where seglog's own time goes."""
    from seglog.source.reader import SeglogReader
    from seglog.source.options import parse_options
    opts = {"path": str(root), "topic": sb.TOPIC}
    if start_ms is not None:
        opts["startingtimestamp"] = str(start_ms)
    reader = SeglogReader(parse_options(opts))
    t0 = _now()
    parts = reader.partitions()
    t1 = _now()
    rows = batches = 0
    for p in parts:
        for b in reader.read(p):
            rows += b.num_rows
            batches += 1
    t2 = _now()
    return {"plan_s": t1 - t0, "read_s": t2 - t1, "rows": rows, "batches": batches, "tasks": len(parts),
            "rows_per_s": rows / (t2 - t1) if t2 > t1 else None}


def _case(seconds: list[float], rows: int, nbytes: int) -> dict:
    s = statistics.median(seconds)
    return {"seconds": s, "runs": [round(x, 4) for x in seconds], "rows": rows,
            "rows_per_s": rows / s, "MB_per_s": nbytes / s / 1e6}


def run(quick: bool = False, work: Path | None = None, repeats: int | None = None) -> dict:
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="seglog-replay-")) if own else Path(work)
    work.mkdir(parents=True, exist_ok=True)
    repeats = repeats or (5 if quick else 3)
    # ~1.1 M rows (~250 MB of log) quick, ~9.5 M (~2.2 GB) full; the "large" log is 10x the small.
    rows = 1_100_000 if quick else 9_500_000
    load_before = os.getloadavg()
    try:
        small, large = work / "small", work / "large"
        parquet = work / "parquet"
        parquet.mkdir()
        small.mkdir()
        large.mkdir()
        data = {"small": write_log(small, rows, parquet)}
        data["large"] = write_log(large, rows * 10)

        from pyspark import cloudpickle
        from seglog.source import register
        from seglog.sink.session import local_session
        cloudpickle.register_pickle_by_value(sb)      # workers need not import bench/
        spark = local_session("seglog-replay-bench", with_delta=True)
        register(spark)
        spark.dataSource.register(sb.ArrowCeilingSource)
        delta = work / "delta"
        data["delta"] = write_delta(spark, parquet, delta)
        shutil.rmtree(parquet)

        span = rows - 1
        starts = {"1%": sb.TS0 + int(span * 0.99), "10%": sb.TS0 + int(span * 0.90), "100%": sb.TS0}
        log_bytes = data["small"]["log_bytes"]
        results: dict = {"quick": quick, "partitions": PARTITIONS, "data": data}

        # Warm up: JVM, Python workers, Delta's log, the page cache.
        for _ in range(2):
            noop(seglog_df(spark, small, None))
            noop(delta_df(spark, delta, None))
            first_row(seglog_df(spark, large, sb.TS0 + int((rows * 10 - 1) * 0.99)))

        # Time to first row, small log and 10x log (same relative position: the last 1%),
        # interleaved so that a change of load on the shared machine hits every case alike.
        large_t = sb.TS0 + int((rows * 10 - 1) * 0.99)
        ttfr_cases = {
            "seglog_small": lambda: first_row(seglog_df(spark, small, starts["1%"])),
            "seglog_large": lambda: first_row(seglog_df(spark, large, large_t)),
            "delta_small": lambda: first_row(delta_df(spark, delta, starts["1%"])),
        }
        ttfr_runs = interleaved(ttfr_cases, repeats + 2)
        ttfr = {k: statistics.median(v) for k, v in ttfr_runs.items()}
        results["time_to_first_row_s"] = ttfr
        results["time_to_first_row_runs"] = {k: [round(x, 4) for x in v] for k, v in ttfr_runs.items()}

        # The ceiling: same rows, same tasks, batches of seglog's size (wide), and the narrow
        # range's rows in as many tasks as seglog plans for it.
        probe = plain_read(small, starts["100%"])
        rows_per_batch = max(1, probe["rows"] // max(1, probe["batches"]))
        task_rows = {label: [sum(s.end - s.start for s in t) for t in seglog_plan(small, starts[label])]
                     for label in ("1%", "100%")}
        for label in ("1%", "100%"):        # builds the prepared batches in each worker
            for _ in range(2):
                noop(ceiling_df(spark, task_rows[label], rows_per_batch))
        results["ceiling"] = {"tasks_100%": len(task_rows["100%"]), "tasks_1%": len(task_rows["1%"]),
                              "rows_per_batch": rows_per_batch}

        # Total time per range (noop write: all rows to the JVM, none to the driver).
        bench_cases, sizes = {}, {}
        for label, t in starts.items():
            frac = {"1%": 0.01, "10%": 0.10, "100%": 1.0}[label]
            sizes[label] = (rows - (t - sb.TS0), int(log_bytes * frac))
            bench_cases[f"seglog_{label}"] = (lambda t=t: noop(seglog_df(spark, small, t)), label)
            bench_cases[f"delta_{label}"] = (lambda t=t: noop(delta_df(spark, delta, t)), label)
        sizes["full"] = (rows, log_bytes)
        bench_cases["seglog_full_scan"] = (lambda: noop(seglog_df(spark, small, None)), "full")
        bench_cases["delta_full_scan"] = (lambda: noop(delta_df(spark, delta, None)), "full")
        bench_cases["ceiling_1%"] = (lambda: noop(ceiling_df(spark, task_rows["1%"], rows_per_batch)), "1%")
        bench_cases["ceiling_100%"] = (lambda: noop(ceiling_df(spark, task_rows["100%"], rows_per_batch)), "100%")
        runs = interleaved({k: fn for k, (fn, _) in bench_cases.items()}, repeats)
        cases = {k: _case(runs[k], *sizes[label]) for k, (_, label) in bench_cases.items()}
        results["cases"] = cases

        # Where seglog's own time goes: plain Python, no Spark.
        results["plain_python"] = {label: plain_read(small, t) for label, t in starts.items()}

        results["ratios"] = {
            "narrow_1pct_seglog_over_delta_time": cases["seglog_1%"]["seconds"] / cases["delta_1%"]["seconds"],
            "narrow_target_max": 0.5,
            "mid_10pct_seglog_over_delta_time": cases["seglog_10%"]["seconds"] / cases["delta_10%"]["seconds"],
            "wide_100pct_seglog_over_ceiling_throughput":
                cases["ceiling_100%"]["seconds"] / cases["seglog_100%"]["seconds"],
            "wide_target_min": 0.8,
            "narrow_1pct_ceiling_over_delta_time": cases["ceiling_1%"]["seconds"] / cases["delta_1%"]["seconds"],
            "wide_100pct_seglog_over_delta_time": cases["seglog_100%"]["seconds"] / cases["delta_100%"]["seconds"],
            "full_scan_seglog_over_delta_time":
                cases["seglog_full_scan"]["seconds"] / cases["delta_full_scan"]["seconds"],
            "ttfr_large_over_small": ttfr["seglog_large"] / ttfr["seglog_small"],
            "ttfr_seglog_over_delta": ttfr["seglog_small"] / ttfr["delta_small"],
        }
        r = results["ratios"]
        results["targets_met"] = {
            "narrow": r["narrow_1pct_seglog_over_delta_time"] <= 0.5,
            "wide": r["wide_100pct_seglog_over_ceiling_throughput"] >= 0.8,
            "ttfr_flat": r["ttfr_large_over_small"] <= 1.25,
        }
        results["load"] = {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()}
        results["notes"] = (
            "ttfr_flat: large/small time to first row <= 1.25. Back-to-back limit(1) jobs leave their Python "
            "worker mid-stream, so each needs a fresh worker: seglog's time to first row is then mostly "
            "a cold worker (pyspark + seglog imports, numba kernels loaded from cache). ceiling_1% is the "
            "floor any Python source pays for the narrow read (same rows, same tasks).")
        return results
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
