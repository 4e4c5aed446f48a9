"""TimeIndex (.timeindex, docs/spec.md §2.4, Kafka 4.x's entry meaning): property tests against a
brute-force model of a segment's records, and targeted ones for the seal entry, full files, crashes,
the all-zero (0, base) entry and corrupt files."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog.errors import ReadOnlyLogError
from seglog.indexer.indexes.mmap_index import IndexFullError, IndexOffsetOverflowError, InvalidIndexEntryError
from seglog.indexer.indexes.time_index import TimeIndex

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=150, deadline=None)

# A segment's appends, one record per batch: (record timestamp, whether an index entry is due after
# it). Timestamps go backwards as CreateTime may; -1 is "no timestamp".
events = st.lists(st.tuples(st.one_of(st.just(-1), st.integers(0, 60)), st.booleans()), max_size=80)
bases = st.sampled_from([0, 3, 1 << 33])


class Segment:
    """Brute-force model: the records, and the entries Kafka's rules write."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.ts: list[int] = []  # record timestamps, by relative offset
        self.entries: list[tuple[int, int]] = []

    @property
    def next_offset(self) -> int:
        return self.base + len(self.ts)

    def max_ts(self) -> int:
        return max(self.ts, default=-1)

    def offset_of_max(self) -> int:
        """The offset of the first record holding the largest timestamp (its batch's last offset)."""
        return self.base + self.ts.index(self.max_ts()) if self.ts else self.base - 1

    def run(self, idx: TimeIndex, evs) -> None:
        for ts, index_now in evs:
            self.ts.append(ts)
            if index_now:
                entry = (self.max_ts(), self.offset_of_max())
                appended = idx.maybe_append(*entry)
                # (0, base) is all zeros: never written to a preallocated file (time_index.py)
                due = entry[0] > (self.entries[-1][0] if self.entries else -1) and entry != (0, self.base)
                assert appended == due
                if due:
                    self.entries.append(entry)

    def truncate(self, cut: int) -> None:
        self.ts = self.ts[:max(0, cut - self.base)]
        self.entries = [e for e in self.entries if e[1] < cut]

    def check_promises(self, entries) -> None:
        # Kafka's meaning: (T, O): every record at or below O has a timestamp <= T, O holds T, and
        # no record before O does.
        for t, o in entries:
            upto = self.ts[:o - self.base + 1]
            assert max(upto) == t and upto.index(t) == o - self.base


def model_lookup(entries, target):
    below = [e for e in entries if e[0] < target]
    return below[-1] if below else None


def check(idx: TimeIndex, seg: Segment, entries=None) -> None:
    entries = seg.entries if entries is None else entries
    assert idx.entries == len(entries)
    assert [idx.entry(i) for i in range(idx.entries)] == entries
    assert idx.last_entry() == (entries[-1] if entries else None)
    assert idx.max_timestamp() == (entries[-1][0] if entries else -1)
    targets = {-5, -1, 0, 10**15}
    for t, _ in entries:
        targets.update((t - 1, t, t + 1))
    for target in sorted(targets):
        assert idx.lookup(target) == model_lookup(entries, target), target
    ts, offs = idx.timestamps_and_offsets()
    assert list(zip(ts.tolist(), offs.tolist())) == entries
    seg.check_promises(entries)


# ---- properties -------------------------------------------------------------------------------
@SETTINGS
@given(base=bases, evs=events)
def test_entries_lookups_and_seal_match_the_model(base, evs):
    size = 12 * 100
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "0.timeindex"
        seg = Segment(base)
        with TimeIndex(path, base, size) as idx:
            seg.run(idx, evs)
            check(idx, seg)
            assert idx.sanity_check() == []
            with TimeIndex(path, base, size, writable=False) as reader:  # beside the writer
                check(reader, seg)
        with TimeIndex(path, base, size) as idx:  # reopened preallocated
            check(idx, seg)
            # Seal: (largest timestamp, its offset), appended unless the last entry holds it.
            max_ts, at = seg.max_ts(), seg.offset_of_max()
            sealed = list(seg.entries)
            if max_ts >= 0 and (not sealed or sealed[-1][0] < max_ts):
                sealed.append((max_ts, at))
            assert idx.seal_entry(max_ts, at) == (sealed != seg.entries)
            assert idx.seal_entry(max_ts, at) is False  # idempotent
            check(idx, seg, sealed)
            idx.trim()
        with TimeIndex(path, base, size, writable=False, preallocate=False) as idx:
            check(idx, seg, sealed)
            assert idx.is_trimmed and idx.sanity_check() == []
        with TimeIndex(path, base, size, preallocate=False) as idx:  # sealing again after a crash
            assert idx.seal_entry(max_ts, at) is False
            check(idx, seg, sealed)
        assert path.stat().st_size == 12 * len(sealed)


