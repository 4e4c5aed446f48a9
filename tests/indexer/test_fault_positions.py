"""A damaged batch is named by its position in the file, wherever the reads that met it were cut:
the chunked CRC scan (LogSegment.scan, 4 MiB chunks) and the checked read path (read_checked, 64 KiB
then doubling) both scan a chunk at a time, and used to report positions inside their chunk."""
from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.errors import CorruptRecordError
from seglog.indexer import Log
from seglog.indexer.codec.records import ATTRIBUTES_OFFSET, scan_batches

CONFIG = {"segment.bytes": 1 << 30, "max.message.bytes": 1 << 21}


def _write(path, sizes) -> bytes:
    with Log.open(path, CONFIG) as log:
        for n, width in sizes:
            vals = pa.array([os.urandom(width) for _ in range(n)], type=pa.binary())
            log.append_columns(vals, timestamps=np.arange(n, dtype=np.int64) + 1_700_000_000_000,
                               max_batch_bytes=1 << 21)
        log.flush()
    return (path / f"{0:020d}.log").read_bytes()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.tuples(st.integers(1, 30), st.sampled_from([10, 3000, 60_000, 200_000])), min_size=2, max_size=40),
       pick=st.integers(0, 1 << 30), at=st.integers(0, 1 << 30), flip=st.integers(1, 255))
def test_a_damaged_batch_is_named_by_its_file_position(tmp_path_factory, sizes, pick, at, flip):
    path = tmp_path_factory.mktemp("fault")
    data = _write(path, sizes)
    whole = scan_batches(data, 0)
    assert whole.error is None and whole.valid_end == len(data)
    k = pick % len(whole.positions)
    pos = int(whole.positions[k])
    size = whole.headers[k].batch_length + 12
    where = pos + ATTRIBUTES_OFFSET + at % (size - ATTRIBUTES_OFFSET)     # in what the CRC covers
    damaged = bytearray(data)
    damaged[where] ^= flip
    (path / f"{0:020d}.log").write_bytes(damaged)
    # A CRC mismatch, or a header check first when the byte lies in a field both cover.
    named = re.compile(rf"(CRC mismatch in batch|corrupt batch header) at position {pos}\b")

    try:
        log = Log.open(path, CONFIG, readonly=True)
    except CorruptRecordError as exc:
        # The read-only open walks the active segment's batch headers from its last index entry (and reads
        # the first): damage there that no writer leaves is reported by the open itself, never taken for
        # the end of the log (which would read as fewer rows).
        assert named.search(str(exc)) and str(path) in str(exc), str(exc)
        return
    with log:
        seg = log.active_segment
        scan = seg.scan(0, len(data), check_crc=True)
        assert scan.valid_end == pos and named.search(scan.error), scan.error
        assert list(scan.positions) == list(whole.positions[:k])
        with pytest.raises(CorruptRecordError) as err:
            for _ in log.read_arrow(0):
                pass
        assert named.search(str(err.value)) and str(path) in str(err.value), str(err.value)


@pytest.mark.parametrize("tail", ["header", "zeros", "prefix"])
def test_a_reader_tells_damage_from_a_tail_in_flight(tmp_path, tail):
    """The active segment's damage is reported by a read-only open, never read as the end of the log;
    what a writer can leave (a batch cut short by an append in flight, zeros after a crash) still reads as
    the end, with every record before it."""
    data = _write(tmp_path, [(10, 10), (3, 10)])
    first = scan_batches(data, 0)
    second = int(first.positions[1])
    if tail == "header":                       # the first batch's record count flipped: damage, a batch follows
        damaged = bytearray(data)
        damaged[57 + 3] ^= 1
        (tmp_path / f"{0:020d}.log").write_bytes(damaged)
        with pytest.raises(CorruptRecordError, match=r"corrupt batch header at position 0\b") as err:
            Log.open(tmp_path, CONFIG, readonly=True)
        assert str(tmp_path) in str(err.value)
        return
    extra = bytes(200) if tail == "zeros" else data[second:second + 40]
    (tmp_path / f"{0:020d}.log").write_bytes(data + extra)
    with Log.open(tmp_path, CONFIG, readonly=True) as log:
        assert log.log_end_offset == 13
        assert sum(len(t) for t in log.read_arrow(0)) == 13
