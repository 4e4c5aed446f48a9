"""The sink on compressed topics and LogAppendTime topics, against the Python `Log` as the reference.

Per codec, the same input goes through the sink twice (staged segments renamed in, and copied onto
the active segment) and through `Log.append_columns` with the same batch boundaries. Java's and
Python's compressors need not give the same bytes, so the logs are compared on what must be equal:
records, offsets, timestamps, headers, batch boundaries and codecs; each log's offset and time
indexes against a brute-force model of the one index rule (docs/spec.md §2.3-2.4) applied to the
batch sizes as written; Kafka's DumpLogSegments; and the JVM reader against `Log.read`.
Uncompressed, the copy path is also byte for byte the Python log."""
from __future__ import annotations

import random
import struct
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer.codec.compression import CODEC_IDS
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from seglog.indexer.codec.records import LOG_APPEND_TIME, scan_batches
from seglog.sink.segment_log_sink import SegmentLogSink

pytestmark = pytest.mark.spark

HEADER_T = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
CONFIG = {"segment.bytes": 60_000, "index.interval.bytes": 900}
ROWS = 2400


def _records(seed: int, n: int):
    """Compressible values (words) with random bytes mixed in; keys, CreateTime going both ways, headers."""
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"seglog", b"kafka"]
    rows = []
    t = 1_700_000_000_000
    for i in range(n):
        key = None if rng.random() < 0.1 else f"k{rng.randint(0, 500)}".encode()
        value = None if rng.random() < 0.05 else (b" ".join(rng.choice(words) for _ in range(rng.randint(0, 60)))
                                                   + rng.randbytes(rng.choice([0, 0, 8, 40])))
        t += rng.choice([-5000, -1, 0, 0, 1, 7, 1000, 200_000])
        headers = (None if rng.random() < 0.7 else
                   [(f"h{j}", None if rng.random() < 0.3 else rng.randbytes(rng.randint(0, 12)))
                    for j in range(rng.randint(0, 3))])
        rows.append((key, value, max(t, 0), headers))
    return rows


def _df(spark, rows, slices: int = 2):
    """The rows in order, in `slices` input partitions of consecutive rows (task order = row order)."""
    from pyspark.sql.types import (ArrayType, BinaryType, LongType, StringType, StructField, StructType)

    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                         StructField("ts", LongType()),
                         StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                                      StructField("value", BinaryType())])))])
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, slices), schema)
    return df.selectExpr("key", "value", "timestamp_millis(ts) AS timestamp", "headers")


def _segments(folder: Path):
    """[(base, .log bytes, scan)] of the partition folder, in offset order."""
    out = []
    for f in sorted(folder.glob("*.log"), key=lambda p: int(p.stem)):
        data = f.read_bytes()
        scan = scan_batches(data, 0)
        assert scan.error is None, (f, scan.error)
        out.append((int(f.stem), data, scan))
    return out


def _batches(folder: Path):
    """Every batch's (base offset, count, first timestamp, max timestamp, codec, timestamp type)."""
    return [(h.base_offset, h.record_count, h.base_timestamp, h.max_timestamp, h.attributes & 7, (h.attributes >> 3) & 1)
            for _, _, scan in _segments(folder) for h in scan.headers]


def _model_indexes(base: int, data: bytes, scan, interval: int) -> tuple[bytes, bytes]:
    """The .index and .timeindex a sealed segment must hold, by the rule (brute force, batch by batch):
    an offset entry (batch last offset, batch position) when more than index.interval.bytes were
    written since the last one, with a time entry (largest timestamp so far, last offset of the first
    batch that reached it) if it grew and is not the all-zero entry; the seal entry at the end."""
    idx, tidx = [], []
    since, max_ts, off_of_max = 0, -1, -1
    pos = scan.positions.tolist() + [len(data)]
    for i, h in enumerate(scan.headers):
        last = h.base_offset + h.last_offset_delta - base
        if h.max_timestamp > max_ts:
            max_ts, off_of_max = h.max_timestamp, last
        if since > interval:
            idx.append(struct.pack(">ii", last, pos[i]))
            if max_ts >= 0 and (not tidx or max_ts > tidx[-1][0]) and not (max_ts == 0 and off_of_max == 0):
                tidx.append((max_ts, off_of_max))
            since = 0
        since += pos[i + 1] - pos[i]
    if max_ts >= 0 and (not tidx or max_ts > tidx[-1][0]):
        tidx.append((max_ts, off_of_max))
    return b"".join(idx), b"".join(struct.pack(">qi", t, o) for t, o in tidx)


