"""The JVM reader (format("seglog")) on damaged and racing files (issue 23): every fault the Python core
reports is reported, naming the file and the position, never read as fewer rows; bytes past the
committed end (an in-flight or rolled-back write) are never judged."""
from __future__ import annotations

import json
import re
import os
import struct
import time

import numpy as np
import pyarrow as pa
import pytest

from seglog.errors import CorruptIndexError, CorruptRecordError
from seglog.indexer.checkpoint import update_log_start_offsets
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CONFIG = {"segment.bytes": 4096, "index.interval.bytes": 256}
N = 300


def commit(root, topic, ends):
    commits = CommitLog(root, topic)
    last = commits.last_batch("faults")
    commits.commit("faults", 0 if last is None else last + 1, ends)


def timestamps(lo, hi):
    ts = T0 + np.arange(lo, hi, dtype=np.int64)
    ts[(np.arange(lo, hi) >= 70) & (np.arange(lo, hi) < 80)] += 100_000   # one early batch of segment 60 holds its largest
    return ts


def build(root, topic="t", n=N, commit_end=True):
    """n records in batches of 10, five segments of 60 (bases 0, 60, ..., 240), the last active."""
    with Log.open(root / f"{topic}-0", CONFIG, outside_commit_log=True) as log:
        for lo in range(0, n, 10):
            log.append_columns(pa.array([b"value-%06d" % i * 4 for i in range(lo, lo + 10)]),
                               timestamps=timestamps(lo, lo + 10))
        log.flush()
        bases = [s.base_offset for s in log.segments()]
        end = log.log_end_offset
    if commit_end:
        commit(root, topic, {0: end})
    assert bases == [0, 60, 120, 180, 240] and end == n
    return root / f"{topic}-0", bases


def batch_positions(path):
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        out.append(pos)
        pos += 12 + struct.unpack(">i", data[pos + 8:pos + 12])[0]
    return out


def seg_log(part, base):
    return part / f"{base:020d}.log"


def jvm_offsets(spark, root, topic="t", **options):
    """The offsets read, through both outputs of the reader (columnar batches and rows, issue 28): the same
    offsets, or the same fault (its first line), which is raised."""
    got = {}
    for columnar in ("true", "false"):
        r = spark.read.format("seglog").option("topic", topic).option("columnarReads", columnar)
        for k, v in options.items():
            r = r.option(k, json.dumps(v) if isinstance(v, dict) else str(v))
        try:
            got[columnar] = sorted(row.offset for row in r.load(str(root)).select("offset").collect())
        except Exception as e:    # noqa: BLE001 - compared below, then raised
            got[columnar] = e
    columnar, rows = got["true"], got["false"]
    if isinstance(columnar, Exception) or isinstance(rows, Exception):
        def fault(e):
            found = re.search(r"io\.seglog\.[\w.]+: [^\n]*", str(e)) if isinstance(e, Exception) else None
            return found.group(0) if found else repr(e)
        assert fault(columnar) == fault(rows)
        raise columnar
    assert columnar == rows
    return columnar


def core_read(part, start=0, end=N):
    with Log.open(part, readonly=True) as log:
        return [r.offset for r in log.read(start, end)]


def test_sealed_segment_that_lost_its_tail_is_reported(spark, tmp_path):
    part, bases = build(tmp_path)
    victim = seg_log(part, bases[1])
    os.truncate(victim, victim.stat().st_size - 50)          # the last batch of a sealed segment cut short
    with pytest.raises(CorruptRecordError, match=r"00000000000000000060\.log: batch at position \d+ .*past the end"):
        core_read(part)
    with pytest.raises(Exception, match=r"CorruptLogException: \S*00000000000000000060\.log: batch at position \d+ "
                                        r"\(offset 110\) has length \d+, past the end at \d+"):
        jvm_offsets(spark, tmp_path)


