"""A streaming trigger's driver cost as retained history grows (issue 24): `readStream.format("seglog")`
reading the same last records of a 2-partition topic whose partitions retain N segments, for N and 10N.

The cost of one trigger is what Spark's progress reports for the driver's part of it: `latestOffset` +
`queryPlanning` + `getBatch` (ms). Each run is one `Trigger.AvailableNow` query from a fresh checkpoint,
starting `READ` offsets before each partition's end, `maxOffsetsPerTrigger` cutting that into `TRIGGERS`
micro-batches into the `noop` sink; a run's figure is the median over its micro-batches.

Method (bench/method.py): one session; every case warmed up; interleaved rounds; the median of per-round
ratios (10N over N) with min and max. Target: at most 1.2x.

The wide case: `WIDE_PARTITIONS` partitions of `WIDE_SEGMENTS` segments each (one partition written through
the Log API, hard-linked into the others: readers never write, and a root of 300,000 files builds in
seconds), read the same way, `WIDE_READ` offsets per partition over `TRIGGERS` micro-batches. Target: at
most 250 ms per trigger.
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
from seglog.indexer.topics import create_topic  # noqa: E402

TOPIC = "events"
PARTITIONS = 2
SEGMENT_BYTES = 16 << 10          # small segments: history in segments, not in bytes
VALUE_BYTES = 200
READ = 400                        # offsets read per partition, the same at every history
TRIGGERS = 4
WIDE_PARTITIONS = 1_000
WIDE_SEGMENTS = 100
WIDE_READ = 40


def write_partition(folder: Path, segments: int) -> int:
    """A partition filled until it holds `segments` segments; returns its end."""
    rng = np.random.default_rng(1)
    per_append = 2_000
    with Log.open(folder, {"segment.bytes": SEGMENT_BYTES}) as log:
        while len(log.segments()) < segments:
            values = pa.array([rng.bytes(VALUE_BYTES) for _ in range(per_append)], pa.binary())
            keys = pa.array([f"k{i}".encode() for i in range(per_append)], pa.binary())
            ts = 1_700_000_000_000 + log.log_end_offset + np.arange(per_append, dtype=np.int64)
            log.append_columns(values, keys, ts)
        log.flush()
        return log.log_end_offset


def write_history(root: Path, segments: int) -> dict[int, int]:
    """Each partition filled until it holds `segments` segments; returns the committed ends."""
    ends = {p: write_partition(root / f"{TOPIC}-{p}", segments) for p in range(PARTITIONS)}
    CommitLog(root, TOPIC).commit("bench", 0, ends)
    return ends


def write_wide(root: Path, partitions: int, segments: int) -> dict[int, int]:
    """One partition written through the Log API, its files hard-linked into the others (a reader's view of
    `partitions` identical partitions); returns the committed ends."""
    create_topic(root, TOPIC, partitions, {"segment.bytes": SEGMENT_BYTES})
    template = root / f"{TOPIC}-0"
    end = write_partition(template, segments)
    for p in range(1, partitions):
        shutil.copytree(template, root / f"{TOPIC}-{p}", copy_function=os.link)
    ends = {p: end for p in range(partitions)}
    CommitLog(root, TOPIC).commit("bench", 0, ends)
    return ends


def driver_ms(spark, root: Path, ends: dict[int, int], work: Path, read: int = READ) -> float:
    """The median driver cost (s) of one run's micro-batches, each run reading `read` offsets per partition."""
    ckpt = work / "ckpt"
    shutil.rmtree(ckpt, ignore_errors=True)
    start = {str(p): e - read for p, e in ends.items()}
    q = (spark.readStream.format("seglog").option("topic", TOPIC)
         .option("startingOffsets", json.dumps({TOPIC: start}))
         .option("maxOffsetsPerTrigger", str(len(ends) * read // TRIGGERS)).load(str(root))
         .writeStream.format("noop").option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    q.awaitTermination()
    costs = [sum(p["durationMs"].get(k, 0) for k in ("latestOffset", "queryPlanning", "getBatch"))
             for p in q.recentProgress if p["numInputRows"] > 0]
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    if rows != len(ends) * read:
        raise AssertionError(f"the run read {rows} rows, expected {len(ends) * read}")
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
        wide_root = work / "wide"
        wide_ends = write_wide(wide_root, WIDE_PARTITIONS, WIDE_SEGMENTS)
        wide = method.interleaved({"wide": lambda: driver_ms(spark, wide_root, wide_ends, work, WIDE_READ)},
                                  rounds=max(2, n_rounds // 2), warmup=1)["wide"]
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
            "wide": {"partitions": WIDE_PARTITIONS, "segments_per_partition": WIDE_SEGMENTS,
                     "read_per_partition": WIDE_READ, "runs_seconds": [round(x, 4) for x in wide],
                     "median_ms": round(statistics.median(wide) * 1e3, 1), "target": "at most 250 ms per trigger"},
            "load": {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()},
        }
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
