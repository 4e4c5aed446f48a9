"""Replay benchmark (docs/spec.md §11, Replay): seglog's JVM reader against Delta on the same rows.

Data: 2,000,000 rows (16-byte keys, 200-byte values, increasing timestamps) in a seglog log of 4
partitions written with the storage API (`Log.append_columns`) and committed, the same log again with
10x the segments (segment.bytes / 10), and the same rows as a Delta table written in timestamp order in
many files (so Delta's data skipping on `timestamp` is meaningful).

Method (DEVELOPERS.md): one session; every case warmed up; then interleaved rounds (each round runs
every case once, in a rotating order); for each comparison the ratio is taken per round and the median
of the per-round ratios is reported with its min and max.

Cases (a `noop` write: every row reaches the JVM, none the driver):
- narrow: the last 1% by `startingTimestamp`, and by `where timestamp >= T`, vs Delta's `where timestamp >= T`;
- full: the whole log vs the whole Delta table (columnar batches; and rows, `columnarReads=false`, for reference);
- issue 28: `count()` and `sum(length(value))` of the whole log, `count()` of the last 1% (by `where` and by
  `startingTimestamp`) and of the whole topic's pushed aggregate, each against Delta's same query;
- time to first row (`limit(1).collect()` from the last 1%) on the log and on the 10x-segments log, and Delta's;
- planning: the JVM planner alone (`Planner.plan`, on the driver through py4j) on both logs;
- the floor: `spark.sql("SELECT 1").collect()`, the cheapest query PySpark runs (no table, no Spark job), so
  that a count target can be read against what any query costs in the same session.

Targets: narrow <= 0.5x Delta; full <= 1.0x Delta; time to first row and planning flat at 10x segments.
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
from seglog.indexer import Log  # noqa: E402
from seglog.indexer.commit_log import CommitLog  # noqa: E402

PARTITIONS = 4
ROWS = 2_000_000
SEGMENT_BYTES = 16 << 20            # ~8 segments per partition; the "10x" log uses a tenth of it
CHUNK_ROWS = 100_000                # rows appended per Log.append_columns call (per partition)
DELTA_FILE_ROWS = 131_072           # ~28 MB Parquet files: Delta's skipping has many files to prune


def _now() -> float:
    return time.perf_counter()


def write_log(root: Path, rows: int, segment_bytes: int, parquet_dir: Path | None = None) -> dict:
    """`rows` records over PARTITIONS partitions (row g -> partition g % P, timestamp TS0 + g), committed
    as the sink would; optionally the same rows as Parquet files in timestamp order (Delta's input)."""
    pool = sb._pool(5)
    logs = [Log.open(root / f"{sb.TOPIC}-{p}", {"segment.bytes": segment_bytes}) for p in range(PARTITIONS)]
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
        CommitLog(root, sb.TOPIC).commit("bench", 0, {p: log.log_end_offset for p, log in enumerate(logs)})
        nbytes = sum(log.size_bytes() for log in logs)
        segments = sum(len(log.segments()) for log in logs)
    finally:
        for log in logs:
            log.close()
    return {"rows": rows, "log_bytes": nbytes, "segments": segments, "write_s": _now() - t0}


def write_delta(spark, parquet_dir: Path, delta_dir: Path) -> dict:
    t0 = _now()
    (spark.read.parquet(str(parquet_dir)).write.format("delta")
     .option("maxRecordsPerFile", DELTA_FILE_ROWS).mode("overwrite").save(str(delta_dir)))
    files = [f for f in os.listdir(delta_dir) if f.endswith(".parquet")]
    return {"files": len(files), "bytes": sum(os.path.getsize(delta_dir / f) for f in files), "write_s": _now() - t0}


def _ts_literal(ms: int):
    import datetime as dt
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


def seglog_df(spark, root: Path, start_ms: int | None = None, where_ms: int | None = None, columnar: bool = True,
              check_crcs: bool = True):
    from pyspark.sql import functions as F
    r = (spark.read.format("seglog").option("topic", sb.TOPIC).option("columnarReads", str(columnar).lower())
         .option("checkCrcs", str(check_crcs).lower()))
    if start_ms is not None:
        r = r.option("startingTimestamp", str(start_ms))
    df = r.load(str(root))
    return df if where_ms is None else df.where(F.col("timestamp") >= F.lit(_ts_literal(where_ms)))


def delta_df(spark, delta_dir: Path, where_ms: int | None = None):
    from pyspark.sql import functions as F
    df = spark.read.format("delta").load(str(delta_dir))
    return df if where_ms is None else df.where(F.col("timestamp") >= F.lit(_ts_literal(where_ms)))


def sum_len(df) -> int:
    from pyspark.sql import functions as F
    return df.agg(F.sum(F.length("value"))).collect()[0][0]


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def first_row(df) -> None:
    assert len(df.limit(1).collect()) == 1


def jvm_plan(spark, root: Path, start_ms: int) -> int:
    """The JVM planner alone (what the driver does before any task): the number of tasks planned."""
    jvm = spark._jvm
    options = jvm.java.util.HashMap()
    for k, v in {"path": str(root), "topic": sb.TOPIC, "startingTimestamp": str(start_ms)}.items():
        options.put(k, v)
    read = jvm.io.seglog.spark.read
    # DataLoss is package-private (the planner's own): made through reflection, failOnDataLoss=true
    boolean = jvm.java.lang.Boolean.TYPE
    types = spark.sparkContext._gateway.new_array(jvm.java.lang.Class, 1)
    types[0] = boolean
    loader = read.ScanBounds().getClass().getClassLoader()
    ctor = loader.loadClass("io.seglog.spark.read.DataLoss").getDeclaredConstructor(types)
    ctor.setAccessible(True)
    args = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 1)
    args[0] = True
    return read.Planner.plan(read.ReadOptions.parse(options), read.ScanBounds(), 2, ctor.newInstance(args)).size()


