"""Crash, corruption, migration and bad input: what a real crash or a real bad byte leaves on disk,
and what the Log does with it (docs/spec.md §3.6, 3.8)."""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer import Log, Record
from seglog.errors import (ConfigError, CorruptRecordError, InvalidRecordError, InvalidTopicError,
                            RecordTooLargeError, TimestampOutOfRangeError)
from seglog.indexer.recovery import TRUNCATE_INTENT

TS = 1_700_000_000_000
SMALL = {"segment.bytes": 2048, "index.interval.bytes": 100, "segment.index.bytes": 1200}


def fill(log: Log, n: int, *, start_ts: int = TS, value_size: int = 30) -> list[Record]:
    recs = [Record(key=b"k%d" % i, value=bytes([i % 251]) * value_size, timestamp=start_ts + i * 10)
            for i in range(n)]
    for i in range(0, n, 7):
        log.append(recs[i:i + 7])
    return recs


def snapshot(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def values(log: Log) -> list[tuple[int, bytes]]:
    return [(r.offset, r.value) for r in log.read()]


def test_copy_of_open_log_reopens_with_every_record(tmp_path):
    """A copy taken while the log is open (no close, no trim) is what a crash leaves."""
    log = Log.open(tmp_path / "t-0", SMALL)
    recs = fill(log, 200)
    shutil.copytree(tmp_path / "t-0", tmp_path / "copy-0")
    log.close()
    with Log.open(tmp_path / "copy-0", SMALL) as copy:
        assert [r.value for r in copy.read()] == [r.value for r in recs]
        assert copy.log_end_offset == 200
        assert copy.verify() == []
        # lookups work on the recovered indexes
        assert copy.offset_for_timestamp(TS + 1005) == 101


def test_killed_writer_loses_nothing_it_flushed(tmp_path):
    """A real process appending in a loop, SIGKILLed: every flushed record is there after recovery."""
    script = textwrap.dedent(f"""
        import sys
        from seglog.indexer import Log, Record
        log = Log.open(sys.argv[1], {SMALL!r})
        i = log.log_end_offset
        while True:
            log.append([Record(value=b"v%d" % (i + j), timestamp={TS} + i + j) for j in range(5)])
            log.flush()
            i += 5
            print(i, flush=True)
    """)
    path = tmp_path / "k-0"
    for round_ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)
        time.sleep(0.6 + 0.3 * round_)
        proc.send_signal(signal.SIGKILL)
        out = proc.communicate()[0].split()
        flushed = int(out[-1]) if out else 0
        with Log.open(path, SMALL) as log:
            got = [r.value for r in log.read()]
            assert len(got) >= flushed
            assert got == [b"v%d" % i for i in range(len(got))]   # dense, in order, nothing torn
            assert log.verify() == []


@pytest.mark.parametrize("cut", [1, 10, 61, 100])
def test_torn_tail_is_cut_and_reported(tmp_path, cut):
    path = tmp_path / "t-0"
    with Log.open(path, SMALL) as log:
        fill(log, 30)
        active = log.active_segment.log_path
        end = log.log_end_offset
    size = active.stat().st_size
    with open(active, "r+b") as fh:
        fh.truncate(size - cut)
    with Log.open(path, SMALL) as log:
        assert any("dropped" in line for line in log.recovery_report), log.recovery_report
        assert log.log_end_offset < end
        assert [r.offset for r in log.read()] == list(range(log.log_end_offset))
        assert log.verify() == []
        info = log.append([Record(value=b"after", timestamp=TS)])
        assert info.first_offset == log.log_end_offset - 1


def test_flipped_byte_in_active_tail_is_detected_and_cut(tmp_path):
    path = tmp_path / "t-0"
    with Log.open(path, {"index.interval.bytes": 1 << 20}) as log:   # no index entries: all tail
        fill(log, 21)
        active = log.active_segment.log_path
    data = bytearray(active.read_bytes())
    data[-5] ^= 0x40
    active.write_bytes(bytes(data))
    with Log.open(path, {"index.interval.bytes": 1 << 20}) as log:
        assert any("CRC" in line for line in log.recovery_report), log.recovery_report
        assert log.log_end_offset == 14   # the last batch of 7 is gone, the rest intact
        assert log.verify() == []


@pytest.mark.parametrize("damage", ["missing", "garbage", "short"])
def test_bad_index_is_rebuilt(tmp_path, damage):
    path = tmp_path / "t-0"
    with Log.open(path, SMALL) as log:
        fill(log, 60)
        before = values(log)
        index = log.active_segment.index_path
        expected_entries = log.active_segment.offset_index.entries
    assert expected_entries > 0
    if damage == "missing":
        index.unlink()
    elif damage == "garbage":
        index.write_bytes(os.urandom(64) + b"\0" * 100)
    else:
        index.write_bytes(index.read_bytes()[:13])
    with Log.open(path, SMALL) as log:
        assert any("rebuilt" in line for line in log.recovery_report), log.recovery_report
        assert values(log) == before
        assert log.active_segment.offset_index.entries == expected_entries
        assert log.verify() == []