def test_damaged_batch_length_is_reported(spark, tmp_path):
    part, bases = build(tmp_path)
    victim = seg_log(part, bases[1])
    pos = batch_positions(victim)[1]
    data = bytearray(victim.read_bytes())
    (length,) = struct.unpack(">i", data[pos + 8:pos + 12])
    data[pos + 8:pos + 12] = struct.pack(">i", length + 100_000)   # the batch now runs past the file's end
    victim.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match=rf"batch at position {pos} \(offset 70\) has length"):
        core_read(part)
    with pytest.raises(Exception, match=rf"CorruptLogException: \S*00000000000000000060\.log: batch at position {pos} "
                                        r"\(offset 70\) has length \d+, past the end at \d+"):
        jvm_offsets(spark, tmp_path)
    # a read that ends before the damage is unaffected
    assert jvm_offsets(spark, tmp_path, endingOffsets={"t": {"0": 70}}) == list(range(70))


def test_sealed_segment_cut_at_a_batch_boundary_is_reported(spark, tmp_path):
    part, bases = build(tmp_path)
    victim = seg_log(part, bases[1])
    os.truncate(victim, batch_positions(victim)[-2])          # whole batches gone: offsets 100 to 119
    with pytest.raises(Exception, match=r"CorruptLogException: \S*00000000000000000060\.log: offsets 100 to 119 are "
                                        r"lost: the \.log ends at position \d+ after offset 99, and the next "
                                        r"segment starts at 120"):
        jvm_offsets(spark, tmp_path)
    with pytest.raises(Exception, match=r"00000000000000000060\.log: offsets 105 to 119 are lost"):
        jvm_offsets(spark, tmp_path, startingOffsets={"t": {"0": 105}})
    assert jvm_offsets(spark, tmp_path, startingOffsets={"t": {"0": 120}}) == list(range(120, N))


def test_active_segment_torn_below_the_committed_end_is_reported(spark, tmp_path):
    part, bases = build(tmp_path)
    active = seg_log(part, bases[-1])
    size = active.stat().st_size
    os.truncate(active, size - 30)                            # committed records torn: not an in-flight write
    with pytest.raises(Exception, match=r"CorruptLogException: \S*00000000000000000240\.log: batch at position \d+ "
                                        r"\(offset 290\) has length \d+, past the end at " + str(size - 30)):
        jvm_offsets(spark, tmp_path)
    assert jvm_offsets(spark, tmp_path, endingOffsets={"t": {"0": 290}}) == list(range(290))


def test_log_start_beyond_the_log_end_is_reported_as_the_core_does(spark, tmp_path):
    part, _ = build(tmp_path)
    update_log_start_offsets(tmp_path, {("t", 0): 10_000})
    message = r"t-0: the log start offset 10000 \(from \S*log-start-offset-checkpoint\) is beyond the log end offset 300"
    with pytest.raises(CorruptRecordError, match=message):
        core_read(part)
    # LogStartBeyondEndException: a CorruptLogException the reader lists again for, briefly, before it reports
    with pytest.raises(Exception, match=r"LogStartBeyondEndException: \S*" + message):
        jvm_offsets(spark, tmp_path)


