"""LogSegment.scan without CRCs walks batch headers only (indexer/segment.py, _HeaderWindow, 16 KiB reads): it must
find what scan_batches finds over the same bytes read whole, for any batch sizes (smaller and larger
than the read window, headers straddling it), any start and end, torn tails and damaged headers."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.errors import CorruptRecordError
from seglog.indexer import Log
from seglog.indexer.codec.records import scan_batches

CONFIG = {"segment.bytes": 1 << 30, "max.message.bytes": 1 << 21}


def _write(path, sizes: list[tuple[int, int]]) -> None:
    """One append per (records, value bytes): batches from a few dozen bytes to past HEADER_WINDOW."""
    with Log.open(path, CONFIG) as log:
        for n, width in sizes:
            vals = pa.array([b"v" * width] * n, type=pa.binary())
            log.append_columns(vals, timestamps=np.full(n, 1_700_000_000_000, dtype=np.int64),
                               max_batch_bytes=1 << 21)


def _expected(path, base: int, start: int, end: int, extra: dict):
    with open(os.path.join(path, f"{base:020d}.log"), "rb") as fh:
        data = fh.read()
    end = min(end, len(data))
    res = scan_batches(data, start, end, check_crc=False, **extra)
    return res


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.tuples(st.integers(1, 40), st.sampled_from([1, 30, 400, 3000, 40_000])), min_size=1, max_size=12),
       cut=st.one_of(st.none(), st.integers(0, 1 << 22)),
       damage=st.one_of(st.none(), st.tuples(st.integers(0, 1 << 22), st.integers(1, 255))),
       start_pick=st.integers(0, 1 << 22), end_pick=st.integers(0, 1 << 22), strict=st.booleans())
def test_header_walk_finds_what_a_whole_read_finds(tmp_path_factory, sizes, cut, damage, start_pick, end_pick, strict):
    path = str(tmp_path_factory.mktemp("walk") / "t-0")
    _write(path, sizes)
    log_file = os.path.join(path, f"{0:020d}.log")
    size = os.path.getsize(log_file)
    if damage is not None:                      # a flipped byte anywhere: header or body
        at = damage[0] % size
        with open(log_file, "r+b") as fh:
            fh.seek(at)
            b = fh.read(1)[0]
            fh.seek(at)
            fh.write(bytes([b ^ damage[1]]))
    if cut is not None:                         # a torn tail
        os.truncate(log_file, cut % (size + 1))
    try:
        log = Log.open(path, CONFIG, readonly=True)
    except CorruptRecordError as exc:
        # Damage no writer leaves, met by the open's own walk of the active segment, is reported there
        # (docs/spec.md §3.8); a whole walk of the file must find a fault too.
        assert scan_batches(open(log_file, "rb").read(), 0, check_crc=False).error is not None, str(exc)
        return
    with log:
        seg = log.segment(0)
        positions = scan_batches(open(log_file, "rb").read(), 0, check_crc=False).positions.tolist() or [0]
        # starts at batch boundaries (as every caller's: an index entry's position) and anywhere
        start = positions[start_pick % len(positions)] if start_pick % 2 else start_pick % (size + 1)
        end = max(start, end_pick % (size + 64))
        extra = {"prev_last_offset": -1, "dense": True, "min_leader_epoch": 0, "max_leader_epoch": 0} \
            if strict and start == 0 else {}
        got = seg.scan(start, end, check_crc=False, strict=strict)
        want = _expected(path, 0, start, end, extra)
    assert got.positions.tolist() == want.positions.tolist()
    assert got.headers == want.headers
    assert got.valid_end == want.valid_end
    assert (got.error is None) == (want.error is None), (got.error, want.error)
    if got.error is not None:
        assert got.error == want.error            # absolute positions both: one read from 0
