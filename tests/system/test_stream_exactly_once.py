"""End to end exactly once: `readStream.format("seglog") -> transform -> foreachBatch(SegmentLogSink)` in a
subprocess (driver, Spark JVM and workers in one process group), killed with SIGKILL at random moments
and restarted from its checkpoint, writes every input record exactly once. Prints the kills survived."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from seglog.indexer.topics import create_topic

pytestmark = [pytest.mark.slow, pytest.mark.spark]
KILLS = int(os.environ.get("SEGLOG_STREAM_KILLS", "4"))
ROWS_PER_PARTITION = 1500
CONFIG = {"segment.bytes": 16384, "index.interval.bytes": 1024}

PIPELINE = textwrap.dedent("""
    import sys
    from pyspark.sql import functions as F
    from seglog.sink.session import local_session
    from seglog.sink import SegmentLogSink
    from seglog.source import register
    src, out, checkpoint = sys.argv[1:4]
    spark = local_session("seglog-e2e", cores=2)
    register(spark)
    sink = SegmentLogSink(out, topic="out", partitions=3, config={"segment.bytes": 16384})
    stream = (spark.readStream.format("seglog").option("topic", "in").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 400).load(src)
              .select("key", F.concat(F.col("value"), F.lit(b"!")).alias("value"), "timestamp"))

    def each(df, batch_id):
        sink(df, batch_id)
        print("batch", batch_id, flush=True)

    q = stream.writeStream.foreachBatch(each).option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    print("started", flush=True)
    q.awaitTermination()
    print("done", flush=True)
""")


def write_input(root):
    create_topic(root, "in", 2, CONFIG)
    ends = {}
    for p in range(2):
        with Log.open(root / f"in-{p}", CONFIG, outside_commit_log=True) as log:
            values = pa.array([b"in-%d-%06d" % (p, i) for i in range(ROWS_PER_PARTITION)], pa.binary())
            keys = pa.array([b"k%d" % (i % 17) for i in range(ROWS_PER_PARTITION)], pa.binary())
            log.append_columns(values, keys=keys, timestamps=1_700_000_000_000 + np.arange(ROWS_PER_PARTITION))
            log.flush()
            ends[p] = log.log_end_offset
    CommitLog(root, "in").commit("input", 0, ends)


def run(src, out, ckpt, kill_after: float | None):
    """One run of the pipeline; with `kill_after`, SIGKILL its whole process group (driver, JVM,
    workers) that long after its first batch was written, unless it finished first. Returns (killed, lines)."""
    import threading

    err = open(ckpt.parent / "stderr.log", "w")      # one run's: a run that ends without "done" says why
    proc = subprocess.Popen([sys.executable, "-c", PIPELINE, str(src), str(out), str(ckpt)],
                            stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    err.close()
    lines: list[str] = []
    started = threading.Event()      # set at this run's first committed batch: a kill then lands mid-stream

    def pump():
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("batch") or line.startswith("done"):
                started.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        if kill_after is not None and started.wait(300):
            time.sleep(kill_after)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                reader.join(10)
                return True, lines
        proc.wait(timeout=600)
        reader.join(10)
        return False, lines
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def stderr_tail(path, lines=60) -> str:
    """The end of a run's stderr, its Python traceback and the JVM's error lines first."""
    text = path.read_text(errors="replace").splitlines()
    keep = [x for x in text if "Error" in x or "Exception" in x or x.startswith(("Traceback", "  File"))]
    return "\n".join(keep[-lines:] or text[-lines:])


def test_pipeline_killed_at_random_moments_writes_every_record_once(tmp_path):
    src, out, ckpt = tmp_path / "src", tmp_path / "out", tmp_path / "ckpt"
    write_input(src)
    rng = random.Random(7)
    kills = 0
    batches_at_kill = []
    for _ in range(KILLS):
        killed, lines = run(src, out, ckpt, kill_after=rng.uniform(0.0, 1.5))
        kills += killed
        state = CommitLog(out, "out").latest()
        batches_at_kill.append(-1 if state is None else state.batch_id)
    killed, lines = run(src, out, ckpt, kill_after=None)
    assert not killed and lines[-1] == "done", (lines, stderr_tail(tmp_path / "stderr.log"))
    state = CommitLog(out, "out").latest()
    assert state is not None
    values = []
    for p, end in state.end_offsets.items():
        with Log.open(out / f"out-{p}", readonly=True) as log:
            values += [r.value for r in log.read(None, end)]
    want = [b"in-%d-%06d!" % (p, i) for p in range(2) for i in range(ROWS_PER_PARTITION)]
    assert len(values) == len(want)                  # nothing twice...
    assert sorted(values) == sorted(want)            # ...nothing lost
    print(f"stream exactly once: {kills} kills survived, {len(values)} records written once")
    # the kills landed mid-stream: batches were committed before and after them
    assert kills >= KILLS // 2 and any(0 <= b < state.batch_id for b in batches_at_kill), batches_at_kill
