"""Crash safety of a clean (docs/spec.md §3.9): a crash at every rename of the swap, then recovery
on open, decided from the file names alone (indexer/compaction/clean_swap.py).

The crash is a fault injected at the n-th rename (for every n a clean makes), after which the Log
is dropped without closing (as a killed process leaves it). Reopening must then give a log that
reads, with no offset twice: every record the finished clean keeps, and otherwise only records the
log held before the clean, unchanged at their offsets; `verify` finds nothing; no `.cleaned` or
`.swap` file is left; and a second clean reaches exactly the finished clean's result.
"""
from __future__ import annotations

import os
import shutil

import pytest

from seglog.indexer import Log, Record, recovery
from seglog.indexer.compaction import clean_swap
from tests.crashing_os import CrashingOs, run_crashing_at

CFG = {"cleanup.policy": "compact", "segment.bytes": 1024, "index.interval.bytes": 64,
       "delete.retention.ms": 3_600_000, "segment.index.bytes": 4096}
NOW = 2_000_000_000_000


def _fill(path):
    with Log.open(path, CFG) as log:
        for i in range(40):
            log.append([Record(key=b"k%d" % ((i * 7 + j) % 9), value=None if (i + j) % 17 == 0 else b"v%d-%d" % (i, j),
                               timestamp=1_000_000 + i) for j in range(6)])
        return [(r.offset, r.key, r.value, r.timestamp) for r in log.read()]


def _count_renames(tmp_path, monkeypatch) -> int:
    path = tmp_path / "count" / "state-0"
    _fill(path)
    fake = CrashingOs(10 ** 9)
    monkeypatch.setattr(clean_swap, "os", fake)
    monkeypatch.setattr(recovery, "os", fake)
    with Log.open(path, CFG) as log:
        log.clean(NOW, force=True)
        after = [(r.offset, r.key, r.value, r.timestamp) for r in log.read()]
    monkeypatch.undo()
    return fake.calls, after


def test_a_crash_at_any_rename_of_a_clean_is_repaired(tmp_path, monkeypatch):
    total, cleaned = _count_renames(tmp_path, monkeypatch)
    assert total > 10 and len(cleaned) < 100
    for n in range(total + 1):
        base = tmp_path / f"n{n}"
        path = base / "state-0"
        before = _fill(path)
        crashed = run_crashing_at(monkeypatch, n, path, CFG, lambda log: log.clean(NOW, force=True))
        assert crashed == (n < total)
        with Log.open(path, CFG) as log:
            got = [(r.offset, r.key, r.value, r.timestamp) for r in log.read()]
            offsets = [g[0] for g in got]
            assert offsets == sorted(set(offsets)), f"crash at rename {n}: an offset twice"
            assert set(cleaned) <= set(got), f"crash at rename {n}: a surviving record lost"
            assert set(got) <= set(before), f"crash at rename {n}: a record changed"
            assert log.verify() == []
            left = [f for f in os.listdir(path) if f.endswith((".cleaned", ".swap"))]
            assert left == []
            log.clean(NOW, force=True)
            assert [(r.offset, r.key, r.value, r.timestamp) for r in log.read()] == cleaned
        shutil.rmtree(base)


@pytest.mark.parametrize("leftover", ["cleaned", "index_swap_only"])
def test_recovery_undoes_a_clean_before_its_commit_point(tmp_path, leftover):
    path = tmp_path / "state-0"
    before = _fill(path)
    # A .cleaned segment (or index .swap files without their .log.swap) left by a crash: undone.
    for kind in (".index", ".timeindex", ".log"):
        suffix = ".cleaned" if leftover == "cleaned" or kind == ".log" else ".swap"
        if leftover == "index_swap_only" and kind == ".log":
            continue
        (path / f"{0:020d}{kind}{suffix}").write_bytes(b"junk")
    with Log.open(path, CFG) as log:
        assert any("interrupted clean" in line or "index swap" in line for line in log.recovery_report)
        assert [(r.offset, r.key, r.value, r.timestamp) for r in log.read()] == before
        assert log.verify() == []
    assert not [f for f in os.listdir(path) if f.endswith((".cleaned", ".swap"))]


def test_a_reader_listing_taken_mid_swap_never_skips_records(tmp_path):
    """Between the old segments' rename to .deleted and the .swap's rename in, a lock-free reader's
    listing lacks the group: reading across that hole raises (the source opens the log again), never
    returns the records after it as if the group's were not there."""
    from seglog.errors import SegmentDeletedError

    path = tmp_path / "state-0"
    _fill(path)
    with Log.open(path, CFG) as log:
        log.clean(NOW, force=True)
        bases = log.segment_bases()
        records = [r.offset for r in log.read()]
    middle = bases[len(bases) // 2]
    log_file = path / f"{middle:020d}.log"
    os.replace(log_file, str(log_file) + ".deleted")           # the group is gone, its swap not yet in
    with Log.open(path, readonly=True) as reader:
        with pytest.raises(SegmentDeletedError, match="swapped in while in use"):
            list(reader.read())
    os.replace(str(log_file) + ".deleted", log_file)            # the swap is in
    with Log.open(path, readonly=True) as reader:
        assert [r.offset for r in reader.read()] == records