def test_zero_padded_index_is_never_read_as_entries(tmp_path):
    """KAFKA-10207: a preallocated index left untrimmed by a crash; its zeros are not entries, so
    no zero timestamp can make retention delete early."""
    path = tmp_path / "t-0"
    log = Log.open(path, {"segment.bytes": 1024, "index.interval.bytes": 0})
    fill(log, 40, start_ts=int(time.time() * 1000))
    shutil.copytree(path, tmp_path / "c-0")  # crash copy: every index preallocated, never trimmed
    log.close()
    crashed = Log.open(tmp_path / "c-0", {"segment.bytes": 1024, "index.interval.bytes": 0, "retention.ms": 3_600_000})
    for seg in crashed.segments():
        assert seg.largest_timestamp > 0
    result = crashed.apply_retention()
    assert result.deleted_bases == []            # nothing is old: the zeros did not count
    ts, offs = crashed.active_segment.time_index.timestamps_and_offsets()
    assert (np.asarray(ts) > 0).all() and (np.asarray(offs) > 0).all()
    crashed.close()


def test_flipped_byte_in_sealed_segment_fails_verify_and_read(tmp_path):
    path = tmp_path / "t-0"
    with Log.open(path, SMALL) as log:
        fill(log, 120)
        assert log.seal_inactive() == []   # a roll seals the segment it leaves
        first = log.segments()[0]
        assert first.state == "sealed"
    data = bytearray(first.log_path.read_bytes())
    data[len(data) // 2] ^= 0x01
    first.log_path.write_bytes(bytes(data))
    with Log.open(path, SMALL, readonly=True) as ro:
        problems = ro.verify()
        assert problems and str(first.log_path) in problems[0]
        with pytest.raises(CorruptRecordError):
            list(ro.read(0))


def test_every_flipped_byte_of_a_segment_is_detected(tmp_path):
    path = tmp_path / "t-0"
    with Log.open(path, {"segment.bytes": 1 << 20}) as log:
        log.append([Record(key=b"a", value=b"hello", timestamp=TS), Record(value=None, timestamp=TS + 1)])
        log.append([Record(key=b"b", value=b"world", timestamp=TS + 2, headers=(("h", b"x"),))])
        seg_path = log.active_segment.log_path
    original = seg_path.read_bytes()
    for i in range(len(original)):
        data = bytearray(original)
        data[i] ^= 0x10
        seg_path.write_bytes(bytes(data))
        try:
            ro = Log.open(path, {"segment.bytes": 1 << 20}, readonly=True)
        except CorruptRecordError as exc:   # damage the open's own header walk meets: reported there, named
            assert str(seg_path) in str(exc), f"flip at byte {i}: {exc}"
            continue
        with ro:
            assert ro.verify(), f"flip at byte {i} went unnoticed"
    seg_path.write_bytes(original)


def test_segment_without_time_index_gets_one_on_open(tmp_path):
    """docs/spec.md §2.4: a segment found without a time index gets one built from its records, the
    same bytes the writer wrote (Kafka's entries, the seal entry last); lookups and retention use it."""
    path = tmp_path / "t-0"
    with Log.open(path, {"segment.bytes": 1024}) as log:
        fill(log, 60, start_ts=TS)
        first = log.segments()[0]
        expected = {ts: log.offset_for_timestamp(ts) for ts in range(TS - 1, TS + 62)}
    tindex = first.log_path.with_suffix(".timeindex")
    written = tindex.read_bytes()
    assert written
    tindex.unlink()
    with Log.open(path, {"segment.bytes": 1024}) as log:
        assert any("rebuilt (missing)" in line for line in log.recovery_report)
        assert tindex.read_bytes() == written
        assert log.segments()[0].state == "sealed"
        assert log.segments()[0].largest_timestamp == first.largest_timestamp
        assert {ts: log.offset_for_timestamp(ts) for ts in expected} == expected
        assert log.verify() == []


def test_segment_without_timestamps_has_empty_time_index_and_mtime(tmp_path):
    path = tmp_path / "t-0"
    with Log.open(path, {"segment.bytes": 1024, "retention.ms": 60_000}) as log:
        log.append([Record(value=b"x" * 100, timestamp=-1) for _ in range(5)])
        log.append([Record(value=b"y" * 100, timestamp=-1) for _ in range(15)])
        log.seal_inactive()
        infos = log.segments()
        assert len(infos) > 1
        first = infos[0]
        assert first.largest_timestamp == -1
        assert first.state == "sealed"
        assert log.segment(first.base_offset).time_index.entries == 0
        assert first.retention_timestamp == first.mtime_ms
        assert log.offset_for_timestamp(0) is None
        deleted = log.apply_retention(now=first.mtime_ms + 120_000).deleted_bases
        assert first.base_offset in deleted


def test_truncation_interrupted_after_intent_is_finished_by_recovery(tmp_path):
    """The intent file is written before anything changes; a crash at any later step is completed
    on the next open. Simulated by stopping after each step of the real truncation."""
    from seglog.indexer import recovery

    path = tmp_path / "t-0"
    with Log.open(path, SMALL) as log:
        recs = fill(log, 150)
    target = 80  # mid-batch (batches of 7 records: 77..83)
    for stop_after in ("intent", "renames", "cut"):
        shutil.rmtree(tmp_path / "w-0", ignore_errors=True)
        shutil.copytree(path, tmp_path / "w-0")
        log = Log.open(tmp_path / "w-0", readonly=True)     # plans the cut; holds no lock
        bases = log.segment_bases()
        base = max(b for b in bases if b <= target)
        seg = log.segment(base)
        intent = recovery.truncation_intent(seg, target)
        pos = intent["position"]
        recovery.write_intent(tmp_path / "w-0", intent)
        if stop_after in ("renames", "cut"):
            for b in bases:
                if b > base:
                    recovery.rename_deleted(tmp_path / "w-0", b)
        if stop_after == "cut":
            with open(seg.log_path, "r+b") as fh:
                fh.truncate(pos + 10)   # torn mid-rewrite
        log.close()                     # the process "dies" here
        with Log.open(tmp_path / "w-0", SMALL) as again:
            assert not (tmp_path / "w-0" / TRUNCATE_INTENT).exists()
            assert [r.value for r in again.read()] == [r.value for r in recs[:target]]
            assert again.log_end_offset == target
            assert again.verify() == []


def test_truncate_then_append_across_sealed_segments(tmp_path):
    path = tmp_path / "t-0"
    with Log.open(path, SMALL) as log:
        fill(log, 150)
        log.seal_inactive()
        log.truncate_to(10)
        assert log.log_end_offset == 10
        assert len(log.segments()) == 1
        log.append([Record(value=b"new", timestamp=TS + 1000)])
        assert [r.offset for r in log.read()] == list(range(11))
        assert log.verify() == []
    with Log.open(path, SMALL) as log:
        assert log.log_end_offset == 11
        assert log.offset_for_timestamp(TS + 95) == 10


# ---------------------------------------------------------------------- bad input
def test_bad_config_names_key_value_and_allowed(tmp_path):
    with pytest.raises(ConfigError, match=r"segment\.bytes.*10.*1024"):
        Log.open(tmp_path / "t-0", {"segment.bytes": 10})
    with pytest.raises(ConfigError, match="did you mean 'retention.ms'"):
        Log.open(tmp_path / "t-0", {"retention.msec": 5})
    with pytest.raises(ConfigError, match="message.timestamp.type"):
        Log.open(tmp_path / "t-0", {"message.timestamp.type": "WallClock"})
    assert not (tmp_path / "t-0").exists()


@pytest.mark.parametrize("name", ["a b-0", "..-0", "x" * 250 + "-0", "é-0"])
def test_bad_topic_folder_is_refused(tmp_path, name):
    with pytest.raises(InvalidTopicError, match="invalid topic name"):
        Log.open(tmp_path / name)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("topic", ["../escape", "a/b", ".", "..", "", "x" * 250])
def test_no_topic_name_leaves_the_root(tmp_path, topic):
    from seglog.indexer import LogRoot

    with pytest.raises(InvalidTopicError, match="invalid topic name"):
        LogRoot(tmp_path / "root").open_log(topic, 0)
    assert not (tmp_path / "root").exists() or list((tmp_path / "root").iterdir()) == []


@pytest.mark.parametrize("bad", [
    lambda: [Record(value="text")],
    lambda: [Record(key=123, value=b"v")],
    lambda: [Record(value=b"v", headers=(("h", "not-bytes"),))],
    lambda: [Record(value=b"v", timestamp=-5)],
    lambda: ["not a record"],
])
def test_bad_records_leave_the_log_unchanged(tmp_path, bad):
    path = tmp_path / "t-0"
    with Log.open(path) as log:
        fill(log, 10)
        before = snapshot(path)
        with pytest.raises(InvalidRecordError):
            log.append([Record(value=b"ok", timestamp=TS)] + bad())
        assert snapshot(path) == before
        assert log.log_end_offset == 10


def test_oversized_batch_is_refused_whole(tmp_path):
    path = tmp_path / "t-0"
    with Log.open(path, {"max.message.bytes": 1000}) as log:
        fill(log, 3)
        before = snapshot(path)
        with pytest.raises(RecordTooLargeError, match="max.message.bytes"):
            log.append_columns(pa.array([b"small", b"x" * 2000]), timestamps=np.array([TS, TS]))
        assert snapshot(path) == before


def test_timestamp_out_of_range_is_refused_naming_the_record(tmp_path):
    path = tmp_path / "t-0"
    now = int(time.time() * 1000)
    with Log.open(path, {"max.message.time.difference.ms": 60_000}) as log:
        log.append([Record(value=b"a", timestamp=now)])
        before = snapshot(path)
        with pytest.raises(TimestampOutOfRangeError, match="record 2"):
            log.append([Record(value=b"b", timestamp=now), Record(value=b"c", timestamp=-1),
                        Record(value=b"d", timestamp=now + 3_600_000)])
        assert snapshot(path) == before


def test_readonly_open_survives_the_last_segment_being_deleted_under_it(tmp_path):
    """Readers take no lock: a listing that names a segment retention then renames to .deleted
    (index files first gone from under the open) is listed again, never a raw FileNotFoundError."""
    import threading

    from seglog.indexer import recovery
    from seglog.errors import OffsetOutOfRangeError

    path = tmp_path / "t-0"
    with Log.open(path, SMALL) as log:
        fill(log, 40)
    stop = threading.Event()
    errors = []

    def churn():  # roll a new last segment, then delete the old one, over and over
        base = 40
        while not stop.is_set():
            with Log.open(path, SMALL) as log:
                log.append([Record(value=b"x", timestamp=TS)])
                old = log.active_segment.base_offset
                log.roll()
            recovery.rename_deleted(path, old)
            base += 1

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(300):
            try:
                with Log.open(path, SMALL, readonly=True) as ro:
                    ro.log_end_offset
            except OffsetOutOfRangeError:
                pass   # typed data loss is allowed; a raw OSError is not
            except OSError as exc:
                errors.append(repr(exc))
    finally:
        stop.set()
        thread.join()
    assert errors == []


def test_time_indexes_written_by_seglog_0_2_are_read_right_then_rebuilt(tmp_path):
    """docs/format.md "Time index": seglog 0.2 wrote entries (largest so far, next offset) and sealed with
    (largest, next segment's base). Read as found, lookups stay exact; a writable open rebuilds them into
    exactly the bytes seglog writes now."""
    import struct

    path = tmp_path / "t-0"
    rng = random.Random(7)
    with Log.open(path, SMALL) as log:
        for i in range(40):
            log.append([Record(value=b"v" * 30, timestamp=TS + rng.randrange(300)) for _ in range(1 + i % 4)])
        records = list(log.read())
    (path / "recovery-point-offset-checkpoint").unlink()     # seglog 0.2 wrote none
    segs = sorted(path.glob("*.timeindex"))
    assert len(segs) > 3
    now_style = {p: p.read_bytes() for p in segs}
    bases = [int(p.stem) for p in segs] + [records[-1].offset + 1]
    # The 0.2 shape: entries name a next offset (here: one past the batch Kafka's entry names), and a
    # sealed segment's last entry the next segment's base.
    for i, (p, base, next_base) in enumerate(zip(segs, bases, bases[1:])):
        raw = bytearray(now_style[p])
        n = len(raw) // 12
        for k in range(n):
            ts, rel = struct.unpack_from(">qi", raw, 12 * k)
            sealed_last = k == n - 1 and i < len(segs) - 1
            struct.pack_into(">qi", raw, 12 * k, ts, next_base - base if sealed_last else rel + 1)
        p.write_bytes(bytes(raw))
    assert any(p.read_bytes() != now_style[p] for p in segs)

    def brute(t):
        return next((r.offset for r in records if r.timestamp >= t), None)

    probes = sorted({r.timestamp + d for r in records for d in (-1, 0, 1)})
    with Log.open(path, readonly=True) as ro:          # as found: exact answers all the same
        assert {t: ro.offset_for_timestamp(t) for t in probes} == {t: brute(t) for t in probes}
        assert ro.verify()                              # but verify names the 0.2 entries
    with Log.open(path, SMALL) as log:                 # a writer's recovery rebuilds them
        assert any("rebuilt" in line for line in log.recovery_report)
        assert {t: log.offset_for_timestamp(t) for t in probes} == {t: brute(t) for t in probes}
    for p in segs[:-1]:
        assert p.read_bytes() == now_style[p], p
    with Log.open(path, readonly=True) as ro:
        assert ro.verify() == []
