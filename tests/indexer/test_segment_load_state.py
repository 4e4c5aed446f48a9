"""An open loads the active segment's largest timestamp (and the offset of the first batch holding it)
from the time index plus a walk from the last offset index entry only (LogSegment._time_index_covered):
against brute force over every batch, after appends, truncations and reopens, writable and read-only,
with timestamps that repeat, go back, stop growing, and sit at 0 (the one time index entry a
preallocated file never holds is (0, base))."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from seglog.indexer import Log

CONFIG = {"segment.bytes": 1 << 20, "index.interval.bytes": 150}


def brute(batches):
    """(largest timestamp, last offset of the first batch holding it) over (last offset, max ts) pairs."""
    best = (-1, -1)
    for last, ts in batches:
        if ts > best[0]:
            best = (ts, last)
    return best


ops = st.lists(st.one_of(
    st.tuples(st.just("append"), st.lists(st.sampled_from([0, 0, 0, 1, 5, 40]), min_size=1, max_size=6),
              st.integers(1, 120)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 20), st.just(0)),
    st.tuples(st.just("reopen"), st.just(0), st.just(0)),
), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops)
# The (0, base) entry: a first batch of one record at timestamp 0, then only timestamp 0 (the walk
# from the last offset index entry must not take a later batch as the first holding 0).
@example(steps=[("append", [0], 1)] + [("append", [0, 0, 0], 100)] * 4 + [("reopen", 0, 0)])
def test_largest_timestamp_after_any_reopen_matches_brute_force(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("load") / "t-0"
    batches: list[tuple[int, int]] = []      # (last offset, max timestamp) per appended batch
    log = Log.open(path, CONFIG)
    try:
        for op, a, b in steps:
            if op == "append":
                base = log.log_end_offset
                # one batch per call: max_batch_bytes above what these records take
                log.append_columns(pa.array([b"v" * b] * len(a)), timestamps=np.asarray(a, np.int64),
                                   max_batch_bytes=1 << 20)
                batches.append((base + len(a) - 1, max(a)))
            elif op == "truncate" and batches:
                keep = a % (len(batches) + 1)
                to = batches[keep - 1][0] + 1 if keep else 0
                log.truncate_to(to)
                del batches[keep:]
            elif op == "reopen":
                log.close()
                log = Log.open(path, CONFIG)
            want = brute(batches)
            if batches:
                assert log.active_segment.max_timestamp_and_offset() == want
        log.close()
        if batches:
            for readonly in (True, False):
                with Log.open(path, CONFIG, readonly=readonly) as again:
                    assert again.active_segment.max_timestamp_and_offset() == want, readonly
    finally:
        log.close()
