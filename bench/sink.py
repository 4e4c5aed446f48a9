"""Sink benchmark (docs/spec.md §11), every figure against baselines measured in the same run and session:

- throughput: the same cached micro-batch (16-byte keys, 200-byte values, timestamps) written by
  SegmentLogSink, by Delta (`format("delta").mode("append")`), by Parquet, and the ceiling for any
  Python sink: a `mapInArrow` over the same rows that only counts them (the JVM-to-Python transfer);
- per-batch overhead: micro-batches of 1,000 rows through the sink and through Delta;
- where the sink's time goes: its per-phase timings (`SegmentLogSink.last_timings`).
"""
from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

TS = 1_700_000_000_000


def _frame(spark, rows: int, partitions: int):
    from pyspark.sql import functions as F

    df = (spark.range(rows, numPartitions=partitions)
          .select(F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 16).cast("binary").alias("key"),
                  F.expr("CAST(repeat(substring(sha2(CAST(id AS STRING), 256), 1, 40), 5) AS BINARY)").alias("value"),
                  F.timestamp_millis(F.lit(TS) + F.col("id")).alias("timestamp")))
    return df.cache()


def _ceiling(df) -> None:
    import pyarrow as pa

    def count(batches):
        n = 0
        for b in batches:
            n += b.num_rows
        yield pa.RecordBatch.from_pydict({"n": [n]})

    df.mapInArrow(count, "n long").collect()


def _timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def run(quick: bool = False, spark=None) -> dict:
    from seglog.sink import SegmentLogSink
    from seglog.sink.session import local_session

    own = spark is None
    spark = spark or local_session("seglog-bench-sink", with_delta=True)
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-sink-"))
    rows = 200_000 if quick else 1_000_000
    repeats = 3
    try:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        df = _frame(spark, rows, 4)
        df.count()
        row_bytes = 16 + 200 + 8
        counter = {"seglog": 0, "delta": 0, "parquet": 0}

        def seglog():
            counter["seglog"] += 1
            SegmentLogSink(str(work / f"seglog-{counter['seglog']}"), topic="bench", partitions=4)(df, 0)

        def delta():
            counter["delta"] += 1
            df.write.format("delta").mode("append").save(str(work / f"delta-{counter['delta']}"))

        def parquet():
            counter["parquet"] += 1
            df.write.mode("append").parquet(str(work / f"parquet-{counter['parquet']}"))

        _ceiling(df)      # warm the Python workers and the numba cache before timing anything
        seglog()
        times = {"ceiling_mapInArrow_count": _timed(lambda: _ceiling(df), repeats),
                 "seglog": _timed(seglog, repeats), "delta": _timed(delta, repeats),
                 "parquet": _timed(parquet, repeats)}
        sink = SegmentLogSink(str(work / "profile"), topic="bench", partitions=4)
        sink(df, 0)
        phases = dict(sink.last_timings)
        med = {k: statistics.median(v) for k, v in times.items()}
        throughput = {k: {"seconds": s, "rows_per_s": rows / s, "MB_per_s": rows * row_bytes / s / 1e6}
                      for k, s in med.items()}

        # per-batch overhead: ten 1,000-row micro-batches, sink vs Delta
        small = _frame(spark, 1000, 1)
        small.count()
        small_sink = SegmentLogSink(str(work / "small-seglog"), topic="small", partitions=4)
        small_sink(small, 0)
        small_times = _timed(lambda: small_sink(small, small_sink_batch()), 10)
        small_delta = _timed(lambda: small.write.format("delta").mode("append").save(str(work / "small-delta")), 10)
        df.unpersist()
        return {
            "rows": rows, "row_bytes": row_bytes, "repeats": repeats, "throughput": throughput,
            "sink_phases_s": phases,
            "ratio_vs_delta": med["delta"] / med["seglog"], "target_vs_delta": 1.5,
            "ratio_vs_ceiling": med["ceiling_mapInArrow_count"] / med["seglog"], "target_vs_ceiling": 0.8,
            "ratio_vs_parquet": med["parquet"] / med["seglog"],
            "small_batch_s": {"seglog": statistics.median(small_times), "delta": statistics.median(small_delta)},
            "small_batch_overhead_vs_delta": statistics.median(small_times) / statistics.median(small_delta),
            "target_small_batch_overhead": 1 / 3,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if own:
            spark.stop()


_batch = [0]


def small_sink_batch() -> int:
    _batch[0] += 1
    return _batch[0]


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