def rounds(cases: dict, n: int) -> dict[str, list[float]]:
    """Seconds of each case per round; each round runs every case once, starting at a rotating case."""
    names = list(cases)
    out: dict[str, list[float]] = {k: [] for k in names}
    for r in range(n):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = _now()
            cases[name]()
            out[name].append(_now() - t0)
    return out


def ratio(runs: dict, a: str, b: str) -> dict:
    """Median, min and max of the per-round ratios a/b."""
    per_round = [x / y for x, y in zip(runs[a], runs[b])]
    return {"median": statistics.median(per_round), "min": min(per_round), "max": max(per_round),
            "per_round": [round(x, 3) for x in per_round]}


def run(quick: bool = False, work: Path | None = None, n_rounds: int | None = None) -> dict:
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="seglog-replay-")) if own else Path(work)
    work.mkdir(parents=True, exist_ok=True)
    n_rounds = n_rounds or (5 if quick else 9)
    rows = ROWS // 4 if quick else ROWS
    load_before = os.getloadavg()
    try:
        log, log10, parquet, delta = work / "log", work / "log10x", work / "parquet", work / "delta"
        for d in (log, log10, parquet):
            d.mkdir()
        data = {"log": write_log(log, rows, SEGMENT_BYTES, parquet),
                "log_10x_segments": write_log(log10, rows, SEGMENT_BYTES // 10)}

        from seglog.sink.session import local_session
        from seglog.source import register
        spark = local_session("seglog-replay-bench", with_delta=True)
        register(spark)        # the JVM reader: raises if the connector jar is not loaded
        data["delta"] = write_delta(spark, parquet, delta)
        shutil.rmtree(parquet)

        t_narrow = sb.TS0 + int((rows - 1) * 0.99)
        narrow_rows = rows - (t_narrow - sb.TS0)
        cases = {
            "seglog_narrow_startingTimestamp": lambda: noop(seglog_df(spark, log, start_ms=t_narrow)),
            "seglog_narrow_where": lambda: noop(seglog_df(spark, log, where_ms=t_narrow)),
            "delta_narrow_where": lambda: noop(delta_df(spark, delta, t_narrow)),
            "seglog_full": lambda: noop(seglog_df(spark, log)),
            "seglog_full_rows": lambda: noop(seglog_df(spark, log, columnar=False)),
            "delta_full": lambda: noop(delta_df(spark, delta)),
            "seglog_count_full": lambda: seglog_df(spark, log).count(),
            "delta_count_full": lambda: delta_df(spark, delta).count(),
            "seglog_sum_length_full": lambda: sum_len(seglog_df(spark, log)),
            "delta_sum_length_full": lambda: sum_len(delta_df(spark, delta)),
            "seglog_count_narrow_where": lambda: seglog_df(spark, log, where_ms=t_narrow).count(),
            "seglog_count_narrow_startingTimestamp": lambda: seglog_df(spark, log, start_ms=t_narrow).count(),
            # Kafka's check.crcs=false: counts from batch headers (docs/spec.md §11); not the default
            "seglog_count_full_nocrc": lambda: seglog_df(spark, log, check_crcs=False).count(),
            "seglog_count_narrow_startingTimestamp_nocrc":
                lambda: seglog_df(spark, log, start_ms=t_narrow, check_crcs=False).count(),
            "seglog_sum_length_full_nocrc": lambda: sum_len(seglog_df(spark, log, check_crcs=False)),
            "delta_count_narrow_where": lambda: delta_df(spark, delta, t_narrow).count(),
            "seglog_first_row": lambda: first_row(seglog_df(spark, log, start_ms=t_narrow)),
            "seglog_first_row_10x_segments": lambda: first_row(seglog_df(spark, log10, start_ms=t_narrow)),
            "delta_first_row": lambda: first_row(delta_df(spark, delta, t_narrow)),
            "seglog_plan": lambda: jvm_plan(spark, log, t_narrow),
            "seglog_plan_10x_segments": lambda: jvm_plan(spark, log10, t_narrow),
            # the floor: the cheapest query PySpark runs (no table, no job), in the same session
            "spark_floor_select_1": lambda: spark.sql("SELECT 1 AS one").collect(),
        }
        # Warm-up: every case (JVM code paths, Delta's log, the page cache), twice.
        for _ in range(2):
            for fn in cases.values():
                fn()
        assert seglog_df(spark, log, start_ms=t_narrow).count() == narrow_rows
        assert seglog_df(spark, log, where_ms=t_narrow).count() == narrow_rows
        assert delta_df(spark, delta, t_narrow).count() == narrow_rows
        assert seglog_df(spark, log).count() == rows == delta_df(spark, delta).count()
        assert seglog_df(spark, log, check_crcs=False).count() == rows
        assert seglog_df(spark, log, start_ms=t_narrow, check_crcs=False).count() == narrow_rows
        assert sum_len(seglog_df(spark, log)) == sum_len(seglog_df(spark, log, columnar=False)) == sum_len(delta_df(spark, delta))
        runs = rounds(cases, n_rounds)

        results: dict = {
            "quick": quick, "partitions": PARTITIONS, "rows": rows, "narrow_rows": narrow_rows, "data": data,
            "method": f"one session; each case warmed up twice; {n_rounds} interleaved rounds (rotating order); "
                      "median of per-round ratios with min and max",
            "median_seconds": {k: statistics.median(v) for k, v in runs.items()},
            "runs_seconds": {k: [round(x, 4) for x in v] for k, v in runs.items()},
            "ratios": {
                "narrow_startingTimestamp_over_delta": ratio(runs, "seglog_narrow_startingTimestamp", "delta_narrow_where"),
                "narrow_where_over_delta": ratio(runs, "seglog_narrow_where", "delta_narrow_where"),
                "full_over_delta": ratio(runs, "seglog_full", "delta_full"),
                "full_rows_over_delta": ratio(runs, "seglog_full_rows", "delta_full"),
                "count_full_over_delta": ratio(runs, "seglog_count_full", "delta_count_full"),
                "sum_length_full_over_delta": ratio(runs, "seglog_sum_length_full", "delta_sum_length_full"),
                "count_narrow_where_over_delta": ratio(runs, "seglog_count_narrow_where", "delta_count_narrow_where"),
                "count_narrow_startingTimestamp_over_delta": ratio(runs, "seglog_count_narrow_startingTimestamp",
                                                                   "delta_count_narrow_where"),
                "count_full_nocrc_over_delta": ratio(runs, "seglog_count_full_nocrc", "delta_count_full"),
                "count_narrow_startingTimestamp_nocrc_over_delta": ratio(runs, "seglog_count_narrow_startingTimestamp_nocrc",
                                                                         "delta_count_narrow_where"),
                "sum_length_full_nocrc_over_delta": ratio(runs, "seglog_sum_length_full_nocrc", "delta_sum_length_full"),
                "first_row_over_delta": ratio(runs, "seglog_first_row", "delta_first_row"),
                "first_row_10x_segments_over_1x": ratio(runs, "seglog_first_row_10x_segments", "seglog_first_row"),
                "plan_10x_segments_over_1x": ratio(runs, "seglog_plan_10x_segments", "seglog_plan"),
                # a count target below this ratio is below the cost of any query in this session
                "spark_floor_over_delta_count_full": ratio(runs, "spark_floor_select_1", "delta_count_full"),
                "spark_floor_over_delta_count_narrow": ratio(runs, "spark_floor_select_1", "delta_count_narrow_where"),
                "count_full_nocrc_over_spark_floor": ratio(runs, "seglog_count_full_nocrc", "spark_floor_select_1"),
                "count_narrow_startingTimestamp_over_spark_floor": ratio(runs, "seglog_count_narrow_startingTimestamp",
                                                                         "spark_floor_select_1"),
            },
        }
        r = results["ratios"]
        results["targets"] = {"narrow_max": 0.5, "full_max": 1.0, "flat_max": 1.25,
                              "issue28_full_max": 0.3, "issue28_count_narrow_max": 0.1, "issue28_count_full_max": 0.05}
        results["targets_met"] = {
            "narrow_startingTimestamp": r["narrow_startingTimestamp_over_delta"]["median"] <= 0.5,
            "narrow_where": r["narrow_where_over_delta"]["median"] <= 0.5,
            "full": r["full_over_delta"]["median"] <= 1.0,
            "first_row_flat": r["first_row_10x_segments_over_1x"]["median"] <= 1.25,
            "issue28_count_full": r["count_full_over_delta"]["median"] <= 0.05,
            "issue28_sum_length_full": r["sum_length_full_over_delta"]["median"] <= 0.3,
            "issue28_count_narrow_where": r["count_narrow_where_over_delta"]["median"] <= 0.1,
            "issue28_count_narrow_startingTimestamp": r["count_narrow_startingTimestamp_over_delta"]["median"] <= 0.1,
        }
        results["load"] = {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()}
        return results
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
