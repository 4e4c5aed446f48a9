"""A streaming trigger's driver cost as retained history grows (issue 24): `readStream.format("seglog")`
reading the same last records of a 2-partition topic whose partitions retain N segments, for N and 10N.

The cost of one trigger is what Spark's progress reports for the driver's part of it: `latestOffset` +
`queryPlanning` + `getBatch` (ms). Each run is one `Trigger.AvailableNow` query from a fresh checkpoint,
starting `READ` offsets before each partition's end, `maxOffsetsPerTrigger` cutting that into `TRIGGERS`
micro-batches into the `noop` sink; a run's figure is the median over its micro-batches.

Method (bench/method.py): one session; every case warmed up; interleaved rounds; the median of per-round
ratios (10N over N) with min and max. Target: at most 1.2x.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import method  # noqa: E402
from seglog.indexer import Log  # noqa: E402
from seglog.indexer.commit_log import CommitLog  # noqa: E402

TOPIC = "events"
PARTITIONS = 2
SEGMENT_BYTES = 16 << 10          # small segments: history in segments, not in bytes
VALUE_BYTES = 200
READ = 400                        # offsets read per partition, the same at every history
TRIGGERS = 4


def write_history(root: Path, segments: int) -> dict[int, int]:
    """Each partition filled until it holds `segments` segments; returns the committed ends."""
    ends = {}
    rng = np.random.default_rng(1)
    per_append = 2_000
    for p in range(PARTITIONS):
        with Log.open(root / f"{TOPIC}-{p}", {"segment.bytes": SEGMENT_BYTES}) as log:
            while len(log.segments()) < segments:
                values = pa.array([rng.bytes(VALUE_BYTES) for _ in range(per_append)], pa.binary())
                keys = pa.array([f"k{i}".encode() for i in range(per_append)], pa.binary())
                ts = 1_700_000_000_000 + log.log_end_offset + np.arange(per_append, dtype=np.int64)
                log.append_columns(values, keys, ts)
            log.flush()
            ends[p] = log.log_end_offset
    CommitLog(root, TOPIC).commit("bench", 0, ends)
    return ends


def driver_ms(spark, root: Path, ends: dict[int, int], work: Path) -> float:
    """The median driver cost (s) of one run's micro-batches."""
    ckpt = work / "ckpt"
    shutil.rmtree(ckpt, ignore_errors=True)
    start = {str(p): e - READ for p, e in ends.items()}
    q = (spark.readStream.format("seglog").option("topic", TOPIC)
         .option("startingOffsets", json.dumps({TOPIC: start}))
         .option("maxOffsetsPerTrigger", str(PARTITIONS * READ // TRIGGERS)).load(str(root))
         .writeStream.format("noop").option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    q.awaitTermination()
    costs = [sum(p["durationMs"].get(k, 0) for k in ("latestOffset", "queryPlanning", "getBatch"))
             for p in q.recentProgress if p["numInputRows"] > 0]
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    if rows != PARTITIONS * READ:
        raise AssertionError(f"the run read {rows} rows, expected {PARTITIONS * READ}")
    return statistics.median(costs) / 1e3


def run(quick: bool = False, work: Path | None = None, n_rounds: int | None = None) -> dict:
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="seglog-trigger-")) if own else Path(work)
    n_rounds = n_rounds or (3 if quick else 7)
    small, large = (20, 200) if quick else (200, 2000)
    load_before = os.getloadavg()
    try:
        from seglog.sink.session import local_session
        from seglog.source import register
        spark = local_session("seglog-trigger-bench")
        register(spark)
        roots = {n: work / f"history-{n}" for n in (small, large)}
        ends = {n: write_history(r, n) for n, r in roots.items()}
        cases = {f"segments_{n}": (lambda n=n: driver_ms(spark, roots[n], ends[n], work)) for n in (small, large)}
        times = method.interleaved(cases, rounds=n_rounds, warmup=1)
        return {
            "quick": quick, "partitions": PARTITIONS, "segments_per_partition": [small, large],
            "segment_bytes": SEGMENT_BYTES, "read_per_partition": READ, "triggers_per_run": TRIGGERS,
            "method": f"one session; each case warmed up; {n_rounds} interleaved rounds; median of per-round ratios "
                      "with min and max; a run's figure is the median over its micro-batches of "
                      "latestOffset + queryPlanning + getBatch",
            "runs_seconds": {k: [round(x, 4) for x in v] for k, v in times.items()},
            "median_ms": {k: round(statistics.median(v) * 1e3, 1) for k, v in times.items()},
            "ratios": {"trigger_driver_cost_10x_history": method.ratio(times[f"segments_{large}"],
                                                                        times[f"segments_{small}"])},
            "target": "at most 1.2x",
            "load": {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()},
        }
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
