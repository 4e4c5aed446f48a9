"""The index rule over many batches at once (`LogSegment.index_batches`, the compiled plan in
indexer/codec/native.py) against the rule one batch at a time (`LogSegment.index_batch`, the reference):
on live segments, from any state a segment can be in (entries already written, a largest timestamp
seen, bytes since the last entry), both must leave byte-identical index files and the same state."""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.conf.topic_config import validate_topic_config
from seglog.indexer.segment import LogSegment

KEEP = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
timestamps = st.one_of(st.just(-1), st.just(0), st.integers(0, 50), st.integers(1_700_000_000_000, 1_700_000_000_100))
batch = st.tuples(st.integers(1, 5), st.integers(61, 900), timestamps)      # records, bytes, max timestamp
runs = st.lists(st.lists(batch, min_size=0, max_size=40), min_size=1, max_size=4)


def _state(seg):
    return (seg.bytes_since_index_entry, seg.max_timestamp, seg.offset_of_max_timestamp, seg.first_timestamp,
            seg.offset_index.entries, seg.time_index.entries)


def _index(seg_dir, base, interval, run_list, bulk: bool):
    cfg = validate_topic_config({"index.interval.bytes": interval, "segment.index.bytes": 4096})
    seg = LogSegment(seg_dir, base, cfg, writable=True, active=True, create=True)
    try:
        offset, position = base, 0
        for run in run_list:
            last, pos, sizes, first_ts, max_ts = [], [], [], [], []
            for records, size, ts in run:
                offset += records
                last.append(offset - 1)
                pos.append(position)
                sizes.append(size)
                first_ts.append(ts)
                max_ts.append(ts)
                position += size
            arrays = [np.array(x, dtype=np.int64) for x in (last, pos, sizes, first_ts, max_ts)]
            if bulk:
                seg.index_batches(*arrays)
            else:
                for i in range(len(last)):
                    seg.index_batch(*(int(a[i]) for a in (arrays[0], arrays[1], arrays[2], arrays[3], arrays[4])))
        state = _state(seg)
    finally:
        seg.close()
    names = sorted(p for p in os.listdir(seg_dir) if p.startswith(f"{base:020d}.") and not p.endswith(".log"))
    return state, {n: (seg_dir / n).read_bytes().rstrip(b"\0") for n in names}


@KEEP
@given(runs=runs, interval=st.sampled_from([0, 1, 100, 500, 4096]), base=st.sampled_from([0, 1000]))
def test_the_compiled_plan_indexes_as_the_rule_batch_by_batch(tmp_path_factory, runs, interval, base):
    one = _index(tmp_path_factory.mktemp("one"), base, interval, runs, bulk=False)
    many = _index(tmp_path_factory.mktemp("many"), base, interval, runs, bulk=True)
    assert many == one


def test_the_bulk_path_is_taken_for_long_runs(tmp_path):
    """The compiled plan is what runs for a run of batches (not the fallback): its state after 100 batches
    of 1 record and 200 bytes at interval 500 has an entry every third batch."""
    from seglog.indexer.codec.kernels import native_kernels
    assert native_kernels() is not None
    state, files = _index(tmp_path, 0, 500, [[(1, 200, 10 + i) for i in range(100)]], bulk=True)
    assert state[4] == 33 and state[5] == 33, state


def test_a_refused_bulk_append_changes_nothing(tmp_path):
    """Every entry is checked before the first is stored: one bad entry anywhere refuses them all, typed,
    naming it, and the index files stay as they were."""
    import pytest

    from seglog.indexer.indexes.mmap_index import IndexOffsetOverflowError, InvalidIndexEntryError

    cfg = validate_topic_config({"segment.index.bytes": 4096})
    seg = LogSegment(tmp_path, 100, cfg, writable=True, active=True, create=True)
    try:
        seg.offset_index.append_entries(np.array([105, 110]), np.array([300, 600]))
        seg.time_index.append_entries(np.array([7, 9]), np.array([105, 110]))
        before = ((tmp_path / f"{100:020d}.index").read_bytes(), (tmp_path / f"{100:020d}.timeindex").read_bytes())
        with pytest.raises(InvalidIndexEntryError, match="offset 120, position 600"):
            seg.offset_index.append_entries(np.array([115, 120, 125]), np.array([700, 600, 900]))
        with pytest.raises(IndexOffsetOverflowError, match="offset 99 does not fit"):
            seg.offset_index.append_entries(np.array([99]), np.array([900]))
        with pytest.raises(InvalidIndexEntryError, match="timestamp 9, offset 130"):
            seg.time_index.append_entries(np.array([12, 9]), np.array([120, 130]))
        assert (seg.offset_index.entries, seg.time_index.entries) == (2, 2)
        after = ((tmp_path / f"{100:020d}.index").read_bytes(), (tmp_path / f"{100:020d}.timeindex").read_bytes())
        assert after == before
    finally:
        seg.close()
