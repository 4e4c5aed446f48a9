"""Streaming benchmark: `readStream.format("seglog") -> SegmentLogSink` against the same pipeline on Delta
(`readStream` of a Delta table into a Delta sink), same rows (16-byte keys, 200-byte values).

- latency: the time Spark reports for a micro-batch of 1,000 rows end to end (`durationMs.triggerExecution`:
  read, write, commit), batches of 1,000 rows by `maxOffsetsPerTrigger` (seglog) and by one 1,000-row
  file per trigger (Delta, `maxFilesPerTrigger=1`); the median over a run's batches;
- throughput: one availableNow run over all rows, `maxOffsetsPerTrigger` unset (rows/s).

Method (DEVELOPERS.md): one session; each case warmed up; interleaved rounds; median of per-round
ratios (seglog / Delta) with min and max. Fresh checkpoint and output per run.
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

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import _spark_bench as sb  # noqa: E402
from seglog.indexer import Log  # noqa: E402
from seglog.indexer.commit_log import CommitLog  # noqa: E402

PARTITIONS = 4
BATCH_ROWS = 1000
LATENCY_BATCHES = 8


def write_seglog(root: Path, rows: int) -> None:
    pool = sb._pool(3)
    g, keys, values = sb.global_rows(0, rows, PARTITIONS, pool)
    part = g % PARTITIONS
    ends = {}
    for p in range(PARTITIONS):
        idx = pa.array(np.nonzero(part == p)[0])
        with Log.open(root / f"{sb.TOPIC}-{p}", {"segment.bytes": 64 << 20}) as log:
            log.append_columns(values.take(idx), keys.take(idx), sb.TS0 + g[np.nonzero(part == p)[0]])
            log.flush()
            ends[p] = log.log_end_offset
    CommitLog(root, sb.TOPIC).commit("bench", 0, ends)


def write_delta(spark, path: Path, rows: int, files: int) -> None:
    """`rows` rows as `files` appends (one file each: a Delta stream with maxFilesPerTrigger=1 reads one per batch)."""
    pool = sb._pool(3)
    per = rows // files
    for f in range(files):
        g, keys, values = sb.global_rows(f * per, (f + 1) * per, PARTITIONS, pool)
        t = pa.table({"key": keys, "value": values,
                      "timestamp": pa.array((sb.TS0 + g) * 1000, pa.int64()).cast(pa.timestamp("us", tz="UTC"))})
        spark.createDataFrame(t.to_pandas()).coalesce(1).write.format("delta").mode("append").save(str(path))


def seglog_run(spark, src: Path, work: Path, max_offsets: int | None):
    from seglog.sink import SegmentLogSink
    out, ckpt = work / "seglog-out", work / "seglog-ckpt"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ckpt, ignore_errors=True)
    sink = SegmentLogSink(str(out), topic="out", partitions=PARTITIONS)
    r = spark.readStream.format("seglog").option("topic", sb.TOPIC).option("startingOffsets", "earliest")
    if max_offsets:
        r = r.option("maxOffsetsPerTrigger", str(max_offsets))
    q = (r.load(str(src)).select("key", "value", "timestamp").writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    q.awaitTermination()
    return q


def delta_run(spark, src: Path, work: Path, one_file: bool):
    out, ckpt = work / "delta-out", work / "delta-ckpt"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ckpt, ignore_errors=True)
    r = spark.readStream.format("delta")
    if one_file:
        r = r.option("maxFilesPerTrigger", "1")
    q = (r.load(str(src)).writeStream.format("delta").option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start(str(out)))
    q.awaitTermination()
    return q


def batch_ms(q) -> float:
    """Median end-to-end time of the run's non-empty micro-batches."""
    times = [p["durationMs"]["triggerExecution"] for p in q.recentProgress if p["numInputRows"] > 0]
    return statistics.median(times) / 1e3


def ratio(a: list[float], b: list[float]) -> dict:
    per = [x / y for x, y in zip(a, b)]
    return {"median": statistics.median(per), "min": min(per), "max": max(per), "per_round": [round(x, 3) for x in per]}


def run(quick: bool = False, work: Path | None = None, n_rounds: int | None = None) -> dict:
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="seglog-stream-")) if own else Path(work)
    work.mkdir(parents=True, exist_ok=True)
    n_rounds = n_rounds or (3 if quick else 5)
    rows = 100_000 if quick else 400_000
    load_before = os.getloadavg()
    try:
        from seglog.sink.session import local_session
        from seglog.source import register
        spark = local_session("seglog-stream-bench", with_delta=True)
        register(spark)
        lat_seglog, lat_delta, big_seglog, big_delta = (work / n for n in ("lat-seglog", "lat-delta", "big-seglog", "big-delta"))
        for d in (lat_seglog, big_seglog):
            d.mkdir()
        write_seglog(lat_seglog, BATCH_ROWS * LATENCY_BATCHES)
        write_seglog(big_seglog, rows)
        write_delta(spark, lat_delta, BATCH_ROWS * LATENCY_BATCHES, LATENCY_BATCHES)
        write_delta(spark, big_delta, rows, 4)

        cases = {
            "seglog_latency": lambda: batch_ms(seglog_run(spark, lat_seglog, work, BATCH_ROWS)),
            "delta_latency": lambda: batch_ms(delta_run(spark, lat_delta, work, True)),
            "seglog_throughput": lambda: _timed(lambda: seglog_run(spark, big_seglog, work, None)),
            "delta_throughput": lambda: _timed(lambda: delta_run(spark, big_delta, work, False)),
        }
        for fn in cases.values():      # warm-up
            fn()
        runs: dict[str, list[float]] = {k: [] for k in cases}
        names = list(cases)
        for r in range(n_rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                runs[name].append(cases[name]())
        med = {k: statistics.median(v) for k, v in runs.items()}
        return {
            "quick": quick, "rows": rows, "batch_rows": BATCH_ROWS, "partitions": PARTITIONS,
            "method": f"one session; each case warmed up; {n_rounds} interleaved rounds (rotating order); "
                      "median of per-round ratios with min and max",
            "runs_seconds": {k: [round(x, 4) for x in v] for k, v in runs.items()},
            "median_seconds": med,
            "rows_per_s": {"seglog": rows / med["seglog_throughput"], "delta": rows / med["delta_throughput"]},
            "ratios": {
                "latency_1000_rows_seglog_over_delta": ratio(runs["seglog_latency"], runs["delta_latency"]),
                "throughput_time_seglog_over_delta": ratio(runs["seglog_throughput"], runs["delta_throughput"]),
            },
            "load": {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()},
        }
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
