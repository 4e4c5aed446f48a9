"""LogSegment.scan with CRCs over a long range (indexer/segment.py `_scan_chunked`): chunk by chunk, each
chunk's CRCs in one compiled loop (indexer/codec/crc_kernel.py), the bytes mapped for a writable segment
(its partition's lock held) and read into one reused buffer for a read-only one. Both must find what
scan_batches finds over the same bytes read whole: the same batches, the same end, the same fault in the
same words, for any batch sizes (smaller and larger than a chunk, cut by chunk ends), flipped bytes
(header or body) and torn tails. The chunk size is made small here so that many chunks are crossed."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.indexer import Log, segment
from seglog.indexer.codec import crc_kernel
from seglog.indexer.codec.records import scan_batches
from seglog.indexer.segment import LogSegment
from seglog.conf.topic_config import validate_topic_config

CONFIG = {"segment.bytes": 1 << 30, "max.message.bytes": 1 << 21}
CHUNK = 48 << 10


def _write(path, sizes):
    with Log.open(path, CONFIG) as log:
        for n, width in sizes:
            vals = pa.array([os.urandom(width) for _ in range(n)], type=pa.binary())
            log.append_columns(vals, timestamps=np.full(n, 1_700_000_000_000, dtype=np.int64), max_batch_bytes=1 << 21)


@settings(max_examples=int(os.environ.get("SEGLOG_PROPERTY_EXAMPLES", 50)), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.tuples(st.integers(1, 30), st.sampled_from([10, 300, 2000, 9000, 70_000])), min_size=1, max_size=14),
       damage=st.one_of(st.none(), st.tuples(st.integers(0, 1 << 24), st.integers(1, 255))),
       cut=st.one_of(st.none(), st.integers(0, 1 << 24)))
def test_chunked_scan_finds_what_a_whole_read_finds(tmp_path_factory, monkeypatch, sizes, damage, cut):
    monkeypatch.setattr(segment, "READ_CHUNK", CHUNK)
    path = tmp_path_factory.mktemp("chunked") / "t-0"
    _write(path, sizes)
    log_file = path / f"{0:020d}.log"
    size = log_file.stat().st_size
    if damage is not None:
        at = damage[0] % size
        data = bytearray(log_file.read_bytes())
        data[at] ^= damage[1]
        log_file.write_bytes(bytes(data))
    if cut is not None:
        os.truncate(log_file, cut % (size + 1))
    data = log_file.read_bytes()
    extra = {"prev_last_offset": -1, "dense": True, "min_leader_epoch": 0, "max_leader_epoch": 0}
    want = scan_batches(data, 0, len(data), check_crc=True, **extra)
    cfg = validate_topic_config(CONFIG)
    for writable in (True, False):          # mapped, and pread into a reused buffer
        seg = LogSegment(path, 0, cfg, writable=writable, active=False)
        try:
            got = seg.scan(0, len(data), check_crc=True, strict=True)      # as callers ask: to the file's end
        finally:
            seg.close()
        assert got.positions.tolist() == want.positions.tolist(), writable
        assert got.valid_end == want.valid_end, writable
        assert got.error == want.error, (writable, got.error, want.error)
        assert np.array_equal(got.rows, want.rows) if len(want.positions) else not len(got.positions)


def test_the_compiled_crc_loop_is_the_librarys_crc():
    """records.crcs_match(compiled=True) names a wrong CRC in any batch and passes clean ones, on every
    platform: through the compiled loop where it can be had (x86 with the crc32c library's hardware routine;
    then the loop also names the first bad batch), through the library's API elsewhere."""
    import crc32c

    from seglog.indexer.codec.records import crcs_match

    rng = np.random.default_rng(3)
    sizes = rng.integers(22, 5000, 200)
    positions = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    data = rng.integers(0, 256, int(sizes.sum()), dtype=np.uint8)
    stored = np.array([crc32c.crc32c(data[p + 21:p + s].tobytes()) for p, s in zip(positions, sizes)], dtype=np.int64)
    rows = np.zeros((len(sizes), 13), dtype=np.int64)
    rows[:, 1], rows[:, 4] = sizes - 12, stored          # BatchHeader's order: length (minus 12), CRC
    kernel = crc_kernel.first_bad_crc()
    assert crcs_match(data, positions, rows, compiled=True)
    if kernel is not None:
        assert kernel(data, positions, 21, sizes.astype(np.int64), stored) == -1
    for victim in (0, 57, 199):
        bad = data.copy()
        bad[positions[victim] + 21 + int(rng.integers(0, sizes[victim] - 21))] ^= 0x10
        assert not crcs_match(bad, positions, rows, compiled=True)
        assert not crcs_match(bad, positions, rows)
        if kernel is not None:
            assert kernel(bad, positions, 21, sizes.astype(np.int64), stored) == victim
