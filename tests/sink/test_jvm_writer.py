"""The JVM writer (io.seglog.spark.write) against the Python storage core, the reference.

For the same records and the same batch boundaries, the JVM's staged segments published into a
partition folder equal, byte for byte, what `Log` writes: through the copy path (every batch appended
by Log's own rules) and through the rename path (each staged segment becomes a segment as it is;
compared with a Python Log that rolls where the JVM rolled). Kafka's DumpLogSegments then finds every
batch valid and every index entry right."""
from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer.log import Log
from seglog.indexer.recovery_point import RECOVERY_POINT_FILE
from tests.oracles.staged import publish
from tests.sink.test_partitioner import KAFKA_VECTORS
from tests.sink.jvm_stage import STAGED_COLUMNS, run_staged_write, stage_config, staged_by_slot

pytestmark = pytest.mark.spark

HEADER_T = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _records(seed: int, n: int):
    rng = random.Random(seed)
    keys, values, ts, headers = [], [], [], []
    t = 1_700_000_000_000
    for i in range(n):
        keys.append(None if rng.random() < 0.1 else rng.randbytes(rng.randint(0, 40)))
        values.append(None if rng.random() < 0.05 else rng.randbytes(rng.choice([0, 10, 100, 300, 2000])))
        # CreateTime going backwards and forwards, with repeats (the time index's cases)
        t += rng.choice([-5000, -1, 0, 0, 1, 7, 1000, 200_000])
        ts.append(max(t, 0))
        headers.append(None if rng.random() < 0.7 else
                       [{"key": f"h{j}", "value": None if rng.random() < 0.3 else rng.randbytes(rng.randint(0, 20))}
                        for j in range(rng.randint(0, 3))])
    return keys, values, ts, headers


def _stage(spark, tmp: Path, cfg_map: dict, recs, slots: int = 1, rename_min_bytes: int | None = None):
    keys, values, ts, headers = recs
    n = len(values)
    from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                                   StructType)
    schema = StructType([StructField("_base", IntegerType()), StructField("_n", IntegerType()),
                         StructField("_p", IntegerType()), StructField("key", BinaryType()),
                         StructField("value", BinaryType()), StructField("ts", LongType()),
                         StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                                      StructField("value", BinaryType())])))])
    rows = [(0, slots, i % slots, keys[i], values[i], ts[i] * 1000,
             [(h["key"], h["value"]) for h in headers[i]] if headers[i] is not None else None) for i in range(n)]
    df = spark.createDataFrame(rows, schema).coalesce(1).select(*STAGED_COLUMNS)
    with Log.open(tmp / "cfg-0", cfg_map) as probe:
        cfg = probe.config
    shutil.rmtree(tmp / "cfg-0")
    more = {} if rename_min_bytes is None else {"rename_min_bytes": rename_min_bytes}
    reports = run_staged_write(df, tmp / "staging", [stage_config(cfg)] * slots, int(time.time() * 1000), **more)
    return staged_by_slot(reports)


def test_segments_to_be_renamed_in_are_reported_durable_and_others_not(spark, tmp_path):
    """The task forces (and reports `durable`) exactly the staged segments the publisher would rename
    in; `publish` then skips their index fsyncs, so a wrong flag would leave indexes unsynced."""
    recs = _records(7, 3000)
    staged = _stage(spark, tmp_path, {"segment.bytes": 64 << 10}, recs, rename_min_bytes=40 << 10)[0]
    sizes = [(s.size, s.durable) for s in staged]
    assert any(d for _, d in sizes) and any(not d for _, d in sizes), sizes   # both kinds in this input
    assert all(d == (size >= 40 << 10) for size, d in sizes), sizes


def _files(folder: Path) -> dict[str, bytes]:
    """The folder's files; the recovery point (indexer/recovery_point.py) names its own folder's topic,
    which differs between the two folders compared, so its entry is kept without the name."""
    out = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.startswith(".")}
    if RECOVERY_POINT_FILE in out:
        out[RECOVERY_POINT_FILE] = out[RECOVERY_POINT_FILE].replace(folder.name.rpartition("-")[0].encode() + b" ", b"")
    return out


def _python_log(folder: Path, cfg_map: dict, recs, batch_counts, *, roll_at=None) -> None:
    """Append the records batch by batch (one batch per call, as the JVM grouped them)."""
    keys, values, ts, headers = recs
    with Log.open(folder, cfg_map) as log:
        i = 0
        for b, c in enumerate(batch_counts):
            if roll_at is not None and b in roll_at:
                log.roll()
            sl = slice(i, i + c)
            hdr = headers[sl]
            log.append_columns(pa.array(values[sl], pa.binary()), keys=pa.array(keys[sl], pa.binary()),
                               timestamps=np.array(ts[sl], dtype=np.int64),
                               headers=None if all(h is None for h in hdr) else pa.array(hdr, HEADER_T),
                               max_batch_bytes=1 << 30)
            i += c
        assert i == len(values)
        if roll_at is not None:
            log.roll()