def test_torn_bytes_past_the_committed_end_are_never_judged(spark, tmp_path):
    """An uncommitted batch whose bytes are torn (a write in flight, or one a roll back is cutting) but
    whose index entries are there: reads, timestamp seeks and timestamp filters stop at the committed end
    and never judge it (item 7)."""
    config = {"segment.bytes": 1 << 20, "index.interval.bytes": 256}
    part = tmp_path / "u-0"
    with Log.open(part, config, outside_commit_log=True) as log:
        for lo in range(0, N, 10):
            log.append_columns(pa.array([b"value-%06d" % i * 4 for i in range(lo, lo + 10)]),
                               timestamps=T0 + np.arange(lo, lo + 10, dtype=np.int64))
        log.flush()
        commit(tmp_path, "u", {0: log.log_end_offset})
        # appended, never committed: its time index entry says T0 + 500000
        log.append_columns(pa.array([b"uncommitted" * 10] * 10), timestamps=np.full(10, T0 + 500_000, np.int64))
        log.flush()
        (base,) = log.segment_bases()
    active = seg_log(part, base)
    last = batch_positions(active)[-1]
    with open(active, "r+b") as fh:                           # a torn body: its CRC fails
        fh.seek(last + 70)
        fh.write(b"\xff" * 8)
    assert jvm_offsets(spark, tmp_path, "u") == list(range(N))
    # no committed record at or after this timestamp: the seek walks up to the committed end only
    assert jvm_offsets(spark, tmp_path, "u", startingTimestamp=T0 + 400_000,
                       startingOffsetsByTimestampStrategy="latest") == []
    assert jvm_offsets(spark, tmp_path, "u", endingTimestamp=T0 + 400_000) == list(range(N))
    df = spark.read.format("seglog").option("topic", "u").load(str(tmp_path))
    assert df.where(f"timestamp >= timestamp_millis({T0 + 400_000})").count() == 0


def test_missing_time_index_is_reported_not_a_wrong_seek(spark, tmp_path):
    """Segment 60's largest timestamp sits in an early batch (timestamps go backwards): without its
    .timeindex the segment's largest is under-estimated and a seek would skip it. The core names the
    missing file once it stays missing while the .log is there (a deletion renames the .log first:
    then it is a segment gone, and the reader lists again); so does the JVM reader."""
    part, bases = build(tmp_path)
    with Log.open(part, readonly=True) as log:
        assert log.offset_for_timestamp(T0 + 100_000) == 70
    want = jvm_offsets(spark, tmp_path, startingTimestamp=T0 + 100_000)
    assert want == list(range(70, N))
    (part / f"{bases[1]:020d}.timeindex").unlink()
    missing = r"00000000000000000060\.timeindex: the time index of segment 60 is missing while its \.log"
    with pytest.raises(CorruptIndexError, match=missing):
        with Log.open(part, readonly=True) as log:
            log.offset_for_timestamp(T0 + 100_000)
    with pytest.raises(Exception, match=r"CorruptLogException: \S*" + missing):
        jvm_offsets(spark, tmp_path, startingTimestamp=T0 + 100_000)


