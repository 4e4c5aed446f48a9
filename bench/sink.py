"""Sink benchmark (docs/spec.md §11): SegmentLogSink against Delta's append, in one session.

Method (bench/method.py, docs/DEVELOPING.md): every case is warmed up first (JIT, Delta's log), then
measured in interleaved rounds (seglog, Delta, Delta, seglog, ...); each round gives one ratio and the
result is the median of the per-round ratios with their min and max. No figure comes from a single
run or from runs of one system measured apart from the other's.

- throughput: the same cached DataFrame (16-byte keys, 200-byte values, timestamps) of 1e6 rows
  and of 1e7 rows (200,000 with --quick), written into 4 and into 32 log partitions; ratio = Delta's
  time / seglog's time (seglog's throughput as a multiple of Delta's);
- micro-batch: a cached 1,000-row DataFrame appended as consecutive batches to one log and to one
  Delta table; ratio = seglog's time / Delta's time;
- skew: the largest write task's share of the rows (no shuffle: a task writes its own input rows);
- peak executor memory for one write of a generated batch at 1x and at 10x rows (bench/executor_memory.py:
  a fresh JVM per measurement, peak heap used after GC, rounds alternating the sizes);
- where seglog's time goes: its per-phase timings (`SegmentLogSink.last_timings`).
"""
from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench import method

TS = 1_700_000_000_000


def _frame(spark, rows: int, partitions: int):
    from pyspark.sql import functions as F

    return (spark.range(rows, numPartitions=partitions)
            .select(F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 16).cast("binary").alias("key"),
                    F.expr("CAST(repeat(substring(sha2(CAST(id AS STRING), 256), 1, 40), 5) AS BINARY)").alias("value"),
                    F.timestamp_millis(F.lit(TS) + F.col("id")).alias("timestamp")))


def _compare(seglog, delta, rounds: int, seglog_over_delta: bool, warmup: int = 1) -> dict:
    """bench/method.py's interleaved rounds; the ratio Delta/seglog (throughput multiple) or
    seglog/Delta (time multiple), median with min and max."""
    times = method.interleaved({"seglog": seglog, "delta": delta}, rounds, warmup=warmup)
    r = (method.ratio(times["seglog"], times["delta"]) if seglog_over_delta
         else method.ratio(times["delta"], times["seglog"]))
    return dict(r, seglog_s=times["seglog"], delta_s=times["delta"],
                seglog_median_s=statistics.median(times["seglog"]), delta_median_s=statistics.median(times["delta"]))


def run(quick: bool = False, spark=None) -> dict:
    from seglog.sink import SegmentLogSink
    from seglog.sink.session import local_session

    own = spark is None
    # room to cache the 1e7-row frame (about 2.3 GB) beside both writers' work
    spark = spark or local_session("seglog-bench-sink", with_delta=True, driver_memory="12g")
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-sink-"))
    rounds = 3 if quick else 5
    sizes = [200_000] if quick else [1_000_000, 10_000_000]
    out: dict = {"method": "warm-up, then interleaved rounds (seglog, Delta); median of per-round ratios, "
                           "with min and max", "rounds": rounds, "row_bytes": 16 + 200 + 8,
                 "input_tasks": 4, "throughput": {}, "targets": {"throughput_vs_delta": 1.5,
                                                                 "micro_batch_vs_delta": 0.5}}
    n = [0]

    def fresh(name: str) -> str:
        n[0] += 1
        return str(work / f"{name}-{n[0]}")

    try:
        for rows in sizes:
            df = _frame(spark, rows, 4).cache()
            df.count()
            for partitions in (4, 32):
                last = {}

                def seglog():
                    sink = SegmentLogSink(fresh("seglog"), topic="bench", partitions=partitions)
                    sink(df, 0)
                    last["sink"] = sink

                def delta():
                    df.write.format("delta").mode("append").save(fresh("delta"))

                r = _compare(seglog, delta, rounds, seglog_over_delta=False)
                sink = last["sink"]
                r["seglog_rows_per_s"] = rows / r["seglog_median_s"]
                r["delta_rows_per_s"] = rows / r["delta_median_s"]
                r["largest_task_share"] = max(sink.last_task_rows) / sum(sink.last_task_rows)
                r["phases_s_last_round"] = dict(sink.last_timings)
                out["throughput"][f"{rows}x{partitions}"] = r
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir()
            df.unpersist()

        # micro-batches: consecutive 1,000-row batches into one log and one Delta table
        small = _frame(spark, 1000, 1).cache()
        small.count()
        small_sink = SegmentLogSink(str(work / "small-seglog"), topic="small", partitions=4)
        batch = [0]

        def seglog_small():
            small_sink(small, batch[0])
            batch[0] += 1

        def delta_small():
            small.write.format("delta").mode("append").save(str(work / "small-delta"))

        # three warm-up runs each: the first batches create the topic and the table
        out["micro_batch_1000_rows"] = _compare(seglog_small, delta_small, rounds * 2, seglog_over_delta=True,
                                                warmup=3)
        out["micro_batch_1000_rows"]["phases_s_last_round"] = dict(small_sink.last_timings)
        small.unpersist()

        # peak executor memory at 1x and 10x rows: fresh processes (bench/executor_memory.py)
        from bench import executor_memory

        out["peak_executor_memory"] = executor_memory.run(quick=quick)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if own:
            spark.stop()


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
