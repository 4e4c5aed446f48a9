"""Reader memory benchmark (issue 28: "peak executor memory flat with the batch size").

Data: 400,000 rows (16-byte keys, 200-byte values) over 2 partitions, written three times with the
storage API: record batches of about 16 KiB, 160 KiB and 1.6 MiB (x1, x10, x100 the records per batch).

Each case runs in a fresh process (a local Spark JVM, `local[2]`, driver and executor in one JVM with a
1 GiB heap): a full replay (`sum(length(value))`, columnar batches), twice; the second is measured. The
figures are the JVM's peak resident set (`VmHWM`) and its heap's peak use in the measured replay (the
heap pools' peaks, reset after the first replay). A further case keeps the x10 log and reads it with
`maxRowsPerBatch` x10 the default (40,960 rows per columnar batch).

Method: rounds interleave the cases (A, B, C, D, A, B, ...); each ratio is taken per round against the
x1 case, median with min and max.
Target: peak memory flat with the batch size (ratios near 1).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

ROWS = 400_000
PARTITIONS = 2
BATCH_BYTES = {"x1": 16 << 10, "x10": 160 << 10, "x100": 1600 << 10}
CASES = {"x1": ("x1", None), "x10": ("x10", None), "x100": ("x100", None), "x10_rows_x10": ("x10", 40_960)}


def write_log(root: Path, max_batch_bytes: int) -> dict:
    import numpy as np
    import pyarrow as pa

    from bench import _spark_bench as sb
    from seglog.indexer import Log
    from seglog.indexer.commit_log import CommitLog

    pool = sb._pool(5)
    cfg = {"segment.bytes": 64 << 20, "max.message.bytes": 4 << 20}
    logs = [Log.open(root / f"{sb.TOPIC}-{p}", cfg) for p in range(PARTITIONS)]
    try:
        for lo in range(0, ROWS, 100_000):
            g, keys, values = sb.global_rows(lo, min(ROWS, lo + 100_000), PARTITIONS, pool)
            part = g % PARTITIONS
            for p in range(PARTITIONS):
                idx = pa.array(np.nonzero(part == p)[0])
                logs[p].append_columns(values.take(idx), keys.take(idx), sb.TS0 + g[idx.to_numpy()],
                                       max_batch_bytes=max_batch_bytes)
        for log in logs:
            log.flush()
        CommitLog(root, sb.TOPIC).commit("bench", 0, {p: log.log_end_offset for p, log in enumerate(logs)})
        return {"log_bytes": sum(log.size_bytes() for log in logs)}
    finally:
        for log in logs:
            log.close()


def measure(root: str, max_rows: int | None) -> None:
    """In a fresh process: two full replays; prints the JVM's peak RSS and the measured replay's peak heap (MiB)."""
    from bench import _spark_bench as sb
    from seglog.sink.session import local_session

    spark = local_session("bench-reader-memory", driver_memory="1g")
    jvm = spark._jvm
    pid = jvm.java.lang.ProcessHandle.current().pid()

    def replay() -> int:
        r = spark.read.format("seglog").option("topic", sb.TOPIC)
        if max_rows is not None:
            r = r.option("maxRowsPerBatch", str(max_rows))
        return r.load(root).selectExpr("sum(length(value)) AS n").collect()[0].n

    total = replay()
    pools = [p for p in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
             if str(p.getType().toString()) == "Heap memory"]
    jvm.java.lang.System.gc()
    for p in pools:
        p.resetPeakUsage()
    if replay() != total or total != ROWS * sb.VALUE_BYTES:
        raise RuntimeError(f"bench reader_memory: the replay summed {total} bytes, not {ROWS * sb.VALUE_BYTES}")
    heap = sum(p.getPeakUsage().getUsed() for p in pools) / (1 << 20)
    status = Path(f"/proc/{pid}/status").read_text()
    hwm = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024
    spark.stop()
    print(json.dumps({"rss_mb": hwm, "heap_mb": heap}))


def _case(root: Path, max_rows: int | None) -> dict:
    args = [sys.executable, "-m", "bench.reader_memory", "--case", str(root)] + ([str(max_rows)] if max_rows else [])
    out = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"bench reader_memory case failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict:
    from bench import method

    rounds = 2 if quick else 3
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-reader-memory-"))
    try:
        logs = {name: write_log(work / name, size) for name, size in BATCH_BYTES.items()}
        got: dict[str, dict[str, list[float]]] = {c: {"rss_mb": [], "heap_mb": []} for c in CASES}
        for _ in range(rounds):
            for case, (log, max_rows) in CASES.items():
                fig = _case(work / log, max_rows)
                for k in fig:
                    got[case][k].append(fig[k])
        out = {
            "rows": ROWS, "partitions": PARTITIONS, "rounds": rounds,
            "max_batch_bytes": BATCH_BYTES, "logs": logs,
            "method": "each case in a fresh process (local[2], 1 GiB heap): two full replays, the second measured; "
                      "rounds interleave the cases; ratios per round against x1, median with min and max",
            "figures": got,
            "targets": {"peak memory": "flat with the batch size"},
        }
        for case in CASES:
            if case == "x1":
                continue
            for k in ("rss_mb", "heap_mb"):
                out[f"{k}_{case}_over_x1"] = method.ratio(got[case][k], got["x1"][k])
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--case":
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        measure(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None)
    else:
        print(json.dumps(run(quick="--quick" in sys.argv), indent=1))