def _check_indexes(folder: Path, interval: int) -> int:
    segs = _segments(folder)
    for base, data, scan in segs:
        want_idx, want_tidx = _model_indexes(base, data, scan, interval)
        assert (folder / f"{base:020d}.index").read_bytes() == want_idx, (folder, base)
        assert (folder / f"{base:020d}.timeindex").read_bytes() == want_tidx, (folder, base)
    return len(segs)


def _dump_clean(folder: Path) -> None:
    from tests.kafka_tools import dump_log_segments

    logs = sorted(str(p) for p in folder.glob("*.log"))
    out = dump_log_segments(["--deep-iteration", "--files", ",".join(logs)])
    assert "isvalid: true" in out and "isvalid: false" not in out, out[-2000:]
    idx = sorted(str(p) for p in folder.glob("*.index")) + sorted(str(p) for p in folder.glob("*.timeindex"))
    out = dump_log_segments(["--verify-index-only", "--deep-iteration", "--files", ",".join(idx)])
    assert "mismatch" not in out.lower(), out[-2000:]


def _rows(records):
    return [(r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in r.headers)) for r in records]


def _spark_rows(spark, root: Path, topic: str):
    df = (spark.read.format("seglog").option("topic", topic).option("includeHeaders", "true").load(str(root))
          .selectExpr("offset", "unix_millis(timestamp) AS ts", "key", "value", "headers").orderBy("offset"))
    return [(r["offset"], r["ts"], r["key"], r["value"],
             tuple((h["key"], h["value"]) for h in (r["headers"] or []))) for r in df.collect()]


def _python_log(folder: Path, cfg: dict, rows, counts) -> None:
    """`Log.append_columns`, one batch per call with the sink's batch boundaries, then sealed."""
    with Log.open(folder, cfg, outside_commit_log=True) as log:
        i = 0
        for c in counts:
            part = rows[i:i + c]
            hdr = [None if h is None else [{"key": k, "value": v} for k, v in h] for _, _, _, h in part]
            log.append_columns(pa.array([r[1] for r in part], pa.binary()),
                               keys=pa.array([r[0] for r in part], pa.binary()),
                               timestamps=np.array([r[2] for r in part], dtype=np.int64),
                               headers=None if all(h is None for h in hdr) else pa.array(hdr, HEADER_T),
                               max_batch_bytes=1 << 30)
            i += c
        assert i == len(rows)
        log.roll()
        log.flush()


def _seal(folder: Path, cfg: dict) -> None:
    with Log.open(folder, cfg, outside_commit_log=True) as log:
        assert log.verify() == []
        log.roll()
        log.flush()


@pytest.mark.parametrize("codec", ["uncompressed", "gzip", "snappy", "lz4", "zstd"])
def test_sink_on_a_compressed_topic_equals_the_python_log(spark, tmp_path, codec):
    cfg = dict(CONFIG, **{"compression.type": codec})
    rows = _records(CODEC_IDS.get(codec, 0), ROWS)
    df = _df(spark, rows)
    copied, renamed, python = tmp_path / "copy", tmp_path / "rename", tmp_path / "py"
    copy_sink = SegmentLogSink(str(copied), writer_id="w0", topic="t", partitions=1, config=cfg, rename_min_bytes=1 << 62)
    copy_sink(df, 0)
    sink = SegmentLogSink(str(renamed), writer_id="w0", topic="t", partitions=1, config=cfg, rename_min_bytes=1)
    sink(df, 0)
    # the rename path was taken: each of the 2 tasks' staged segments went in as a segment of its own
    assert df.rdd.getNumPartitions() == 2 and len(list((renamed / "t-0").glob("*.log"))) >= 2
    for folder in (copied, renamed):
        with Log.open(folder / "t-0", cfg, readonly=True) as log:
            assert _spark_rows(spark, folder, "t") == _rows(log.read())
    _seal(copied / "t-0", cfg)
    _seal(renamed / "t-0", cfg)

    batches = _batches(copied / "t-0")
    assert _batches(renamed / "t-0") == batches
    _python_log(python, cfg, rows, [b[1] for b in batches])
    assert _batches(python) == batches
    assert {b[4] for b in batches} == {CODEC_IDS.get(codec, 0)}
    assert len(batches) > 4

    want = [(i, r[2], r[0], r[1], tuple(r[3] or ())) for i, r in enumerate(rows)]
    for folder in (copied / "t-0", renamed / "t-0", python):
        with Log.open(folder, cfg, readonly=True) as log:
            assert _rows(log.read()) == want, folder
        _check_indexes(folder, cfg["index.interval.bytes"])
        _dump_clean(folder)
    assert len(list((copied / "t-0").glob("*.log"))) > 1, "the copy path must roll"
    if codec == "uncompressed":
        files = {p.name: p.read_bytes() for p in python.iterdir() if p.suffix in (".log", ".index", ".timeindex")}
        assert {p.name: p.read_bytes() for p in (copied / "t-0").iterdir() if p.name in files} == files


