"""Write paths benchmark (issue 25): `format("seglog")` (batch and streaming) and `SegmentLogSink` against
Delta, in one session.

Cases, each a comparison of interleaved rounds (bench/method.py; os.sync() untimed before every run):
- batch: a cached DataFrame of 1e6 rows (16-byte keys, 200-byte values, timestamps; 4 input tasks) into
  4 log partitions by `df.write.format("seglog")`, by `SegmentLogSink(...)(df, 0)`, and by Delta's append;
  ratios are throughput multiples of Delta's (Delta's time / seglog's);
- micro-batch: consecutive writes of a cached 1,000-row DataFrame into one log and one table, by
  `format("seglog")` with txnAppId/txnVersion (what a foreachBatch function writes), by `SegmentLogSink`,
  and by Delta's append; ratios are time multiples of Delta's (seglog's time / Delta's);
- stream throughput: one availableNow query over 1e6 rows in 4 Parquet files, into
  `writeStream.format("seglog")`, into `writeStream.foreachBatch(SegmentLogSink(...))`, and into a Delta
  sink; ratios are throughput multiples of Delta's;
- stream micro-batch: 12 Parquet files of 1,000 rows read one per trigger (`maxFilesPerTrigger=1`) into the
  same three sinks; a run's figure is the median of Spark's `durationMs.triggerExecution` over its batches;
  ratios are time multiples of Delta's.

Fresh output (and checkpoint) per run for the batch and stream cases; the micro-batch cases append to one
log and one table, as a stream does.
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import method
from bench.sink import _frame   # the same input rows as the sink bench (16-byte keys, 200-byte values, timestamps)

STREAM_FILES = 12           # 1,000-row files, one per trigger
WARMUP = 2


def _ratios(times: dict, pairs: dict, time_multiple: bool) -> dict:
    """name -> (a, b): a's time / b's (time_multiple) or b's / a's (a's throughput as a multiple of b's)."""
    return {name: (method.ratio(times[a], times[b]) if time_multiple else method.ratio(times[b], times[a]))
            for name, (a, b) in pairs.items()}


def batch(spark, work: Path, rows: int, rounds: int) -> dict:
    from seglog.sink import SegmentLogSink

    df = _frame(spark, rows, 4).cache()
    df.count()
    n = [0]

    def fresh(name: str) -> str:
        n[0] += 1
        return str(work / f"{name}-{n[0]}")

    def fmt():
        (df.write.format("seglog").mode("append").option("topic", "bench").option("partitions", "4")
         .save(fresh("format")))

    def sink():
        SegmentLogSink(fresh("sink"), writer_id="bench", topic="bench", partitions=4)(df, 0)

    def delta():
        df.write.format("delta").mode("append").save(fresh("delta"))

    try:
        times = method.interleaved({"format": fmt, "sink": sink, "delta": delta}, rounds, warmup=WARMUP + 1,
                                   settle=os.sync)
    finally:
        df.unpersist()
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
    return {"rows": rows, "input_tasks": 4, "log_partitions": 4,
            "throughput_multiple": _ratios(times, {"format_vs_delta": ("format", "delta"),
                                                   "sink_vs_delta": ("sink", "delta"),
                                                   "format_vs_sink": ("format", "sink")}, time_multiple=False),
            "seconds": {k: method.summary(v) for k, v in times.items()}}


def micro_batch(spark, work: Path, rounds: int) -> dict:
    from seglog.sink import SegmentLogSink

    small = _frame(spark, 1000, 1).cache()
    small.count()
    sink = SegmentLogSink(str(work / "mb-sink"), writer_id="bench", topic="small", partitions=4)
    version = {"format": 0, "sink": 0}

    def fmt():
        (small.write.format("seglog").mode("append").option("topic", "small").option("partitions", "4")
         .option("txnAppId", "bench").option("txnVersion", str(version["format"])).save(str(work / "mb-format")))
        version["format"] += 1

    def via_sink():
        sink(small, version["sink"])
        version["sink"] += 1

    def delta():
        small.write.format("delta").mode("append").save(str(work / "mb-delta"))

    try:
        times = method.interleaved({"format": fmt, "sink": via_sink, "delta": delta}, rounds, warmup=3,
                                   settle=os.sync)
    finally:
        small.unpersist()
    segments = {name: _segments(work / f"mb-{name}") for name in ("format", "sink")}
    return {"rows": 1000, "log_partitions": 4,
            "time_multiple": _ratios(times, {"format_vs_delta": ("format", "delta"),
                                             "sink_vs_delta": ("sink", "delta"),
                                             "format_vs_sink": ("format", "sink")}, time_multiple=True),
            "seconds": {k: method.summary(v) for k, v in times.items()},
            "segments_after": segments, "batches_written": dict(version)}


def _segments(root: Path) -> int:
    return sum(1 for _ in root.rglob("*.log"))


def _parquet_source(spark, folder: Path, files: int, rows_per_file: int) -> None:
    for i in range(files):
        (_frame(spark, rows_per_file, 1).selectExpr("key", "value", "timestamp",
                                                     f"{i} AS _f").drop("_f")
         .write.mode("overwrite").parquet(str(folder / f"part-{i:04d}")))
    # the file source reads every Parquet file under the folder: flatten the part folders
    for part in sorted(folder.glob("part-*")):
        for f in part.glob("*.parquet"):
            f.rename(folder / f"{part.name}-{f.name}")
        shutil.rmtree(part)


def stream(spark, work: Path, source: Path, rounds: int, per_trigger: int | None) -> dict:
    """One query per run over the Parquet files under `source` into each sink; with `per_trigger`
    files per trigger the run's figure is the median trigger time (Spark's), else the query's wall time."""
    from seglog.sink import SegmentLogSink

    schema = "key binary, value binary, timestamp timestamp"
    n = [0]

    def query(name: str, start) -> float:
        n[0] += 1
        out = work / f"{name}-{n[0]}"
        reader = spark.readStream.schema(schema)
        if per_trigger:
            reader = reader.option("maxFilesPerTrigger", str(per_trigger))
        df = reader.parquet(str(source))
        w = df.writeStream.option("checkpointLocation", str(out) + "-ckpt").trigger(availableNow=True)
        t0 = time.perf_counter()
        q = start(w, str(out))
        q.awaitTermination()
        took = time.perf_counter() - t0
        if q.exception() is not None:
            raise RuntimeError(f"bench stream {name}: {q.exception()}")
        progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(str(out) + "-ckpt", ignore_errors=True)
        if per_trigger:
            return statistics.median(p["durationMs"]["triggerExecution"] / 1000 for p in progress)
        return took

    cases = {
        "format": lambda: query("format", lambda w, out: w.format("seglog").option("topic", "s")
                                .option("partitions", "4").start(out)),
        "sink": lambda: query("sink", lambda w, out: w.foreachBatch(
            SegmentLogSink(out, topic="s", partitions=4)).start()),
        "delta": lambda: query("delta", lambda w, out: w.format("delta").start(out)),
    }
    times = method.interleaved(cases, rounds, warmup=WARMUP, settle=os.sync)
    pairs = {"format_vs_delta": ("format", "delta"), "sink_vs_delta": ("sink", "delta"),
             "format_vs_sink": ("format", "sink")}
    key = "time_multiple" if per_trigger else "throughput_multiple"
    return {key: _ratios(times, pairs, time_multiple=bool(per_trigger)),
            "seconds": {k: method.summary(v) for k, v in times.items()}}


