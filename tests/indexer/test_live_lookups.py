"""Lookups by timestamp on the live writer, after truncation and after the writer closes, against
brute force (issue 10 defects 1 and 2, issue 15)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer import Log, Record

CONFIG = {"segment.bytes": 2048, "index.interval.bytes": 200}


def brute(model, t):
    """The smallest offset whose timestamp >= t, or None."""
    for off, ts in model:
        if ts >= t:
            return off
    return None


def probes(model):
    ts = sorted({t for _, t in model})
    return sorted({p for t in ts for p in (t - 1, t, t + 1)} | {0})


def append(log, model, timestamps, size=40):
    base = log.log_end_offset
    log.append_columns(pa.array([b"x" * size] * len(timestamps)), timestamps=np.asarray(timestamps, np.int64),
                       max_batch_bytes=300)
    model.extend((base + i, int(t)) for i, t in enumerate(timestamps))


@pytest.mark.parametrize("shape", ["monotonic", "ties", "backwards"])
def test_live_writer_answers_lookups_while_appending_and_rolling(tmp_path, shape):
    rng = np.random.default_rng(7)
    model = []
    with Log.open(tmp_path / "t-0", CONFIG) as log:
        t = 1_000
        for round_ in range(30):
            n = int(rng.integers(1, 25))
            if shape == "monotonic":
                ts = t + np.arange(n) * 3
            elif shape == "ties":
                ts = t + (np.arange(n) // 4) * 5
            else:
                ts = t + rng.integers(-400, 400, n)
            t = int(ts.max()) + 1
            append(log, model, np.maximum(ts, 0))
            assert len(log.segments()) >= 1
            for p in probes(model):
                assert log.offset_for_timestamp(p) == brute(model, p), (round_, p)
        assert len(log.segments()) > 5       # it really rolled


def test_a_reader_after_the_writer_closes_finds_the_newest_timestamps(tmp_path):
    # Sparse index entries: the active segment's newest batches come after its last time index entry.
    cfg = {"segment.bytes": 1 << 16, "index.interval.bytes": 4096}
    model = []
    with Log.open(tmp_path / "t-0", cfg) as log:
        for k in range(80):
            append(log, model, [10_000 + k * 25 + j for j in range(25)])
    # close() trimmed the active segment's indexes; records after its last time index entry remain
    with Log.open(tmp_path / "t-0", readonly=True) as reader:
        wrong = [p for p in probes(model) if reader.offset_for_timestamp(p) != brute(model, p)]
        assert wrong == []
        assert reader.largest_timestamp == max(t for _, t in model)
        assert reader.segments()[-1].largest_timestamp == max(t for _, t in model)


def _rising_then_low(path, model):
    """One sealed segment: timestamps rise (time index entries at every offset index entry), then
    stay low (offset index entries with no time index entry), batches smaller than the interval."""
    cfg = {"segment.bytes": 1 << 20, "index.interval.bytes": 600}
    log = Log.open(path, cfg)
    for k in range(40):
        ts = [5_000 + k * 100 + j for j in range(3)] if k < 25 else [1_000 + k] * 3
        append(log, model, ts, size=30)
    log.roll()
    append(log, model, [9_999_000])                  # a later segment, so the first can seal
    log.seal_inactive()
    return log


def test_truncation_inside_a_sealed_segment_keeps_its_largest_timestamp(tmp_path):
    first_segment_end = 120
    for cut in range(1, first_segment_end):
        model = []
        log = _rising_then_low(tmp_path / f"c{cut}" / "t-0", model)
        try:
            log.truncate_to(cut)
            kept = [(o, t) for o, t in model if o < cut]
            expected = max(t for _, t in kept)
            assert log.segments()[0].largest_timestamp == expected, cut
            for p in probes(kept):
                assert log.offset_for_timestamp(p) == brute(kept, p), (cut, p)
            # rolled and sealed again: retention must keep it until its real largest timestamp expires
            log.roll()
            log.append([Record(value=b"later", timestamp=9_999_000)])
            log.seal_inactive()
            assert log.segments()[0].largest_timestamp == expected, cut
            assert log.apply_retention(expected + log.config["retention.ms"] - 1).deleted_bases == []
        finally:
            log.close()


def test_reads_after_close_and_reopen_writable_agree(tmp_path):
    model = []
    with Log.open(tmp_path / "t-0", CONFIG) as log:
        for k in range(30):
            append(log, model, [50_000 - k * 10 + j for j in range(7)])
    with Log.open(tmp_path / "t-0", CONFIG) as log:
        for p in probes(model):
            assert log.offset_for_timestamp(p) == brute(model, p)
        assert [r.offset for r in log.read()] == [o for o, _ in model]
        log.append([Record(value=b"z", timestamp=60_000)])
        model.append((log.log_end_offset - 1, 60_000))
        for p in probes(model):
            assert log.offset_for_timestamp(p) == brute(model, p)


def test_a_segment_with_timestamps_under_an_empty_trimmed_time_index_is_not_taken_as_sealed(tmp_path):
    """The state tests/system/test_reader_race.py caught a lookup in: an inactive segment whose batches
    carry timestamps while its index files are empty and trimmed (no seal entry). Judged from its files
    it is not sealed (`sealed_summary` None), so a lookup opens it and finds its records, never skips
    to the next segment."""
    import os

    from seglog.indexer.segment import sealed_summary

    path = tmp_path / "t-0"
    with Log.open(path, {"segment.bytes": 1 << 20}) as log:
        for lo in (0, 16):
            log.append_columns(pa.array([b"%d" % o for o in range(lo, lo + 16)]),
                               timestamps=np.arange(lo, lo + 16, dtype=np.int64) + 1_000_000)
            log.roll()
        log.flush()
    first = path / f"{0:020d}"
    os.truncate(str(first) + ".timeindex", 0)          # no seal entry
    assert os.path.getsize(str(first) + ".index") == 0  # small: no offset index entry either
    assert sealed_summary(path, 0, 16) is None
    with Log.open(path, readonly=True) as log:
        assert log.offset_for_timestamp(1_000_009) == 9
        assert log.offset_for_timestamp(1_000_020) == 20
