"""Property tests: a Log against a brute-force model (a Python list of records).

Random programs of appends (per-record and bulk, monotonic, tied and backwards CreateTime
timestamps, records without timestamps), truncations (mid-batch too), close/reopen, seals and
rolls, with tiny and large segment.bytes and index.interval.bytes. After each step: read from any
offset, offset_for_timestamp for every timestamp and its neighbours, and the end offset all match
the model; `verify` finds nothing.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

from seglog.indexer import Log, Record

BASE_TS = 1_700_000_000_000


def model_offset_for_timestamp(model: list[Record], ts: int) -> int | None:
    for r in model:
        if r.timestamp >= ts:
            return r.offset
    return None


timestamps = st.one_of(
    st.integers(min_value=0, max_value=50).map(lambda d: BASE_TS + d * 1000),   # ties and backwards
    st.just(-1),                                                                # no timestamp
)
payloads = st.one_of(st.none(), st.binary(max_size=40))
record_st = st.tuples(payloads, payloads, timestamps)
op_st = st.one_of(
    st.tuples(st.just("append"), st.lists(record_st, min_size=1, max_size=12)),
    st.tuples(st.just("append_columns"), st.lists(record_st, min_size=1, max_size=30)),
    st.tuples(st.just("truncate"), st.floats(min_value=0, max_value=1)),
    st.tuples(st.just("reopen"), st.none()),
    st.tuples(st.just("seal"), st.none()),
)


def check(log: Log, model: list[Record]) -> None:
    assert log.log_end_offset == (model[-1].offset + 1 if model else log.log_end_offset)
    got = list(log.read(log.log_start_offset))
    assert [(r.offset, r.key, r.value, r.timestamp) for r in got] == \
           [(r.offset, r.key, r.value, r.timestamp) for r in model]
    if model:
        for start in {model[0].offset, model[len(model) // 2].offset, model[-1].offset}:
            tail = [r.offset for r in log.read(start)]
            assert tail == [r.offset for r in model if r.offset >= start]
    probe = {BASE_TS - 1, BASE_TS + 51_000, 0}
    for r in model:
        if r.timestamp >= 0:
            probe |= {r.timestamp - 1, r.timestamp, r.timestamp + 1}
    for ts in sorted(probe):
        assert log.offset_for_timestamp(ts) == model_offset_for_timestamp(model, ts), ts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segment_bytes=st.sampled_from([1024, 1500, 1 << 20]),
       interval=st.sampled_from([0, 64, 4096]),
       ops=st.lists(op_st, min_size=1, max_size=10))
def test_log_matches_model(segment_bytes, interval, ops):
    tmp = Path(tempfile.mkdtemp())
    path = tmp / "events-0"
    cfg = {"segment.bytes": segment_bytes, "index.interval.bytes": interval, "segment.index.bytes": 4096}
    model: list[Record] = []
    log = Log.open(path, cfg)
    try:
        for kind, arg in ops:
            if kind == "append":
                recs = [Record(key=k, value=v, timestamp=t) for k, v, t in arg]
                info = log.append(recs)
                assert info.first_offset == log.log_end_offset - len(recs)
            elif kind == "append_columns":
                keys = pa.array([k for k, _, _ in arg], type=pa.binary())
                values = pa.array([v for _, v, _ in arg], type=pa.binary())
                ts = np.array([t for _, _, t in arg], dtype=np.int64)
                info = log.append_columns(values, keys, ts, max_batch_bytes=200)
                recs = [Record(key=k, value=v, timestamp=t) for k, v, t in arg]
            elif kind == "truncate":
                if model:
                    target = model[0].offset + int(arg * len(model))
                    log.truncate_to(target)
                    model = [r for r in model if r.offset < target]
                continue
            elif kind == "reopen":
                log.close()
                log = Log.open(path, cfg)
                assert log.recovery_report == [] or all("rebuilt" not in line for line in log.recovery_report)
                continue
            else:
                log.seal_inactive()
                continue
            first = info.first_offset
            model += [Record(key=r.key, value=r.value, timestamp=r.timestamp, offset=first + i)
                      for i, r in enumerate(recs)]
            check(log, model)
        check(log, model)
        assert log.verify() == []
        log.close()
        log = Log.open(path, cfg)
        check(log, model)
        ro = Log.open(path, cfg, readonly=True)
        check(ro, model)
        ro.close()
    finally:
        log.close()
        shutil.rmtree(tmp)