def test_skipped_data_is_counted_in_the_stream_metrics(spark, tmp_path):
    """failOnDataLoss=false: the skip is logged on the driver (JUnit DataLossReportTest asserts the line)
    and counted in the source's metrics."""
    root = tmp_path / "root"
    config = dict(CONFIG, **{"retention.ms": 3_600_000})
    with Log.open(root / "r-0", config, outside_commit_log=True) as log:
        log.append_columns(pa.array([b"x%d" % i for i in range(10)]), timestamps=np.full(10, T0, np.int64))
        log.flush()
        commit(root, "r", {0: log.log_end_offset})

    def run(cp, out):
        q = (spark.readStream.format("seglog").option("topic", "r").option("startingOffsets", "earliest")
             .option("failOnDataLoss", "false").load(str(root)).select("offset").writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None
        return q

    run(tmp_path / "cp", tmp_path / "out")
    now = int(time.time() * 1000)
    with Log.open(root / "r-0", config, outside_commit_log=True) as log:
        for lo in range(10, 200, 10):                          # old records, then recent ones
            log.append_columns(pa.array([b"x%d" % i for i in range(lo, lo + 10)]), timestamps=np.full(10, T0, np.int64))
        log.append_columns(pa.array([b"y%d" % i for i in range(100)]), timestamps=np.full(100, now, np.int64))
        log.flush()
        commit(root, "r", {0: log.log_end_offset})
        log.roll()
        log.seal_inactive()
        log.apply_retention()
        log_start = log.log_start_offset
    assert 10 < log_start <= 200
    q = run(tmp_path / "cp", tmp_path / "out")
    metrics = [p["sources"][0]["metrics"] for p in q.recentProgress if p["numInputRows"] > 0]
    assert metrics and int(metrics[0]["dataLossSkippedOffsets"]) == log_start - 10
    got = sorted(r.offset for r in spark.read.parquet(str(tmp_path / "out")).collect())
    assert got == list(range(10)) + list(range(log_start, 300))


def test_a_start_after_the_end_is_the_requests_mistake_not_data_loss(spark, tmp_path):
    """Issue 27: the exception's name says what happened (it was a DataLossException)."""
    build(tmp_path)
    with pytest.raises(Exception, match=r"seglog source: t-0: starting offset 250 .* is after "
                                        r"the ending offset 100") as caught:
        jvm_offsets(spark, tmp_path, startingOffsets={"t": {"0": 250}}, endingOffsets={"t": {"0": 100}})
    # PySpark shows an IllegalArgumentException's message alone; the JVM exception is the one it wraps.
    origin = caught.value._origin
    assert origin.getClass().getName() == "io.seglog.spark.read.OffsetRangeException"
    assert "failOnDataLoss" not in str(caught.value)


def test_a_segment_with_timestamps_under_an_empty_trimmed_time_index_is_read_by_timestamp(spark, tmp_path):
    """The state tests/system/test_reader_race.py caught the core's lookup in (an inactive segment whose
    batches carry timestamps under empty, trimmed indexes): the JVM reader's timestamp seek finds its
    records too, as the core does (tests/indexer/test_live_lookups.py), never starting at the next segment."""
    root = tmp_path
    part = root / "t-0"
    with Log.open(part, {"segment.bytes": 1 << 20}, outside_commit_log=True) as log:
        for lo in (0, 16):
            log.append_columns(pa.array([b"%d" % o for o in range(lo, lo + 16)]),
                               timestamps=np.arange(lo, lo + 16, dtype=np.int64) + T0)
            log.roll()
        log.flush()
        end = log.log_end_offset
    commit(root, "t", {0: end})
    os.truncate(part / f"{0:020d}.timeindex", 0)          # no seal entry
    with Log.open(part, readonly=True) as log:
        assert log.offset_for_timestamp(T0 + 9) == 9
    assert jvm_offsets(spark, root, startingTimestamp=T0 + 9) == list(range(9, 32))


def test_newest_log_created_without_its_indexes_reads_every_record(spark, tmp_path):
    """A roll creates the new segment's .log before Kafka's lazily created indexes (or a crash stops
    there): a 0-byte newest .log without index files is a legal state. Every reader reads every record
    (issue 36 item 10): the core's read-only open, `seglog describe` and `verify`, and format("seglog")."""
    from tests.cli.helpers import seglog

    part, bases = build(tmp_path)
    (part / f"{N:020d}.log").write_bytes(b"")                 # rolled at 300, no .index, no .timeindex yet
    assert core_read(part) == list(range(N))
    with Log.open(part, readonly=True) as log:
        assert log.segment_bases() == bases + [N] and log.log_end_offset == N
        assert log.offset_for_timestamp(T0 + 100_000) == 70
    described = seglog("describe", tmp_path)
    assert described.returncode == 0, described.stdout + described.stderr
    assert "offsets: start 0, end 300" in described.stdout and "ERROR" not in described.stdout
    verified = seglog("verify", tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert jvm_offsets(spark, tmp_path) == list(range(N))
    assert jvm_offsets(spark, tmp_path, startingTimestamp=T0 + 100_000) == list(range(70, N))
    assert not (part / f"{N:020d}.index").exists()            # readers create nothing
    # a non-empty .log without its index stays a reported fault (segment_list)
    (part / f"{bases[-1]:020d}.index").unlink()
    with pytest.raises(CorruptIndexError, match=r"00000000000000000240\.index: the offset index of segment 240 is missing"):
        core_read(part)
