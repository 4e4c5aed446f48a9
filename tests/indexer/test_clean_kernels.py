"""The cleaner's compiled path (indexer/compaction/clean_kernels.py, offset_map.py, clean_batches.py)
against its references.

- The offset map, compiled and dict (no numba), against a brute-force model: segments of keys added
  chunk by chunk within a random budget; each segment is taken whole or refused and rolled back
  (also a segment dropped half-way, as an open transaction does); every key's latest offset, the
  map's end and its memory agree with the model, and the memory never exceeds the budget.
- Whole cleans, differential: the same log (keys of every length, null keys, tombstones, headers,
  non-monotonic timestamps, LogAppendTime, codecs, small budgets, cleans repeated as the clock
  moves) cleaned with the compiled path and with SEGLOG_NO_NUMBA=1 (the reference filter, which is
  the Arrow decode and re-encode of before, and the dict map) gives the same bytes in every file
  and the same counts.
- Work counted: a compiled clean walks each chunk once per pass and never decodes into Arrow.
- A structural fault the CRC does not catch: the walk refuses it and the clean raises the reference
  path's CorruptRecordError, changing nothing.
"""
from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from seglog.errors import CorruptRecordError
from seglog.indexer import Log, Record
from seglog.indexer.codec.batch_layout import ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, CRC_OFFSET
from seglog.indexer.compaction import clean_batches, offset_map
from seglog.indexer.compaction.offset_map import OffsetMapBuilder, memory_of

BASE_TS = 1_700_000_000_000


@pytest.fixture(params=["compiled", "dict"])
def map_kind(request, monkeypatch):
    if request.param == "dict":
        monkeypatch.setenv("SEGLOG_NO_NUMBA", "1")
    else:
        monkeypatch.delenv("SEGLOG_NO_NUMBA", raising=False)
        assert offset_map.clean_kernels() is not None
    return request.param


def _as_arrays(keys: list[bytes]):
    data = b"".join(keys)
    klen = np.array([len(k) for k in keys], dtype=np.int64)
    kpos = np.zeros(len(keys), dtype=np.int64)
    if len(keys):
        np.cumsum(klen[:-1], out=kpos[1:])
    return np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8), kpos, klen


key_st = st.one_of(st.sampled_from([b"", b"a", b"b", b"key-1", b"key-2", b"x" * 40]),
                   st.binary(min_size=0, max_size=6))
segment_st = st.tuples(st.lists(key_st, min_size=0, max_size=60), st.integers(1, 4), st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(segments=st.lists(segment_st, min_size=1, max_size=8), budget=st.integers(0, 4000))
def test_offset_map_matches_model(map_kind, segments, budget):
    start = 100
    b = OffsetMapBuilder(budget, start)
    model: dict[bytes, int] = {}
    end = start
    refused = False
    seen: set[bytes] = set()
    for keys, pieces, dropped in segments:
        offsets = np.arange(end, end + len(keys), dtype=np.int64)
        a, kpos, klen = _as_arrays(keys)
        for part in np.array_split(np.arange(len(keys)), pieces):
            b.add(a, kpos[part], klen[part], offsets[part])
        seen.update(keys)
        trial = dict(model)
        undo = 0
        for k, o in zip(keys, offsets.tolist()):
            if k in model and trial[k] == model[k]:
                undo += 1             # the first update of a key mapped before the segment
            trial[k] = o
        fits = not keys or memory_of(len(trial), sum(map(len, trial)), undo) <= budget   # no keys: nothing added
        if dropped:
            b.drop_segment()
            continue
        assert b.end_segment(end + len(keys)) == fits
        if not fits:
            refused = True
            break
        model = trial
        end += len(keys)
    m = b.build()
    assert m.end == end
    assert m.size == len(model)
    assert m.memory_bytes == memory_of(len(model), sum(map(len, model))) <= max(budget, memory_of(0, 0))
    probe = sorted(seen | {b"never-added"})
    a, kpos, klen = _as_arrays(probe)
    assert m.latest_of(a, kpos, klen).tolist() == [model.get(k, -1) for k in probe]
    assert m.latest_of(a, kpos[:1], np.array([-1])).tolist() == [-1]       # a null key is never mapped
    del refused


def _write(path: Path, rng: np.random.Generator, n_appends: int, cfg: dict) -> None:
    with Log.open(path, dict(cfg, **{"cleanup.policy": "delete"})) as log:   # null keys allowed here
        for i in range(n_appends):
            recs = []
            for _ in range(int(rng.integers(1, 40))):
                kind = rng.integers(0, 10)
                key = None if kind == 0 else (b"" if kind == 1 else b"k%d" % rng.integers(0, 25))
                if kind == 2:
                    key = bytes(rng.integers(0, 256, int(rng.integers(100, 300)), dtype=np.uint8))
                value = None if rng.integers(0, 6) == 0 else bytes(int(rng.integers(0, 120)))
                headers = (("h", b"v"), ("n", None)) if rng.integers(0, 4) == 0 else ()
                ts = BASE_TS + int(rng.integers(-5_000, 5_000)) + 10 * i
                recs.append(Record(key, value, ts, headers))
            log.append(recs)
            if rng.integers(0, 4) == 0:
                log.roll()


def _files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.suffix in (".log", ".index", ".timeindex")
            or p.name.startswith("cleaner")}


