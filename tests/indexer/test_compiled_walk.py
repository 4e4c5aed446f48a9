"""The compiled batch walk (`records.scan_batches` through indexer/codec/native.py `walk`, CRCs by the crc32c
library) against the reference walk (`records.walk_batches`, SEGLOG_NO_NUMBA=1): on sound and damaged
buffers, with every option a caller passes (a start, an end inside a batch, the previous last offset,
dense offsets, leader epoch bounds, an origin), both give the same batches, headers, valid end and error."""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.indexer.codec import records
from seglog.indexer.codec.records import Record, encode_batch, scan_batches

KEEP = settings(deadline=None, max_examples=500,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])   # set per call in _both


def _log(seed: int, batches: int, gaps: bool) -> tuple[bytes, list[int]]:
    rng = random.Random(seed)
    out, starts, offset = bytearray(), [], 0
    for _ in range(batches):
        recs = [Record(rng.randbytes(rng.randint(0, 8)) if rng.random() < .8 else None, rng.randbytes(rng.randint(0, 300)),
                       1_700_000_000_000 + rng.randint(-5, 5)) for _ in range(rng.randint(1, 6))]
        starts.append(len(out))
        out += encode_batch(offset, recs)
        offset += len(recs) + (rng.randint(1, 3) if gaps and rng.random() < .3 else 0)
    return bytes(out), starts


def _damage(buf: bytes, starts: list[int], kind: str, rng: random.Random) -> bytes:
    b = bytearray(buf)
    if kind == "none":
        return buf
    if kind == "cut":
        return bytes(b[:rng.randint(0, len(b))])
    at = rng.choice(starts)
    if kind == "byte":
        p = rng.randint(at, len(b) - 1)
        b[p] ^= 1 << rng.randint(0, 7)
    elif kind == "length":
        b[at + 8:at + 12] = rng.randint(0, 1 << 20).to_bytes(4, "big")
    elif kind == "base":
        b[at:at + 8] = rng.randint(0, 50).to_bytes(8, "big")
    elif kind == "epoch":     # from this batch on (a later batch's lower epoch would be the first fault found)
        epoch = rng.randint(0, 3).to_bytes(4, "big")
        for s in (s for s in starts if s >= at):
            b[s + 12:s + 16] = epoch
    return bytes(b)


def _summary(res):
    if isinstance(res, Exception):
        return type(res).__name__, str(res)
    return res.positions.tolist(), [tuple(h) for h in res.headers], res.valid_end, res.error, \
        res.last_offsets.tolist(), res.sizes.tolist(), res.max_timestamps.tolist(), res.next_offset


def _both(monkeypatch, buf, **kw):
    monkeypatch.setattr(records, "_COMPILED_WALK_MIN", 0)
    out = []
    for no_numba in ("1", "0"):
        monkeypatch.setenv("SEGLOG_NO_NUMBA", no_numba)
        try:
            out.append(_summary(scan_batches(buf, **kw)))
        except Exception as exc:        # noqa: BLE001  (the same exception is the assertion)
            out.append(_summary(exc))
    return out


@KEEP
@given(seed=st.integers(0, 10_000), batches=st.integers(1, 12), gaps=st.booleans(),
       kind=st.sampled_from(["none", "none", "cut", "byte", "length", "base", "epoch"]),
       crc=st.booleans(), dense=st.booleans(), prev=st.sampled_from([None, -1, 0, 3]),
       epochs=st.sampled_from([None, (0, 0), (0, 2), (1, 5)]), origin=st.sampled_from([0, 4096]),
       start_at=st.integers(0, 3), end_cut=st.integers(0, 40))
def test_the_compiled_walk_gives_what_the_reference_walk_gives(monkeypatch, seed, batches, gaps, kind, crc, dense,
                                                                prev, epochs, origin, start_at, end_cut):
    rng = random.Random(seed)
    buf, starts = _log(seed, batches, gaps)
    buf = _damage(buf, starts, kind, rng)
    start = origin + (starts[min(start_at, len(starts) - 1)] if start_at else 0)
    end = origin + max(0, len(buf) - end_cut)
    kw = dict(start=start, end=end, check_crc=crc, prev_last_offset=prev, dense=dense, origin=origin)
    if epochs is not None:
        kw.update(min_leader_epoch=epochs[0], max_leader_epoch=epochs[1])
    reference, compiled = _both(monkeypatch, buf, **kw)
    assert compiled == reference


def test_the_compiled_walk_is_what_runs(monkeypatch):
    """A sound buffer over the threshold is walked by the kernel (its result carries rows, no tuples yet)."""
    monkeypatch.delenv("SEGLOG_NO_NUMBA", raising=False)
    buf, _ = _log(1, 400, False)
    assert len(buf) >= records._COMPILED_WALK_MIN
    res = scan_batches(buf, 0)
    assert res.error is None and res._headers is None and len(res.positions) == 400
    assert os.environ.get("SEGLOG_NO_NUMBA") is None


@pytest.mark.parametrize("kind", ["cut", "length"])
def test_a_chunk_ending_inside_a_batch_is_named_as_the_reference_names_it(monkeypatch, kind):
    buf, starts = _log(7, 30, False)
    end = starts[20] + (30 if kind == "cut" else 100)
    reference, compiled = _both(monkeypatch, buf, start=0, end=end, check_crc=True)
    assert compiled == reference and compiled[3] is not None