def test_log_append_time_is_one_time_per_delivery(spark, tmp_path):
    """Every task stamps the driver's time for the delivery: one timestamp for all its records, the
    batches' max timestamp, within the sink call; the next delivery's is not earlier."""
    cfg = {"message.timestamp.type": "LogAppendTime"}
    root = tmp_path / "root"
    sink = SegmentLogSink(str(root), writer_id="w0", topic="t", partitions=2, config=cfg)
    stamps = []
    for batch_id in range(2):
        # 6 input partitions (6 write tasks), each pausing 40 ms at its first row: rows are encoded at
        # different times
        df = (spark.range(batch_id * 3000, (batch_id + 1) * 3000, 1, 6)
              .where("reflect('java.lang.Thread', 'sleep', CAST(IF(id % 500 = 0, 40, 0) AS BIGINT)) IS NOT NULL")
              .selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST(concat('v', id) AS BINARY) AS value",
                          "TIMESTAMP_MILLIS(1000) AS timestamp"))
        starts = {p: CommitLog(root, "t").end_offsets().get(p, 0) for p in range(2)}   # this delivery's first offsets
        before = int(time.time() * 1000)
        sink(df, batch_id)
        after = int(time.time() * 1000)
        delivery, maxima = set(), set()
        for p in range(2):
            folder = root / f"t-{p}"
            with Log.open(folder, cfg, readonly=True) as log:
                delivery |= {r.timestamp for r in log.read(starts[p])}
            for _, _, scan in _segments(folder):
                assert all((h.attributes >> 3) & 1 == LOG_APPEND_TIME for h in scan.headers)
                maxima |= {h.max_timestamp for h in scan.headers if h.base_offset >= starts[p]}
        assert len(delivery) == 1, delivery
        assert maxima == delivery
        (stamp,) = delivery
        assert before <= stamp <= after
        stamps.append(stamp)
    assert stamps[1] >= stamps[0]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_incompressible_records_that_fit_are_never_refused(spark, tmp_path, codec):
    """A 1 MiB batch of random bytes grows when compressed (snappy's framing by ~150 bytes, more than
    the 12 bytes between the 1 MiB batch budget and max.message.bytes' default): batches are grouped
    below the limit by the codec's headroom, in `Log` and the JVM writer alike, so nothing is refused."""
    cfg = {"compression.type": codec}
    rng = random.Random(3)
    values = [rng.randbytes(1000) for _ in range(3000)]
    with Log.open(tmp_path / "py" / "t-0", cfg, outside_commit_log=True) as log:
        log.append_columns(pa.array(values, pa.binary()))
    df = spark.createDataFrame(spark.sparkContext.parallelize([(v,) for v in values], 2), "value binary")
    for name, rename_min in (("copy", 1 << 62), ("rename", 1)):
        SegmentLogSink(str(tmp_path / name), writer_id="w0", topic="t", partitions=1, config=cfg, rename_min_bytes=rename_min)(df, 0)
    limit = 1048588                                   # max.message.bytes' default
    for folder in (tmp_path / "py" / "t-0", tmp_path / "copy" / "t-0", tmp_path / "rename" / "t-0"):
        segs = _segments(folder)
        sizes = [int(np.diff(np.append(scan.positions, len(data))).max()) for _, data, scan in segs]
        assert max(sizes) <= limit
        assert max(sizes) > limit - 40_000            # batches still near the limit: a full budget
        with Log.open(folder, cfg, readonly=True) as log:
            assert sorted(r.value for r in log.read()) == sorted(values)