def _clean_all(path: Path, cfg: dict, budgets: list[int], no_numba: bool, monkeypatch) -> list[tuple]:
    if no_numba:
        monkeypatch.setenv("SEGLOG_NO_NUMBA", "1")
    else:
        monkeypatch.delenv("SEGLOG_NO_NUMBA", raising=False)
    out = []
    now = BASE_TS + 10_000
    with Log.open(path, cfg) as log:
        for budget in budgets:
            try:
                r = log.clean(now, dedupe_buffer_bytes=budget, force=True)
                out.append((r.cleaned, r.first_dirty_after, r.records_read, r.records_removed, r.bytes_written,
                            r.map_entries, r.map_bytes, r.groups))
            except Exception as exc:          # the same refusal on both sides
                out.append((type(exc).__name__,))
            now += 40_000
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), codec=st.sampled_from(["producer", "gzip", "lz4", "zstd"]),
       timestamp_type=st.sampled_from(["CreateTime", "CreateTime", "LogAppendTime"]),
       budgets=st.lists(st.sampled_from([300, 2_000, 20_000, 1 << 20]), min_size=1, max_size=3))
def test_compiled_clean_equals_reference(tmp_path_factory, monkeypatch, seed, codec, timestamp_type, budgets):
    tmp = tmp_path_factory.mktemp("diff")
    cfg = {"cleanup.policy": "compact", "segment.bytes": 3000, "index.interval.bytes": 500,
           "compression.type": codec, "message.timestamp.type": timestamp_type, "delete.retention.ms": 30_000}
    rng = np.random.default_rng(seed)
    src = tmp / "src" / "t-0"
    monkeypatch.delenv("SEGLOG_NO_NUMBA", raising=False)
    _write(src, rng, int(rng.integers(3, 25)), cfg)
    results, files = [], []
    for no_numba in (False, True):
        d = tmp / f"run{int(no_numba)}" / "t-0"
        shutil.copytree(src, d)
        results.append(_clean_all(d, cfg, budgets, no_numba, monkeypatch))
        files.append(_files(d))
    assert results[0] == results[1]
    assert files[0].keys() == files[1].keys()
    for name in files[0]:
        assert files[0][name] == files[1][name], name
    shutil.rmtree(tmp, ignore_errors=True)


def test_a_compiled_clean_walks_each_chunk_once_per_pass_and_never_decodes(tmp_path, monkeypatch):
    monkeypatch.delenv("SEGLOG_NO_NUMBA", raising=False)
    k = offset_map.clean_kernels()
    walks = []
    real_walk = k.walk_records
    monkeypatch.setattr(k, "walk_records", lambda a, p, n: walks.append(len(p)) or real_walk(a, p, n))

    def no_decode(*args, **kwargs):
        raise AssertionError("decoded into Arrow")
    monkeypatch.setattr(clean_batches, "decode_to_arrow", no_decode)
    cfg = {"cleanup.policy": "compact", "segment.bytes": 4000}
    with Log.open(tmp_path / "t-0", cfg) as log:
        for i in range(40):
            log.append([Record(b"k%d" % (j % 7), b"v" * 50, BASE_TS + i) for j in range(10)])
        log.roll()
        segments = len(log.segments()) - 1
        res = log.clean(BASE_TS + 1000, force=True)
    assert res.cleaned and segments > 3
    # Segments under 64 KiB are one chunk each: one walk to map each, one to filter each.
    assert len(walks) == 2 * segments
    assert sum(walks) == 2 * 40


def test_a_structural_fault_behind_a_good_crc_raises_and_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("SEGLOG_NO_NUMBA", raising=False)
    cfg = {"cleanup.policy": "compact", "segment.bytes": 1 << 20}
    part = tmp_path / "t-0"
    with Log.open(part, cfg) as log:
        log.append([Record(b"k%d" % (j % 3), b"value", BASE_TS) for j in range(6)])
        log.roll()
        seg_path = log.segments()[0].log_path
    raw = bytearray(seg_path.read_bytes())
    # The first record's key length says 100: past the record's end. Its CRC made good again.
    first = BATCH_HEADER_SIZE
    assert raw[first + 4] == 4            # length varint, attributes, ts delta, offset delta, key length (2 -> 4)
    raw[first + 4] = 100
    struct.pack_into(">I", raw, CRC_OFFSET, crc32c.crc32c(bytes(raw[ATTRIBUTES_OFFSET:])))
    seg_path.write_bytes(bytes(raw))
    before = _files(part)
    with Log.open(part, cfg) as log:
        with pytest.raises(CorruptRecordError):
            log.clean(BASE_TS + 1000, force=True)
    assert _files(part) == before
    assert os.environ.get("SEGLOG_NO_NUMBA") is None


def test_a_budget_far_above_the_machine_reserves_only_what_the_dirty_section_can_need(tmp_path, monkeypatch):
    monkeypatch.delenv("SEGLOG_NO_NUMBA", raising=False)
    with Log.open(tmp_path / "t-0", {"cleanup.policy": "compact", "segment.bytes": 2000}) as log:
        for i in range(30):
            log.append([Record(b"k%d" % (i % 4), b"v" * 40, BASE_TS + i)])
        log.roll()
        res = log.clean(BASE_TS + 1000, dedupe_buffer_bytes=1 << 46, force=True)   # 64 TiB
    assert res.cleaned and res.map_entries == 4
