"""OffsetIndex (.index, docs/spec.md §2.3): property tests against a brute-force model, and targeted ones
for preallocation, crashes, readers beside a writer, trimming and corrupt files."""
from __future__ import annotations

import bisect
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog.errors import ReadOnlyLogError, SeglogError
from seglog.indexer.indexes.mmap_index import (
    IndexClosedError,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidIndexEntryError,
)
from seglog.indexer.indexes.offset_index import OffsetIndex

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=150, deadline=None)

# Strictly increasing (offset, position) pairs, built from positive steps.
steps = st.lists(st.tuples(st.integers(1, 1000), st.integers(1, 5000)), max_size=60)
bases = st.sampled_from([0, 1, 7, 1 << 20, (1 << 40) + 3])


def build(base: int, deltas: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, off, pos = [], base, 0
    for d_off, d_pos in deltas:
        off += d_off
        pos += d_pos
        out.append((off, pos))
    return out


def model_floor(entries: list[tuple[int, int]], base: int, target: int) -> tuple[int, int]:
    best = (base, 0)
    for off, pos in entries:
        if off <= target:
            best = (off, pos)
    return best


def probes(entries: list[tuple[int, int]], base: int) -> list[int]:
    out = {base - 1, base, base + 1, base + (1 << 31) + 5}
    for off, _ in entries:
        out.update((off - 1, off, off + 1))
    return sorted(out)


def check_against_model(idx: OffsetIndex, entries: list[tuple[int, int]], base: int) -> None:
    assert idx.entries == len(entries)
    assert [idx.entry(i) for i in range(idx.entries)] == entries
    assert idx.last_entry() == (entries[-1] if entries else None)
    for target in probes(entries, base):
        assert idx.lookup(target) == model_floor(entries, base, target), target
    offsets, positions = idx.offsets_and_positions()
    assert offsets.tolist() == [o for o, _ in entries]
    assert positions.tolist() == [p for _, p in entries]


def raw_entries(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [struct.unpack_from(">ii", data, i) for i in range(0, len(data) - len(data) % 8, 8)]


# ---- properties -------------------------------------------------------------------------------
@SETTINGS
@given(base=bases, deltas=steps)
def test_lookup_is_a_floor_and_survives_reopen_and_trim(base, deltas):
    entries = build(base, deltas)
    size = 8 * 64 + 5  # rounded down to 64 slots
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "0.index"
        idx = OffsetIndex(path, base, size)
        # the preallocation is reserved by the first entry, not by the open (space only to append)
        assert idx.max_entries == 64 and path.stat().st_size == 0
        for off, pos in entries:
            idx.append(off, pos)
        assert path.stat().st_size == (512 if entries else 0)
        check_against_model(idx, entries, base)
        assert idx.sanity_check() == []

        # A reader beside the open writer.
        with OffsetIndex(path, base, size, writable=False) as reader:
            check_against_model(reader, entries, base)
            assert reader.sanity_check() == []
        idx.close()

        # Reopen preallocated: the zero tail is not entries.
        with OffsetIndex(path, base, size) as idx:
            check_against_model(idx, entries, base)
            idx.trim()
            assert path.stat().st_size == 8 * len(entries)
            assert idx.is_trimmed and idx.max_entries == len(entries) and idx.is_full()
        # Sealed: reopened as is, readonly and writable.
        for writable in (False, True):
            with OffsetIndex(path, base, size, writable=writable, preallocate=False) as idx:
                check_against_model(idx, entries, base)
                assert idx.sanity_check() == [] and idx.open_problems == []
        assert path.stat().st_size == 8 * len(entries)


@SETTINGS
@given(base=bases, deltas=steps, more=steps, cut_frac=st.floats(0, 1), cut_jitter=st.integers(-2, 2))
def test_truncate_then_append_matches_model(base, deltas, more, cut_frac, cut_jitter):
    entries = build(base, deltas)
    hi = entries[-1][0] if entries else base
    cut = base + int((hi - base) * cut_frac) + cut_jitter
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "0.index"
        with OffsetIndex(path, base, 8 * 200) as idx:
            for off, pos in entries:
                idx.append(off, pos)
            idx.truncate_to(cut)
            kept = [e for e in entries if e[0] < cut]
            check_against_model(idx, kept, base)
            # Appends resume after the last kept entry.
            last_off, last_pos = kept[-1] if kept else (max(base, cut - 1), 0)
            extra = [(last_off + o - base, last_pos + p) for o, p in build(base, more)]
            for off, pos in extra:
                idx.append(off, pos)
            check_against_model(idx, kept + extra, base)
            assert idx.sanity_check() == []
        # The dropped slots were zeroed: a reopen counts exactly the kept entries.
        with OffsetIndex(path, base, 8 * 200, writable=False) as idx:
            check_against_model(idx, kept + extra, base)
            assert idx.sanity_check() == []


# ---- crashes and preallocated tails -----------------------------------------------------------
def test_zero_tail_after_a_crash_is_never_read_as_entries(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    code = (
        "import os, sys\n"
        "from seglog.indexer.indexes.offset_index import OffsetIndex\n"
        f"idx = OffsetIndex({str(path)!r}, 0, 8 * 1000)\n"
        "for i in range(1, 101):\n"
        "    idx.append(i * 3, i * 100)\n"
        "os._exit(0)  # dies: no trim, no flush, no close\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert path.stat().st_size == 8000  # the preallocated tail is still there
    assert raw_entries(path)[100:] == [(0, 0)] * 900
    with OffsetIndex(path, 0, 8 * 1000) as idx:
        assert idx.entries == 100
        assert idx.last_entry() == (300, 10000)
        # Past the end, the floor is the last real entry, never a (0, 0) from the padding.
        assert idx.lookup(10**9) == (300, 10000)
        assert (idx.offsets_and_positions()[1] > 0).all()
        assert idx.sanity_check() == []
        idx.append(301, 10001)
    with OffsetIndex(path, 0, 8 * 1000, writable=False) as idx:
        assert idx.entries == 101


def test_empty_preallocated_index_is_all_padding(tmp_path):
    path = tmp_path / "5.index"
    with OffsetIndex(path, 5, 80) as idx:
        assert path.read_bytes() == b""          # reserved only to append (mmap_index's module doc)
        idx.reserve()
    assert path.read_bytes() == bytes(80)
    with OffsetIndex(path, 5, 80, writable=False) as idx:
        assert idx.entries == 0 and idx.max_entries == 10
        assert idx.lookup(5) == (5, 0) and idx.lookup(10**6) == (5, 0)
        assert idx.last_entry() is None and idx.last_offset() == 5
        assert idx.sanity_check() == []


def test_zero_length_file(tmp_path):
    path = tmp_path / "9.index"
    path.touch()
    with OffsetIndex(path, 9, 80, writable=False, preallocate=False) as idx:
        assert idx.entries == 0 and idx.max_entries == 0 and idx.is_full()
        assert idx.lookup(100) == (9, 0)
        assert len(idx.entries_view()) == 0
        assert idx.sanity_check() == []
    with OffsetIndex(path, 9, 80, preallocate=False) as idx:
        with pytest.raises(IndexFullError):
            idx.append(10, 1)
        idx.resize(80)
        idx.append(10, 1)
        assert idx.lookup(100) == (10, 1)
        idx.trim()
    assert path.stat().st_size == 8


def test_torn_entry_without_its_marker_is_not_an_entry(tmp_path):
    # A crash between the payload store and the marker store leaves (rel, 0) in the first free slot.
    path = tmp_path / "0.index"
    with OffsetIndex(path, 0, 80) as idx:
        idx.append(1, 10)
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(struct.pack(">i", 2))
    with OffsetIndex(path, 0, 80) as idx:
        assert idx.entries == 1 and idx.sanity_check() == []
        idx.append(3, 20)
        assert raw_entries(path)[:3] == [(1, 10), (3, 20), (0, 0)]


# ---- a reader beside a writer -----------------------------------------------------------------
def test_reader_follows_a_writer_with_refresh(tmp_path):
    path = tmp_path / "0.index"
    writer = OffsetIndex(path, 0, 8 * 100)
    for i in range(1, 11):
        writer.append(i, i * 10)
    reader = OffsetIndex(path, 0, 8 * 100, writable=False)
    assert reader.entries == 10
    for i in range(11, 21):
        writer.append(i, i * 10)
    assert reader.entries == 10 and reader.lookup(15) == (10, 100)  # counted at open
    assert reader.refresh() == 20 and reader.lookup(15) == (15, 150)
    # The writer seals: trims under the reader (the file shrinks). No SIGBUS, same entries.
    writer.trim()
    assert reader.refresh() == 20 and reader.max_entries == 20
    assert reader.lookup(10**6) == (20, 200)
    # ... and resizes again (truncation made it active again).
    writer.truncate_to(15)
    writer.resize(8 * 100)
    writer.append(15, 155)
    assert reader.refresh() == 15 and reader.last_entry() == (15, 155)
    with pytest.raises(ReadOnlyLogError):
        reader.append(16, 160)
    with pytest.raises(ReadOnlyLogError):
        reader.truncate_to(3)
    reader.close()
    writer.close()


def test_readonly_open_never_changes_the_file(tmp_path):
    path = tmp_path / "0.index"
    with OffsetIndex(path, 0, 80) as idx:
        idx.append(1, 10)
        idx.trim()
    before = path.read_bytes()
    with OffsetIndex(path, 0, 8000, writable=False, preallocate=True) as idx:
        assert idx.entries == 1 and idx.max_entries == 1
    assert path.read_bytes() == before
    with pytest.raises(FileNotFoundError):
        OffsetIndex(tmp_path / "missing.index", 0, 80, writable=False)


# ---- API rules --------------------------------------------------------------------------------
def test_append_refuses_entries_that_break_the_rules(tmp_path):
    base = 1000
    with OffsetIndex(tmp_path / "i.index", base, 8 * 3 + 5) as idx:
        assert idx.max_entries == 3
        with pytest.raises(InvalidIndexEntryError, match="position 0"):
            idx.append(1001, 0)  # the first batch of a segment is never indexed
        with pytest.raises(InvalidIndexEntryError):
            idx.append(1001, -5)
        with pytest.raises(IndexOffsetOverflowError):
            idx.append(999, 10)  # below the base
        with pytest.raises(IndexOffsetOverflowError):
            idx.append(base + 2**31, 10)
        assert idx.fits(base + 2**31 - 1) and not idx.fits(base + 2**31) and not idx.fits(base - 1)
        idx.append(1005, 100)
        with pytest.raises(InvalidIndexEntryError, match="strictly increasing"):
            idx.append(1005, 200)  # offset not increasing
        with pytest.raises(InvalidIndexEntryError, match="strictly increasing"):
            idx.append(1006, 100)  # position not increasing
        with pytest.raises(InvalidIndexEntryError):
            idx.append(1004, 300)
        idx.append(1006, 101)
        assert not idx.is_full()
        idx.append(base + 2**31 - 1, 2**31 - 1)
        assert idx.is_full()
    # A full index refuses a valid next entry with IndexFullError (not an ordering error).
    with OffsetIndex(tmp_path / "j.index", 0, 16) as idx:
        idx.append(1, 1)
        idx.append(2, 2)
        with pytest.raises(IndexFullError, match="full"):
            idx.append(3, 3)
        assert isinstance(IndexFullError("x"), SeglogError)
        assert idx.entries == 2 and idx.sanity_check() == []


def test_entry_bounds_and_closed_index(tmp_path):
    idx = OffsetIndex(tmp_path / "i.index", 0, 80)
    idx.append(4, 40)
    assert idx.entry(0) == idx.entry(-1) == (4, 40)
    with pytest.raises(IndexError):
        idx.entry(1)
    view = idx.entries_view()
    assert not view.flags.owndata and not view.flags.writeable
    idx.close()
    idx.close()  # idempotent
    assert view["pos"].tolist() == [40]  # a live view keeps its map alive past close()
    with pytest.raises(IndexClosedError):
        idx.lookup(4)
    with pytest.raises(IndexClosedError):
        idx.append(5, 50)


def test_rename_keeps_the_map_valid(tmp_path):
    old, new = tmp_path / "0.index", tmp_path / "0.index.deleted"
    with OffsetIndex(old, 0, 80) as idx:
        idx.append(1, 10)
        idx.rename_to(new)
        assert idx.path == new and not old.exists()
        idx.append(2, 20)
        assert idx.lookup(5) == (2, 20)
        idx.trim()
        idx.flush()
    assert new.stat().st_size == 16
    with OffsetIndex(new, 0, 80, preallocate=False) as idx:
        assert [idx.entry(i) for i in range(2)] == [(1, 10), (2, 20)]


def test_resize_never_drops_entries(tmp_path):
    with OffsetIndex(tmp_path / "0.index", 0, 80) as idx:
        for i in range(1, 6):
            idx.append(i, i)
        idx.resize(8)  # smaller than the entries held: kept whole
        assert idx.entries == 5 and idx.max_entries == 5 and idx.is_full()
        idx.resize(800)
        assert idx.max_entries == 100 and not idx.is_full()
        idx.append(6, 6)
        assert idx.lookup(6) == (6, 6)


def test_large_index_lookup_reads_entries_not_the_file(tmp_path):
    # 1.25M entries (10 MB, Kafka's default segment.index.bytes): lookups by binary search.
    n = 10 * 1024 * 1024 // 8
    path = tmp_path / "0.index"
    rel = np.arange(1, n + 1, dtype=np.int64) * 2
    arr = np.empty(n, dtype=OffsetIndex.ENTRY_DTYPE)
    arr["rel"], arr["pos"] = rel, rel * 4
    path.write_bytes(arr.tobytes())
    with OffsetIndex(path, 0, 0, writable=False, preallocate=False) as idx:
        assert idx.entries == n and idx.sanity_check() == []
        for target in (0, 1, 2, 3, 1001, 2 * n - 1, 2 * n, 10**9):
            i = bisect.bisect_right(rel, target) - 1
            expect = (0, 0) if i < 0 else (int(rel[i]), int(rel[i] * 4))
            assert idx.lookup(target) == expect


# ---- corrupt files ----------------------------------------------------------------------------
def write_raw(path: Path, entries: list[tuple[int, int]], extra: bytes = b"") -> None:
    path.write_bytes(b"".join(struct.pack(">ii", r, p) for r, p in entries) + extra)


def test_sanity_check_reports_a_size_not_a_multiple_of_entries(tmp_path):
    path = tmp_path / "0.index"
    write_raw(path, [(1, 10), (2, 20)], extra=b"\x01\x02\x03")
    with OffsetIndex(path, 0, 0, writable=False, preallocate=False) as idx:
        assert idx.entries == 2
        problems = idx.sanity_check()
        assert any("not a multiple of the entry size 8" in p for p in problems)
        assert idx.open_problems
    # A garbage file of 5 bytes: no entry, still reported.
    short = tmp_path / "1.index"
    short.write_bytes(b"\xff" * 5)
    with OffsetIndex(short, 1, 0, writable=False, preallocate=False) as idx:
        assert idx.entries == 0
        assert any("size 5" in p for p in idx.sanity_check())


def test_sanity_check_reports_entries_out_of_order(tmp_path):
    path = tmp_path / "0.index"
    write_raw(path, [(1, 10), (5, 20), (3, 30), (6, 30), (7, 40)])
    with OffsetIndex(path, 0, 0, writable=False, preallocate=False) as idx:
        problems = idx.sanity_check()
        assert any("offset not above" in p and "entry 2" in p for p in problems)
        assert any("position not above" in p and "entry 3" in p for p in problems)
    below = tmp_path / "100.index"
    write_raw(below, [(-3, 10), (1, 0)])  # offset below base; a zero position mid-file
    with OffsetIndex(below, 100, 0, writable=False, preallocate=False) as idx:
        problems = idx.sanity_check()
        assert any("below the base 100" in p for p in problems)
        assert any("zero entries" in p or "position <= 0" in p for p in problems)


def test_sanity_check_reports_garbage_after_the_padding_and_a_zero_tail_in_a_sealed_file(tmp_path):
    path = tmp_path / "0.index"
    write_raw(path, [(1, 10), (2, 20), (0, 0), (0, 0), (9, 90), (0, 0)])  # a hole
    with OffsetIndex(path, 0, 0, writable=False, preallocate=True) as idx:
        assert idx.entries == 2
        assert any("slot 4 holds non-zero bytes" in p for p in idx.sanity_check())
    sealed = tmp_path / "1.index"
    write_raw(sealed, [(1, 10), (2, 20), (0, 0)])
    with OffsetIndex(sealed, 0, 0, writable=False, preallocate=False) as idx:
        assert idx.entries == 2 and not idx.is_trimmed
        assert any("expected to be trimmed" in p for p in idx.sanity_check())
    with OffsetIndex(sealed, 0, 0, writable=False, preallocate=True) as idx:
        assert idx.sanity_check() == []  # a zero tail is what an active file looks like


def test_reader_opening_while_a_writer_trims_never_fails(tmp_path):
    """Readers take no lock: one that stats an index just before a writer trims it (a clean close, a
    seal) must still open it. Without the re-stat this loop fails hundreds of times."""
    import threading

    path = tmp_path / "race.index"
    writer = OffsetIndex(path, 0, 1 << 20)
    for i in range(1, 50):
        writer.append(i, i * 100)
    stop = threading.Event()

    def trim_and_extend():
        while not stop.is_set():
            writer.trim(fsync=False)
            writer.resize(1 << 20)

    thread = threading.Thread(target=trim_and_extend)
    thread.start()
    try:
        for _ in range(5000):
            reader = OffsetIndex(path, 0, 1 << 20, writable=False, preallocate=None)
            assert reader.lookup(30) == (30, 3000)
            reader.close()
    finally:
        stop.set()
        thread.join()
        writer.close()