@SETTINGS
@given(base=bases, evs=events, more=events, cut_frac=st.floats(0, 1), cut_jitter=st.integers(-1, 1))
def test_truncate_then_append_matches_the_model(base, evs, more, cut_frac, cut_jitter):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "0.timeindex"
        seg = Segment(base)
        with TimeIndex(path, base, 12 * 200) as idx:
            seg.run(idx, evs)
            cut = max(base, base + int(len(seg.ts) * cut_frac) + cut_jitter)
            idx.truncate_to(cut)
            seg.truncate(cut)
            check(idx, seg)
            seg.run(idx, more)  # appends resume from the cut, the largest timestamp recomputed
            check(idx, seg)
            assert idx.sanity_check() == []
        with TimeIndex(path, base, 12 * 200, writable=False) as idx:  # dropped slots were zeroed
            check(idx, seg)
            assert idx.sanity_check() == []


# ---- the seal entry ---------------------------------------------------------------------------
def test_seal_keeps_the_last_entry_when_it_holds_the_largest_timestamp(tmp_path):
    with TimeIndex(tmp_path / "100.timeindex", 100, 12 * 10) as idx:
        assert idx.maybe_append(50, 100)   # an entry at the base offset is legal (Kafka writes it)
        assert idx.maybe_append(70, 103)
        assert idx.seal_entry(70, 103) is False
        assert idx.entries == 2 and idx.last_entry() == (70, 103)
        with pytest.raises(InvalidIndexEntryError):
            idx.seal_entry(70, 109)  # the largest timestamp has one first batch
        with pytest.raises(InvalidIndexEntryError):
            idx.seal_entry(60, 110)  # below the last entry's timestamp


def test_seal_appends_when_the_largest_timestamp_is_newer(tmp_path):
    with TimeIndex(tmp_path / "100.timeindex", 100, 12 * 10) as idx:
        idx.maybe_append(50, 101)
        assert idx.seal_entry(80, 109) is True
        assert [idx.entry(i) for i in range(2)] == [(50, 101), (80, 109)]
        assert idx.seal_entry(80, 109) is False
        assert idx.lookup(80) == (50, 101) and idx.lookup(81) == (80, 109)
    with TimeIndex(tmp_path / "200.timeindex", 200, 12 * 10) as idx:
        assert idx.seal_entry(5, 229) is True  # empty index: the seal entry is the only one
        assert idx.last_entry() == (5, 229)
    with TimeIndex(tmp_path / "300.timeindex", 300, 12 * 10) as idx:
        assert idx.seal_entry(-1, 299) is False  # no record had a timestamp: stays empty
        assert idx.entries == 0
        idx.trim()
        assert idx.is_trimmed and idx.file_size == 0


def test_seal_refuses_a_newer_timestamp_at_the_same_offset(tmp_path):
    with TimeIndex(tmp_path / "0.timeindex", 0, 120) as idx:
        idx.maybe_append(10, 5)
        with pytest.raises(InvalidIndexEntryError):
            idx.seal_entry(11, 5)
        with pytest.raises(IndexOffsetOverflowError):
            idx.seal_entry(11, 2**31)
        assert idx.entries == 1


