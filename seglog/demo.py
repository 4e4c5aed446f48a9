"""`seglog demo`: the whole path on an embedded default, each step printing what it did.

1. a local Spark session (local[2]);
2. a Structured Streaming query (file source, three micro-batches of events spread over the last
   three hours) written by SegmentLogSink into <root>/events-<p>;
3. the sidecar run once, as a real process (`seglog compactor run --once`): seal, roll, retention;
4. a replay from a timestamp with the `seglog` data source, checked against the input;
5. where the log is, and what to try next (`seglog describe`, `seglog dump`).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

TOPIC = "events"
PARTITIONS = 4
ROWS_PER_FILE = 20_000


def _say(step: str, text: str) -> None:
    print(f"[{step}] {text}", flush=True)


def _write_input(folder: Path, now_ms: int) -> list[int]:
    """Three JSON-lines files, one per micro-batch, with event times in the last three hours."""
    import pyarrow.json  # noqa: F401  (ensures the module is importable before Spark starts)

    folder.mkdir(parents=True, exist_ok=True)
    first_ts = []
    for f in range(3):
        start = now_ms - (3 - f) * 3_600_000
        first_ts.append(start)
        path = folder / f"part-{f}.json"
        with open(path, "w", encoding="utf-8") as fh:
            for i in range(ROWS_PER_FILE):
                ts = start + i * (3_600_000 // ROWS_PER_FILE)
                fh.write(json.dumps({"user": f"user-{(f * ROWS_PER_FILE + i) % 997}",
                                     "action": ("view", "click", "buy")[i % 3],
                                     "ts": datetime.fromtimestamp(ts / 1000, timezone.utc).isoformat()}) + "\n")
        os.utime(path, (time.time() - 10 + f, time.time() - 10 + f))  # the file source orders by mtime
    return first_ts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="seglog demo", description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="where to put the log (default: a new temporary folder)")
    args = parser.parse_args(argv)
    base = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="seglog-demo-"))
    root, work = base / "log", base / "work"
    started = time.time()

    _say("spark", "starting a local Spark session (local[2]) ...")
    from seglog.sink.session import local_session

    spark = local_session("seglog-demo")
    from pyspark.sql import functions as F

    from seglog.sink import SegmentLogSink
    from seglog.source import register

    register(spark)
    _say("spark", f"ready in {time.time() - started:.1f} s (Spark {spark.version})")

    now_ms = int(time.time() * 1000)
    _write_input(work / "input", now_ms)
    _say("input", f"wrote 3 files of {ROWS_PER_FILE:,} events each (event times over the last 3 hours) "
                  f"to {work / 'input'}")

    t0 = time.time()
    stream = (spark.readStream.schema("user STRING, action STRING, ts TIMESTAMP")
              .option("maxFilesPerTrigger", 1).json(str(work / "input"))
              .select(F.col("user").alias("key"), F.to_json(F.struct("user", "action", "ts")).alias("value"),
                      F.col("ts").alias("timestamp")))
    query = (stream.writeStream
             .foreachBatch(SegmentLogSink(str(root), topic=TOPIC, partitions=PARTITIONS,
                                          config={"segment.bytes": 256 * 1024, "segment.ms": 3_600_000,
                                                  "retention.ms": 7 * 86_400_000}))
             .option("checkpointLocation", str(work / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    batches = len(query.recentProgress)
    from seglog.indexer import LogRoot
    from seglog.indexer.commit_log import CommitLog

    ends = CommitLog(root, TOPIC).end_offsets()
    _say("sink", f"streamed {batches} micro-batches into {root}: {sum(ends.values()):,} records, "
                 f"committed end offsets per partition {dict(sorted(ends.items()))} ({time.time() - t0:.1f} s)")

    t0 = time.time()
    conf_path = work / "compactor.yaml"
    conf_path.write_text(f"root: {root}\nlog:\n  retention.ms: {7 * 86_400_000}\n"
                         f"http: {{host: 127.0.0.1, port: 0}}\n")
    proc = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--config", str(conf_path), "--once"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        _say("sidecar", f"failed with exit code {proc.returncode}")
        return 1
    lr = LogRoot(root)
    states: dict[str, int] = {}
    for topic, p in lr.partitions(TOPIC):
        from seglog.indexer import Log

        with Log.open(lr.partition_path(topic, p), readonly=True) as log:
            for seg in log.segments():
                states[seg.state] = states.get(seg.state, 0) + 1
    _say("sidecar", f"ran one pass as a separate process (exit 0, {time.time() - t0:.1f} s): segments now "
                    + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))

    t0 = time.time()
    replay_from = now_ms - 90 * 60_000
    replay = (spark.read.format("seglog").option("topic", TOPIC)
              .option("startingTimestamp", str(replay_from)).load(str(root)))
    count = replay.count()
    first = (replay.orderBy("timestamp", "partition", "offset").limit(3)
             .select("partition", "offset", "timestamp", F.col("key").cast("string").alias("key"),
                     F.col("value").cast("string").alias("value")).collect())
    expected = sum(1 for f in range(3) for i in range(ROWS_PER_FILE)
                   if now_ms - (3 - f) * 3_600_000 + i * (3_600_000 // ROWS_PER_FILE) >= replay_from)
    when = datetime.fromtimestamp(replay_from / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    _say("replay", f"spark.read.format('seglog').option('startingTimestamp', {replay_from}) ({when}): "
                   f"{count:,} records (expected {expected:,}) in {time.time() - t0:.1f} s; the first ones:")
    for row in first:
        print(f"         partition {row.partition} offset {row.offset} {row.timestamp} key={row.key} value={row.value}")
    spark.stop()
    seg_file = next(iter(sorted((root / f"{TOPIC}-0").glob("*.log"))), None)
    print()
    _say("done", f"in {time.time() - started:.1f} s. The log is in {root}. Try next:")
    print(f"         seglog describe {root}")
    if seg_file is not None:
        print(f"         seglog dump {seg_file} --print-data | head")
    print(f"         seglog offsets-for-times {root} --topic {TOPIC} --time {replay_from}")
    return 0 if count == expected else 1


if __name__ == "__main__":
    sys.exit(main())
