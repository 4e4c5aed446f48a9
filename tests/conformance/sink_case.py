"""The conformance corpus's case the JVM writer makes (tests/conformance/generate.py): `jvm-sink`.

`seglog.sink.SegmentLogSink` in a local Spark session, two deliveries of one input partition each, on an
lz4 topic with `rename_min_bytes=1`: each delivery's segment is staged by the connector jar
(io.seglog.spark.write.SegmentStager: batches, compression, both indexes, the seal) and renamed in whole,
so the partition's segments, batches and indexes are the JVM writer's. The model: the rows in delivery
order at offsets 0, 1, 2, ...; one segment per delivery, the first sealed by the second's roll.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.conformance.generate import (CORPUS, PART, batches_of, check_files, copy_partition, write_case,
                                        write_commit, write_topic)
from tests.conformance.model import Model, Rec, expected

CASE = "jvm-sink"
CONFIG = {"compression.type": "lz4", "index.interval.bytes": 100, "max.message.bytes": 900}   # several batches a segment


def generate(only: set[str] | None) -> None:
    if only and CASE not in only:
        return
    from pyspark.sql.types import ArrayType, BinaryType, LongType, StringType, StructField, StructType

    from seglog.sink.segment_log_sink import SegmentLogSink
    from seglog.sink.session import local_session

    started = time.monotonic()
    deliveries = [[r for batch in seg for r in batch] for seg in batches_of(31, [[40], [45]])]
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                         StructField("ts", LongType()),
                         StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                                      StructField("value", BinaryType())])))])
    spark = local_session("seglog-conformance", cores=2)
    try:
        with tempfile.TemporaryDirectory(prefix="conformance-sink-") as tmp:
            sink = SegmentLogSink(tmp, writer_id="w0", topic="t", partitions=1, config=CONFIG, rename_min_bytes=1)
            for batch_id, rows in enumerate(deliveries):
                data = [(k, v, ts, [(hk, hv) for hk, hv in h] or None) for ts, k, v, h in rows]
                df = (spark.createDataFrame(spark.sparkContext.parallelize(data, 1), schema)
                      .selectExpr("key", "value", "timestamp_millis(ts) AS timestamp", "headers"))
                sink(df, batch_id)
                # renamed in: the JVM's staged segment, one new segment per delivery
                assert len(list((Path(tmp) / PART).glob("*.log"))) == batch_id + 1
            root = CORPUS / CASE
            shutil.rmtree(root, ignore_errors=True)
            copy_partition(Path(tmp) / PART, root / PART)
    finally:
        spark.stop()
    recs, bases = [], []
    for rows in deliveries:
        bases.append(len(recs))
        recs += [Rec(len(recs) + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(rows)]
    model = Model(recs, bases, [True, False], len(recs), len(recs))
    write_commit(root, len(recs))          # the sink's own commit, its time pinned
    write_topic(root, CONFIG)
    check_files(root, model)
    write_case(expected(model, CASE, "jvm-writer",
                        "The sink (SegmentLogSink) through the connector jar on an lz4 topic: two deliveries, each "
                        "staged by the JVM writer (batches, lz4, both indexes, the seal) and renamed in as a segment; "
                        "the first sealed by the second's roll."))
    print(f"{CASE}: {time.monotonic() - started:.1f} s", file=sys.stderr)