def test_full_index_keeps_a_slot_for_the_seal_entry(tmp_path):
    path = tmp_path / "0.timeindex"
    with TimeIndex(path, 0, 12 * 3 + 7) as idx:
        assert idx.max_entries == 3
        assert idx.maybe_append(1, 1) and idx.maybe_append(2, 2)
        assert idx.is_full()
        assert idx.maybe_append(2, 3) is False  # nothing to write: no error even when full
        with pytest.raises(IndexFullError, match="seal"):
            idx.maybe_append(3, 3)
        assert idx.seal_entry(3, 3) is True
        assert idx.entries == 3 and idx.file_size == 36
        assert idx.seal_entry(3, 3) is False
    # A trimmed file without the seal entry grows two zero slots for it, then is trimmed again.
    trimmed = tmp_path / "1.timeindex"
    with TimeIndex(trimmed, 0, 120) as idx:
        idx.maybe_append(1, 1)
        idx.trim()
    with TimeIndex(trimmed, 0, 120, preallocate=False) as idx:
        assert idx.is_full()
        assert idx.seal_entry(9, 7) is True
        assert [idx.entry(i) for i in range(2)] == [(1, 1), (9, 7)]
        idx.trim()
        assert idx.is_trimmed
    assert trimmed.stat().st_size == 24


# ---- maybe_append rules -----------------------------------------------------------------------
def test_maybe_append_rules(tmp_path):
    with TimeIndex(tmp_path / "10.timeindex", 10, 120) as idx:
        assert idx.maybe_append(-1, 11) is False  # no timestamp is never indexed
        with pytest.raises(IndexOffsetOverflowError):
            idx.maybe_append(5, 9)  # below the base
        assert idx.maybe_append(0, 11) is True  # timestamp 0 is a real entry
        assert idx.maybe_append(0, 12) is False
        with pytest.raises(InvalidIndexEntryError):
            idx.maybe_append(1, 11)  # greater timestamp, same offset: a caller bug
        with pytest.raises(InvalidIndexEntryError):
            idx.maybe_append(0, 10)  # offsets never go backwards
        assert idx.maybe_append(7, 15)
        assert idx.lookup(0) is None and idx.lookup(1) == (0, 11) and idx.lookup(8) == (7, 15)
        idx.truncate_to(15)  # (7, 15) names the batch ending at 15, which is gone
        assert idx.last_entry() == (0, 11)
        idx.truncate_to(12)  # (0, 11) still holds: the record at 11 is kept
        assert idx.last_entry() == (0, 11)
        idx.truncate_to(11)
        assert idx.entries == 0
    with TimeIndex(tmp_path / "10.timeindex", 10, 120, writable=False) as ro:
        with pytest.raises(ReadOnlyLogError):
            ro.maybe_append(1, 11)
        with pytest.raises(ReadOnlyLogError):
            ro.seal_entry(1, 11)


