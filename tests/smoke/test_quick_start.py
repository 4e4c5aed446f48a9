"""README's quick start on the running Spark line: the smoke profile (`-m smoke`) that scripts/spark-line.sh
runs on every Spark line seglog supports (seglog.jvm.JARS; tests/lines drives it), as the primary line runs it
with the whole suite. Each step returns exactly the rows it wrote."""
from __future__ import annotations

import json
import os

import pytest

from seglog.sink import SegmentLogSink

pytestmark = [pytest.mark.spark, pytest.mark.smoke]
T0 = 1_700_000_000_000


def frame(spark, n, prefix, t0=T0):
    return spark.range(n).selectExpr(f"CAST(CONCAT('{prefix}', CAST(id AS STRING)) AS BINARY) AS key",
                                     "CAST(CAST(id AS STRING) AS BINARY) AS value",
                                     f"timestamp_millis({t0} + id) AS timestamp")


def keys(spark, root, topic, **options):
    r = spark.read.format("seglog").option("topic", topic)
    for k, v in options.items():
        r = r.option(k, str(v))
    return sorted(bytes(row.key) for row in r.load(root).select("key").collect())


def expected(prefix, ids):
    return sorted(f"{prefix}{i}".encode() for i in ids)


def json_source(folder, files, rows):
    """`files` JSON files of `rows` rows each, ordered by modification time (the file source's order)."""
    folder.mkdir()
    for f in range(files):
        path = folder / f"part-{f}.json"
        path.write_text("".join(json.dumps({"k": f"s{f}-{j}"}) + "\n" for j in range(rows)))
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))
    return str(folder)


def test_readme_quick_start_returns_exactly_the_rows_written(spark, tmp_path):
    root = str(tmp_path / "log")
    # Writes: a new topic with its partitions and config, then a versioned write run twice (the re-run is skipped)
    (frame(spark, 100, "a").write.format("seglog").mode("append")
     .option("topic", "events").option("partitions", "8").option("segment.bytes", str(256 << 20)).save(root))
    for _ in range(2):
        (frame(spark, 50, "b", T0 + 1000).write.format("seglog").mode("append").option("topic", "events")
         .option("txnAppId", "nightly-load").option("txnVersion", "1").save(root))
    assert keys(spark, root, "events") == sorted(expected("a", range(100)) + expected("b", range(50)))

    # a stream: each micro-batch once, through the query's checkpoint
    src = json_source(tmp_path / "src", 3, 10)
    stream = spark.readStream.schema("k string").option("maxFilesPerTrigger", 1).json(src)
    (stream.selectExpr("CAST(k AS BINARY) AS key", "CAST('v' AS BINARY) AS value")
     .writeStream.format("seglog").option("topic", "stream").option("partitions", "2")
     .option("checkpointLocation", str(tmp_path / "ckpt1")).trigger(availableNow=True).start(root)).awaitTermination()
    # the foreachBatch sink
    (stream.selectExpr("CAST(k AS BINARY) AS key", "CAST('v' AS BINARY) AS value")
     .writeStream.foreachBatch(SegmentLogSink(root, topic="sinked", partitions=2, config={"retention.ms": 7 * 86_400_000}))
     .option("checkpointLocation", str(tmp_path / "ckpt2")).trigger(availableNow=True).start()).awaitTermination()
    written = sorted(f"s{f}-{j}".encode() for f in range(3) for j in range(10))
    assert keys(spark, root, "stream") == written
    assert keys(spark, root, "sinked") == written

    # Replay from a timestamp: each partition from its first record at T0 + 50 or later (a's second half, all of b)
    replayed = sorted(expected("a", range(50, 100)) + expected("b", range(50)))
    assert keys(spark, root, "events", startingTimestamp=T0 + 50) == replayed
    # and as a stream, AvailableNow
    got = []
    (spark.readStream.format("seglog").option("topic", "events").option("startingTimestamp", str(T0 + 50)).load(root)
     .writeStream.foreachBatch(lambda df, _: got.extend(bytes(r.key) for r in df.select("key").collect()))
     .option("checkpointLocation", str(tmp_path / "ckpt3")).trigger(availableNow=True).start()).awaitTermination()
    assert sorted(got) == replayed