CONFIGS = [
    {},                                                           # Kafka's defaults: one segment
    {"segment.bytes": 40_000, "index.interval.bytes": 700},       # rolls by size, many index entries
    {"segment.bytes": 1 << 20, "index.interval.bytes": 64, "segment.index.bytes": 120,
     "max.message.bytes": 2500},                                  # the index fills up
    {"segment.ms": 600_000, "index.interval.bytes": 100, "max.message.bytes": 3000},     # rolls by time
]


@pytest.mark.parametrize("case", range(len(CONFIGS)))
def test_jvm_staged_segments_equal_the_python_log_byte_for_byte(spark, tmp_path, case):
    cfg_map = CONFIGS[case]
    recs = _records(case, 1500)
    staged = _stage(spark, tmp_path, cfg_map, recs)[0]
    meta = [s.meta() for s in staged]
    counts = [int(c) for m in meta for c in m["count"]]
    assert sum(counts) == 1500

    # copy path: every staged batch through Log's append rules == Log.append_columns of the same batches
    python_copy = tmp_path / "py-0"
    _python_log(python_copy, cfg_map, recs, counts)
    jvm_copy = tmp_path / "copy-0"
    with Log.open(jvm_copy, cfg_map) as log:
        publish(log, staged, rename_min_bytes=1 << 62)
        log.flush()
    assert _files(jvm_copy) == _files(python_copy)

    # rename path: the staged segments themselves, at their real bases == a Python Log rolled where
    # the JVM rolled (the JVM seals each staged segment; Python's roll seals the one it leaves)
    staged2 = _stage(spark, tmp_path / "again", cfg_map, recs)[0]
    firsts = np.cumsum([0] + [len(m) for m in meta])[:-1].tolist()
    python_rolled = tmp_path / "pyr-0"
    _python_log(python_rolled, cfg_map, recs, counts, roll_at=set(firsts[1:]))
    jvm_renamed = tmp_path / "ren-0"
    with Log.open(jvm_renamed, cfg_map) as log:
        publish(log, staged2, rename_min_bytes=0)
        log.roll()
    assert _files(jvm_renamed) == _files(python_rolled)
    if case == 1:
        assert len(staged) > 2, "the case must roll"
    if case == 2:
        assert len(staged) > 1, "the case must fill the index"
    with Log.open(jvm_renamed, cfg_map, readonly=True) as log:
        got = list(log.read())
    assert [r.value for r in got] == recs[1]
    assert [r.key for r in got] == recs[0]
    assert [r.offset for r in got] == list(range(1500))


def test_kafka_dump_log_segments_verifies_jvm_segments(spark, tmp_path):
    from tests.kafka_tools import dump_log_segments

    cfg_map = CONFIGS[1]
    recs = _records(7, 1200)
    staged = _stage(spark, tmp_path, cfg_map, recs)[0]
    folder = tmp_path / "t-0"
    with Log.open(folder, cfg_map) as log:
        # the first staged segment onto the (empty) active one, the rest renamed in
        publish(log, staged[:1], rename_min_bytes=1 << 62)
        publish(log, staged[1:], rename_min_bytes=0)
        log.roll()
        assert log.verify() == []
    logs = sorted(str(p) for p in folder.glob("*.log"))
    out = dump_log_segments(["--deep-iteration", "--files", ",".join(logs)])
    assert "isvalid: true" in out and "isvalid: false" not in out
    idx = sorted(str(p) for p in folder.glob("*.index")) + sorted(str(p) for p in folder.glob("*.timeindex"))
    out = dump_log_segments(["--verify-index-only", "--deep-iteration", "--files", ",".join(idx)])
    assert "Mismatches" not in out and "mismatch" not in out.lower(), out


def test_the_jars_murmur2_partition_is_kafkas_for_every_key(spark):
    """The shipped jar's UDF (kafka-clients' Utils.murmur2, no javac) against Kafka's published
    vectors and the Python partitioner, for random keys of every length and several counts."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType

    from tests.oracles.partitioner import partition_for_key
    from tests.sink.jvm_stage import MURMUR2_CLASS, MURMUR2_UDF

    spark.udf.registerJavaFunction(MURMUR2_UDF, MURMUR2_CLASS, IntegerType())
    rng = random.Random(5)
    keys = [rng.randbytes(rng.randint(0, 70)) for _ in range(3000)] + [b"", b"a", b"ab", b"abc", b"abcd"]
    df = spark.createDataFrame([(k,) for k in keys], "key binary")
    for n in (1, 3, 4, 32, 1000):
        got = [r[0] for r in df.select(F.expr(f"{MURMUR2_UDF}(key, {n})")).collect()]
        assert got == [partition_for_key(k, n) for k in keys]
    # Kafka's UtilsTest vectors: partition = toPositive(murmur2(key)) % n
    for key, h in KAFKA_VECTORS.items():
        row = spark.sql(f"SELECT {MURMUR2_UDF}(CAST('{key}' AS BINARY), 1000000007) AS p").first()
        assert row.p == (h & 0x7FFFFFFF) % 1000000007
    assert spark.sql(f"SELECT {MURMUR2_UDF}(CAST(NULL AS BINARY), 4) AS p").first().p is None
