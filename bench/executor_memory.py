"""Peak executor memory of one sink write, at 1x and at 10x the rows (issue 13: flat with batch size).

Local mode runs the executors inside the one JVM, so each measurement is its own process, with the
same fixed heap cap (`spark.driver.memory`). The input is generated (`spark.range`, not cached), so only
the write holds memory. The figure is the peak of the JVM's *heap used after GC* while the write runs,
from Java Flight Recorder's GC heap summaries (started with `jcmd` right before the write, dumped right
after): it bounds what the write keeps alive, where a plain peak of heap used would count the garbage
that the next collection frees and grow with the allocation rate, not with what is held.

Method (bench/method.py): every process warms up with a small write first; rounds alternate the sizes
(1x, 10x, 10x, 1x, ...); the ratio 10x/1x is per round, reported as the median with min and max, with
each process's peak RSS beside it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import method

HEAP = "1g"              # the same cap for both sizes: a write whose memory grew with rows would fail at 10x
WARMUP_ROWS = 100_000


def _tool(name: str) -> str:
    """A JDK tool beside the `java` that Spark runs (JAVA_HOME first, as Spark's launcher does)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("no java on PATH and no JAVA_HOME: the flight recorder needs the JDK's tools")
    return str(Path(os.path.realpath(java)).parent / name)


def _child(rows: int, out_dir: Path) -> dict:
    """In a fresh process: warm up, record GC heap summaries over one write of `rows` rows."""
    from bench.sink import _frame
    from seglog.sink import SegmentLogSink
    from seglog.sink.session import local_session

    spark = local_session("seglog-bench-memory", driver_memory=HEAP)
    jvm = spark.sparkContext._jvm
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    SegmentLogSink(str(out_dir / "warm"), writer_id="bench", topic="m", partitions=4)(_frame(spark, WARMUP_ROWS, 4), 0)
    jvm.java.lang.System.gc()
    baseline = int(jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed())
    jfr = out_dir / "write.jfr"
    subprocess.run([_tool("jcmd"), str(pid), "JFR.start", "name=sinkmem", "settings=default"],
                   check=True, capture_output=True)
    t0 = time.perf_counter()
    SegmentLogSink(str(out_dir / "log"), writer_id="bench", topic="m", partitions=4)(_frame(spark, rows, 4), 0)
    seconds = time.perf_counter() - t0
    subprocess.run([_tool("jcmd"), str(pid), "JFR.dump", "name=sinkmem", f"filename={jfr}"],
                   check=True, capture_output=True)
    status = Path(f"/proc/{pid}/status").read_text() if Path(f"/proc/{pid}/status").exists() else ""
    hwm = [int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")]
    spark.stop()
    return {"rows": rows, "seconds": seconds, "baseline_heap_mb": baseline / 2**20,
            "peak_rss_mb": hwm[0] / 1024 if hwm else None, "jfr": str(jfr)}


def _after_gc_peak(jfr: str) -> tuple[float, int]:
    """Peak heap used after a collection (MB) and the number of collections, from a recording."""
    text = subprocess.run([_tool("jfr"), "print", "--json", "--events", "jdk.GCHeapSummary", jfr],
                          check=True, capture_output=True, text=True).stdout
    events = json.loads(text)["recording"]["events"]
    after = [e["values"]["heapUsed"] for e in events if e["values"]["when"] == "After GC"]
    if not after:
        raise RuntimeError(f"{jfr}: no collection ran during the write; lower HEAP to measure it")
    return max(after) / 2**20, len(after)


def _measure(rows: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-memory-"))
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.executor_memory", "--child", str(rows), str(work)],
                              check=True, capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result["peak_heap_after_gc_mb"], result["collections"] = _after_gc_peak(result.pop("jfr"))
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(quick: bool = False) -> dict:
    base = 200_000 if quick else 1_000_000
    rounds = 2 if quick else 3
    runs: dict[str, list[dict]] = {"1x": [], "10x": []}
    for r in range(rounds):
        order = ("1x", "10x") if r % 2 == 0 else ("10x", "1x")
        for name in order:
            runs[name].append(_measure(base * (10 if name == "10x" else 1)))
    peak = {name: [m["peak_heap_after_gc_mb"] for m in ms] for name, ms in runs.items()}
    return {"method": "a fresh JVM per measurement (heap cap " + HEAP + "), warmed up by a "
                      f"{WARMUP_ROWS}-row write; peak heap used after GC during one write (Java Flight Recorder); "
                      "rounds alternate 1x and 10x; median of per-round ratios with min and max",
            "input": "generated by spark.range (not cached), 16-byte keys, 200-byte values, 4 input tasks, "
                     "4 log partitions",
            "rows_1x": base, "rows_10x": base * 10, "runs": runs,
            "peak_heap_after_gc_10x_over_1x": method.ratio(peak["10x"], peak["1x"]),
            "peak_rss_10x_over_1x": method.ratio([m["peak_rss_mb"] for m in runs["10x"]],
                                                 [m["peak_rss_mb"] for m in runs["1x"]])}


if __name__ == "__main__":
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        print(json.dumps(_child(int(sys.argv[i + 1]), Path(sys.argv[i + 2]))))
    else:
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
