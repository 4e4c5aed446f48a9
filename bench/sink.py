"""Sink benchmark (docs/spec.md §11): SegmentLogSink against Delta's append, in one session.

Method (bench/method.py, docs/DEVELOPING.md): every case is warmed up first (JIT, Delta's log; the throughput cases
three runs each, THROUGHPUT_WARMUP), then
measured in interleaved rounds (seglog, Delta, Delta, seglog, ...); each round gives one ratio and the
result is the median of the per-round ratios with their min and max. No figure comes from a single
run or from runs of one system measured apart from the other's.

- throughput: the same cached DataFrame (16-byte keys, 200-byte values, timestamps) of 1e6 rows
  and of 1e7 rows (200,000 with --quick), written into 4 and into 32 log partitions; ratio = Delta's
  time / seglog's time (seglog's throughput as a multiple of Delta's);
- micro-batch: a cached 1,000-row DataFrame appended as consecutive batches to one log and to one
  Delta table; ratio = seglog's time / Delta's time;
- skew: the largest write task's share of the rows (no shuffle: input partitions grouped into at most
  one write task per core, each writing its own rows);
- peak executor memory for one write of a generated batch at 1x and at 10x rows (bench/executor_memory.py:
  a fresh JVM per measurement, peak heap used after GC, rounds alternating the sizes);
- where seglog's time goes: the disk's floor (SegmentLogSink is a layer over format("seglog") and reports no phases):
  a third case in the same rounds writes the same bytes raw and fsyncs them (two writers, an fsync
  every 8 MiB), the least any writer that makes a batch durable before its commit can take;
- compressed: the same 1e6-row frame into a zstd topic (4 partitions; the tasks compress each batch,
  staged segments renamed in) against Delta with its default codec (Parquet's snappy), with the
  uncompressed topic as a third case in the same interleaved rounds; ratios are throughput multiples.
  `python -m bench.sink --compressed` runs this case alone and merges it into bench/results/sink.json;
  `python -m bench.sink --sizes 1000000` runs the throughput cases alone at the sizes given and merges them into
  bench/results/sink.json, each case stamped with its run's time and load (`measured`);
- a grown log: a 200,000-row batch into a log grown by 40 batches of the same rows (timestamps that
  stopped growing) against the same batch into a log of one batch (`--grown` alone); flat is 1.
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

TS = 1_700_000_000_000
# Warm-up runs of every throughput case before the measured rounds: both writers still speed up
# over their first runs in a session (JIT, Delta's log); measured, one 1e6-row write: seglog
# 1.85, 0.83, 0.86, 0.72, 0.68 s and Delta 5.4, 1.86, 1.50, 1.26, 1.09 s over the first five.
THROUGHPUT_WARMUP = 3


def _frame(spark, rows: int, partitions: int):
    from pyspark.sql import functions as F

    return (spark.range(rows, numPartitions=partitions)
            .select(F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 16).cast("binary").alias("key"),
                    F.expr("CAST(repeat(substring(sha2(CAST(id AS STRING), 256), 1, 40), 5) AS BINARY)").alias("value"),
                    F.timestamp_millis(F.lit(TS) + F.col("id")).alias("timestamp")))


def _compare(seglog, delta, rounds: int, seglog_over_delta: bool, warmup: int = 1, disk=None, spark=None) -> dict:
    """bench/method.py's interleaved rounds; the ratio Delta/seglog (throughput multiple) or
    seglog/Delta (time multiple), median with min and max. `disk`: a third case, the same bytes
    written durably with no encoding (the disk's floor for a writer that fsyncs before it commits).
    `spark`: a fourth, the same DataFrame written to Spark's `noop` sink (what Spark itself costs any sink:
    the job and every row reaching a writer); the floor of a Spark sink is the larger of the two."""
    cases = {"seglog": seglog, "delta": delta}
    if disk is not None:
        cases["disk"] = disk
    if spark is not None:
        cases["noop"] = spark
    # os.sync before every run (untimed): no run pays for the writeback of pages the other left dirty
    times = method.interleaved(cases, rounds, warmup=warmup, settle=os.sync)
    r = (method.ratio(times["seglog"], times["delta"]) if seglog_over_delta
         else method.ratio(times["delta"], times["seglog"]))
    out = dict(r, seglog_s=times["seglog"], delta_s=times["delta"],
               seglog_median_s=statistics.median(times["seglog"]), delta_median_s=statistics.median(times["delta"]))
    if disk is not None:
        out["disk_floor"] = dict(method.ratio(times["seglog"], times["disk"]), disk_s=times["disk"],
                                 what="seglog's time / the time to write and fsync its .log bytes raw")
    if disk is not None and spark is not None:
        floor = [max(d, n) for d, n in zip(times["disk"], times["noop"])]
        out["sink_floor"] = dict(method.ratio(times["seglog"], floor), noop_s=times["noop"],
                                 what="seglog's time / the larger of the disk's floor and the same DataFrame to noop")
    return out


def durable_write(folder: Path, nbytes: int, writers: int = 2, fsync_every: int = 8 << 20) -> None:
    """`nbytes` written by `writers` threads into one file each, 1 MiB at a time, fsynced every
    `fsync_every` bytes and at the end: what the disk needs to make a batch of that size durable."""
    import threading

    chunk = os.urandom(1 << 20)
    folder.mkdir(parents=True, exist_ok=True)

    def write(i: int) -> None:
        fd = os.open(folder / f"raw-{i}", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        try:
            done = since = 0
            while done < nbytes // writers:
                since += os.write(fd, chunk)
                done += len(chunk)
                if since >= fsync_every:
                    os.fsync(fd)
                    since = 0
            os.fsync(fd)
        finally:
            os.close(fd)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _bytes(folder: Path, suffix: str) -> int:
    return sum(p.stat().st_size for p in folder.rglob(f"*{suffix}"))


def compressed(spark, work: Path, rows: int, rounds: int, codec: str = "zstd") -> dict:
    """A compressed topic vs Delta (its default codec) and vs the uncompressed topic, interleaved."""
    from seglog.sink import SegmentLogSink

    df = _frame(spark, rows, 4).cache()
    df.count()
    last: dict = {}

    def writer(name: str, write):
        def case() -> float:
            target = work / f"{name}-{time.monotonic_ns()}"
            t0 = time.perf_counter()
            write(target)
            took = time.perf_counter() - t0        # the write only: removing the output is not timed
            last[name] = {"log_bytes": _bytes(target, ".log") or _bytes(target, ".parquet")}
            shutil.rmtree(target, ignore_errors=True)
            return took
        return case

    def seglog(cfg):
        def write(target):
            sink = SegmentLogSink(str(target), writer_id="bench", topic="bench", partitions=4, config=cfg)
            sink(df, 0)
            last["sink"] = sink
        return write

    try:
        times = method.interleaved({
            f"seglog_{codec}": writer(f"seglog_{codec}", seglog({"compression.type": codec})),
            "delta": writer("delta", lambda target: df.write.format("delta").mode("append").save(str(target))),
            "seglog_uncompressed": writer("seglog_uncompressed", seglog(None)),
        }, rounds, settle=os.sync)
    finally:
        df.unpersist()
    zs = times[f"seglog_{codec}"]
    return {
        "codec": codec, "rows": rows, "partitions": 4,
        "vs_delta": method.ratio(times["delta"], zs),                      # throughput multiple of Delta's
        "vs_uncompressed_topic": method.ratio(times["seglog_uncompressed"], zs),
        "seconds": {k: method.summary(v) for k, v in times.items()},
        "bytes_written": {k: v["log_bytes"] for k, v in last.items() if k != "sink"},
    }


def throughput(spark, work: Path, sizes: list[int], rounds: int) -> dict:
    """The throughput cases: each size's cached frame into 4 and into 32 partitions, seglog against Delta, the disk's
    floor and noop in interleaved rounds (after THROUGHPUT_WARMUP runs of each); `work` is emptied after each case."""
    from seglog.sink import SegmentLogSink

    out: dict = {}
    n = [0]
    made: dict[str, str] = {}

    def fresh(name: str) -> str:
        """A new output folder for a case, its previous one removed first (untimed: callers time after this).
        One output per case at a time: 8 runs of 3 cases at 1e7 rows would not fit on the disk."""
        if name in made:
            shutil.rmtree(made[name], ignore_errors=True)
        n[0] += 1
        made[name] = str(work / f"{name}-{n[0]}")
        return made[name]

    for rows in sizes:
        df = _frame(spark, rows, 4).cache()
        df.count()
        for partitions in (4, 32):
            last = {}

            def seglog() -> float:
                target = fresh("seglog")
                t0 = time.perf_counter()
                sink = SegmentLogSink(target, writer_id="bench", topic="bench", partitions=partitions)
                sink(df, 0)
                took = time.perf_counter() - t0   # the write only: counting its bytes is not timed
                last["sink"] = sink
                last["bytes"] = _bytes(Path(target), ".log")
                return took

            def delta() -> float:
                target = fresh("delta")
                t0 = time.perf_counter()
                df.write.format("delta").mode("append").save(target)
                return time.perf_counter() - t0

            def disk() -> float:   # the warm-up ran seglog first, so its byte count is known
                target = Path(fresh("raw"))
                t0 = time.perf_counter()
                durable_write(target, last["bytes"])
                return time.perf_counter() - t0

            def noop() -> None:
                df.write.format("noop").mode("overwrite").save()

            r = _compare(seglog, delta, rounds, seglog_over_delta=False, disk=disk, warmup=THROUGHPUT_WARMUP,
                         spark=noop)
            r["seglog_log_bytes"] = last["bytes"]
            r["seglog_rows_per_s"] = rows / r["seglog_median_s"]
            r["delta_rows_per_s"] = rows / r["delta_median_s"]
            out[f"{rows}x{partitions}"] = r
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            made.clear()
        df.unpersist()
    return out


def run(quick: bool = False, spark=None) -> dict:
    from seglog.sink import SegmentLogSink
    from seglog.sink.session import local_session

    own = spark is None
    # room to cache the 1e7-row frame (about 2.3 GB) beside both writers' work
    spark = spark or local_session("seglog-bench-sink", with_delta=True, driver_memory="12g")
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-sink-"))
    rounds = 3 if quick else 5
    sizes = [200_000] if quick else [1_000_000, 10_000_000]
    out: dict = {"method": f"warm-up ({THROUGHPUT_WARMUP} runs of every throughput case), then interleaved rounds "
                           "(seglog, Delta), os.sync() untimed before every run; median of per-round ratios, "
                           "with min and max", "rounds": rounds, "row_bytes": 16 + 200 + 8,
                 "input_tasks": 4, "throughput": {}, "targets": {"throughput_vs_delta": 1.5,
                                                                 "micro_batch_vs_delta": 0.5}}
    try:
        out["throughput"] = throughput(spark, work, sizes, rounds)

        # micro-batches: consecutive 1,000-row batches into one log and one Delta table
        small = _frame(spark, 1000, 1).cache()
        small.count()
        small_sink = SegmentLogSink(str(work / "small-seglog"), writer_id="bench", topic="small", partitions=4)
        batch = [0]

        def seglog_small():
            small_sink(small, batch[0])
            batch[0] += 1

        def delta_small():
            small.write.format("delta").mode("append").save(str(work / "small-delta"))

        # three warm-up runs each: the first batches create the topic and the table
        out["micro_batch_1000_rows"] = _compare(seglog_small, delta_small, rounds * 2, seglog_over_delta=True,
                                                warmup=3)
        small.unpersist()

        # peak executor memory at 1x and 10x rows: fresh processes (bench/executor_memory.py)
        from bench import executor_memory

        out["peak_executor_memory"] = executor_memory.run(quick=quick)
        out["compressed_zstd_1e6x4"] = compressed(spark, work, 200_000 if quick else 1_000_000, rounds)
        out["grown_log_200kx32"] = grown_log(spark, work, 200_000, 10 if quick else 40, rounds)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if own:
            spark.stop()


def grown_log(spark, work: Path, rows: int, grown_by: int, rounds: int, partitions: int = 32) -> dict:
    """One sink batch into a log already grown by `grown_by` batches of the same rows (timestamps
    that stopped growing: the last time index entry stays in the first batch), against the same
    batch into a log of one batch, interleaved; ratio = grown / young (flat is 1). Every batch opens
    each partition twice (the roll-back check and the publish): an open that read the active segment
    after its last time index entry would grow with the log."""
    from seglog.sink import SegmentLogSink

    df = _frame(spark, rows, 4).cache()
    df.count()
    grown = SegmentLogSink(str(work / "grown"), writer_id="bench", topic="bench", partitions=partitions)
    for batch_id in range(grown_by):
        grown(df, batch_id)
    batch = [grown_by]
    n = [0]

    def into_grown():
        grown(df, batch[0])
        batch[0] += 1

    def into_young() -> float:
        n[0] += 1
        young = SegmentLogSink(str(work / f"young-{n[0]}"), writer_id="bench", topic="bench", partitions=partitions)
        young(df, 0)   # its first batch, untimed
        os.sync()
        t0 = time.perf_counter()
        young(df, 1)
        return time.perf_counter() - t0

    try:
        times = method.interleaved({"grown": into_grown, "young": into_young}, rounds, warmup=3, settle=os.sync)
    finally:
        df.unpersist()
    return {"rows": rows, "partitions": partitions, "grown_by_batches": grown_by,
            "grown_over_young": method.ratio(times["grown"], times["young"]),
            "seconds": {k: method.summary(v) for k, v in times.items()}}


def run_only(key: str, measure, driver_memory: str | None = None) -> dict:
    """One case alone (`measure(spark, work)`), merged into bench/results/sink.json under `key`
    with the machine's load."""
    import json

    from seglog.sink.session import local_session

    started = time.time()
    load_before = os.getloadavg()
    spark = local_session("seglog-bench-sink", with_delta=True, **({"driver_memory": driver_memory} if driver_memory else {}))
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-sink-"))
    try:
        result = measure(spark, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    result["_meta"] = {"load_avg_before": load_before, "load_avg_after": os.getloadavg(), "cpus": os.cpu_count(),
                       "time": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "seconds": time.time() - started,
                       "busy": max(load_before[0], os.getloadavg()[0]) > 3}
    path = Path(__file__).resolve().parent / "results" / "sink.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[key] = result
    path.write_text(json.dumps(data, indent=2, default=float))
    return result


if __name__ == "__main__":
    import json

    if "--compressed" in sys.argv:
        print(json.dumps(run_only("compressed_zstd_1e6x4", lambda spark, work: compressed(spark, work, 1_000_000, 5)),
                         indent=2, default=float))
    elif "--sizes" in sys.argv:
        # the throughput cases alone at the sizes given (e.g. --sizes 1000000), merged into bench/results/sink.json case
        # by case; each case says when and under what load it was measured, since the file's other cases may be older
        wanted = [int(x) for x in sys.argv[sys.argv.index("--sizes") + 1].split(",")]
        rounds = int(os.environ.get("SEGLOG_BENCH_ROUNDS", "5"))

        def sizes_alone(spark, work):
            before = os.getloadavg()
            cases = throughput(spark, work, wanted, rounds)
            stamp = {"time": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "load_avg_before": before,
                     "load_avg_after": os.getloadavg(), "by": "python -m bench.sink --sizes"}
            return {case: dict(r, measured=stamp) for case, r in cases.items()}

        merged = run_only("_sizes", sizes_alone, driver_memory="12g")   # as the whole part's session
        path = Path(__file__).resolve().parent / "results" / "sink.json"
        data = json.loads(path.read_text())
        data.pop("_sizes", None)
        merged.pop("_meta", None)
        data.setdefault("throughput", {}).update(merged)
        path.write_text(json.dumps(data, indent=2, default=float))
        print(json.dumps(merged, indent=2, default=float))
    elif "--grown" in sys.argv:
        print(json.dumps(run_only("grown_log_200kx32", lambda spark, work: grown_log(spark, work, 200_000, 40, 5)),
                         indent=2, default=float))
    else:
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