def run(quick: bool = False, spark=None) -> dict:
    from seglog.sink.session import local_session

    own = spark is None
    spark = spark or local_session("seglog-bench-write", with_delta=True, driver_memory="8g")
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-write-"))
    rounds = 3 if quick else 7
    rows = 200_000 if quick else 1_000_000
    out: dict = {"method": f"warm-up, then {rounds} interleaved rounds of the three writers (format(\"seglog\"), "
                           "SegmentLogSink, Delta), os.sync() untimed before every run; median of per-round ratios "
                           "with min and max",
                 "targets": {"batch format_vs_delta throughput": ">= 1.5",
                             "today's sink (issue 25)": "throughput 1.93x Delta's, micro-batch 0.45x Delta's time"}}
    for sub in ("batch", "mb", "st", "sm"):
        (work / sub).mkdir()
    try:
        out["batch"] = batch(spark, work / "batch", rows, rounds)
        out["micro_batch_1000_rows"] = micro_batch(spark, work / "mb", rounds * 2)
        big, small = work / "src-big", work / "src-small"
        _parquet_source(spark, big, 4, rows // 4)
        _parquet_source(spark, small, STREAM_FILES, 1000)
        out["stream_throughput"] = dict(stream(spark, work / "st", big, rounds, None), rows=rows)
        out["stream_micro_batch_1000_rows"] = dict(stream(spark, work / "sm", small, rounds, 1),
                                                   triggers=STREAM_FILES)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if own:
            spark.stop()


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2, default=float))