# ---- crashes, padding and the all-zero entry --------------------------------------------------
def test_zero_tail_after_a_crash_is_never_an_entry_even_with_timestamp_zero(tmp_path):
    path = tmp_path / "00000000000000000000.timeindex"
    code = (
        "import os\n"
        "from seglog.indexer.indexes.time_index import TimeIndex\n"
        f"idx = TimeIndex({str(path)!r}, 0, 12 * 500)\n"
        "for i in range(50):\n"
        "    idx.maybe_append(i, i + 1)  # the first entry has timestamp 0\n"
        "os._exit(0)  # dies: no trim, no flush, no close\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    data = path.read_bytes()
    assert len(data) == 6000 and data[600:] == bytes(5400)
    with TimeIndex(path, 0, 12 * 500) as idx:
        assert idx.entries == 50
        assert idx.entry(0) == (0, 1)
        assert idx.last_entry() == (49, 50) and idx.max_timestamp() == 49
        assert idx.lookup(10**12) == (49, 50)  # never a (0, 0) from the padding
        assert idx.sanity_check() == []
        assert idx.seal_entry(60, 59) is True
        idx.trim()
    assert path.stat().st_size == 612


def test_the_all_zero_entry_counts_only_where_it_cannot_be_padding(tmp_path):
    # (0, base): timestamp 0 held by the first batch. A preallocated file never holds it (a crash
    # could not tell it from padding); the seal writes it, and a trimmed file keeps it.
    path = tmp_path / "0.timeindex"
    with TimeIndex(path, 7, 120) as idx:
        assert idx.maybe_append(0, 7) is False
        assert idx.entries == 0
        assert idx.seal_entry(0, 7) is True
        assert idx.entries == 1 and idx.last_entry() == (0, 7)
        idx.trim()
    assert path.read_bytes() == bytes(12)
    with TimeIndex(path, 7, 120, writable=False, preallocate=False) as ro:
        assert ro.entries == 1 and ro.last_entry() == (0, 7) and ro.is_trimmed
        assert ro.sanity_check() == []
    # Followed by a real entry, the zero first slot is an entry even in a preallocated file.
    two = tmp_path / "1.timeindex"
    write_raw(two, [(0, 0), (5, 3)], extra=bytes(12 * 8))
    with TimeIndex(two, 7, 120, writable=False) as ro:
        assert ro.entries == 2 and ro.entry(0) == (0, 7)
    # A trimmed file grown for a seal entry and killed before the write: zeros, no entry.
    grown = tmp_path / "2.timeindex"
    grown.write_bytes(bytes(24))
    with TimeIndex(grown, 7, 120, writable=False, preallocate=False) as ro:
        assert ro.entries == 0 and not ro.is_trimmed


def test_empty_and_zero_length_files(tmp_path):
    path = tmp_path / "0.timeindex"
    with TimeIndex(path, 0, 120) as idx:
        assert path.read_bytes() == b""          # reserved only to append (mmap_index's module doc)
        idx.reserve()
    assert path.read_bytes() == bytes(120)
    with TimeIndex(path, 0, 120, writable=False) as idx:
        assert idx.entries == 0 and idx.lookup(5) is None and idx.max_timestamp() == -1
    empty = tmp_path / "1.timeindex"
    empty.touch()
    with TimeIndex(empty, 1, 120, writable=False, preallocate=False) as idx:
        assert idx.entries == 0 and idx.lookup(5) is None and idx.sanity_check() == []


# ---- corrupt files ----------------------------------------------------------------------------
def write_raw(path: Path, entries, extra: bytes = b"") -> None:
    path.write_bytes(b"".join(struct.pack(">qi", t, r) for t, r in entries) + extra)


def test_sanity_check_reports_corrupt_files(tmp_path):
    short = tmp_path / "0.timeindex"
    write_raw(short, [(5, 1)], extra=b"\x00" * 7)
    with TimeIndex(short, 0, 0, writable=False, preallocate=False) as idx:
        assert any("not a multiple of the entry size 12" in p for p in idx.sanity_check())

    disorder = tmp_path / "1.timeindex"
    write_raw(disorder, [(5, 1), (4, 2), (6, 2), (-7, 9)])
    with TimeIndex(disorder, 0, 0, writable=False, preallocate=False) as idx:
        assert idx.entries == 4
        problems = idx.sanity_check()
        assert any("timestamp not above" in p and "entry 1" in p for p in problems)
        assert any("offset not above" in p and "entry 2" in p for p in problems)
        assert any("negative timestamp" in p for p in problems)
        assert idx.open_problems  # the cheap check at open saw the last two entries

    hole = tmp_path / "2.timeindex"
    write_raw(hole, [(5, 1), (0, 0), (0, 0), (9, 3)])
    with TimeIndex(hole, 0, 0, writable=False, preallocate=True) as idx:
        # A hole makes the count of a corrupt file ill-defined (the open reads the last slot
        # first); what matters is that the check reports it.
        problems = idx.sanity_check()
        assert any("non-zero bytes" in p or "not above" in p for p in problems), problems

    tail = tmp_path / "3.timeindex"
    write_raw(tail, [(5, 1), (0, 0)])
    with TimeIndex(tail, 0, 0, writable=False, preallocate=False) as idx:
        assert any("expected to be trimmed" in p for p in idx.sanity_check())
