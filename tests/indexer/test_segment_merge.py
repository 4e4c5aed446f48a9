"""Merging small segments (indexer/compaction/segment_merge.py, docs/spec.md §3.10): the plan's rules, and crash
safety of the swap (a crash at every rename, then recovery from the file names alone, as the
cleaner's tests/indexer/test_compaction_crash.py)."""
from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog.indexer import Log, Record, recovery
from seglog.indexer.compaction import clean_swap, segment_merge
from seglog.indexer.compaction.segment_merge import MergeFacts, plan
from seglog.conf.topic_config import validate_topic_config
from tests.crashing_os import Crash, CrashingOs, abandon, run_crashing_at

T0 = 1_700_000_000_000
CFG = {"segment.bytes": 4096, "index.interval.bytes": 100, "segment.index.bytes": 4096}


def _fill(path, segments=12, cfg=CFG):
    with Log.open(path, cfg, outside_commit_log=True) as log:
        for i in range(segments):
            log.append([Record(key=b"k%d" % j, value=b"v%d-%d" % (i, j) * 5, timestamp=T0 + i * 10 + j)
                        for j in range(4 + i % 3)])
            log.roll()
        log.append([Record(key=b"a", value=b"active", timestamp=T0 + 1000)])
        return [(r.offset, r.key, r.value, r.timestamp) for r in log.read()]


def _read(log):
    return [(r.offset, r.key, r.value, r.timestamp) for r in log.read()]


def _facts(sizes, *, first=None, largest=None, mergeable=None):
    out, base = [], 0
    for i, size in enumerate(sizes):
        out.append(MergeFacts(base, base + 10, size, (first or [T0] * len(sizes))[i],
                              (largest or [T0] * len(sizes))[i], 1, 1,
                              True if mergeable is None else mergeable[i]))
        base += 10
    return out


def _cfg(**kw):
    return validate_topic_config({"segment.bytes": 2000, **kw})


# ---------------------------------------------------------------------- the plan
def test_plan_groups_small_neighbours_within_segment_bytes():
    groups = plan(_facts([200, 400, 600, 900, 1800, 200, 200]), _cfg(), end=10**9)
    # 200+400+600 (+900 would pass 2000); 900 alone; 1800+200 (exactly 2000); 200 alone.
    assert [[f.base for f in g] for g in groups] == [[0, 10, 20], [40, 50]]


def test_plan_keeps_only_groups_with_a_small_segment():
    # 1200 + 800 fits segment.bytes but neither is below half of it (1000): nothing gained by a merge.
    assert plan(_facts([1200, 1000]), _cfg(), end=10**9) == []
    assert plan(_facts([1000, 1000]), _cfg(**{"segment.merge.small.bytes": 1001}), end=10**9) != []
    assert plan(_facts([10, 10]), _cfg(**{"segment.merge.small.bytes": 0}), end=10**9) == []


def test_plan_stops_at_the_end_the_unmergeable_and_the_breaks():
    facts = _facts([10, 10, 10, 10, 10, 10])
    assert [[f.base for f in g] for g in plan(facts, _cfg(), end=30)] == [[0, 10, 20]]
    blocked = _facts([10, 10, 10, 10], mergeable=[True, True, False, True])
    assert [[f.base for f in g] for g in plan(blocked, _cfg(), end=10**9)] == [[0, 10]]
    assert [[f.base for f in g] for g in plan(facts, _cfg(), end=10**9, breaks=(20,))] == [[0, 10], [20, 30, 40, 50]]


def test_plan_keeps_the_roll_rule_for_time():
    # segment.ms 100: the merged segment's timestamps must stay within 100 ms of its first.
    facts = _facts([10, 10, 10, 10], first=[T0, T0 + 50, T0 + 90, T0 + 150], largest=[T0 + 40, T0 + 80, T0 + 100, T0 + 160])
    groups = plan(facts, _cfg(**{"segment.ms": 100}), end=10**9)
    assert [[f.base for f in g] for g in groups] == [[0, 10, 20]]


def test_plan_keeps_offsets_within_int32_and_indexes_within_their_bytes():
    far = [MergeFacts(0, 10, 10, T0, T0, 1, 1, True), MergeFacts(10, 2**31 + 5, 10, T0, T0, 1, 1, True)]
    assert plan(far, _cfg(), end=2**40) == []
    full = [MergeFacts(b, b + 10, 10, T0, T0, 100, 100, True) for b in (0, 10)]
    assert plan(full, _cfg(**{"segment.index.bytes": 2000}), end=10**9) == []
    assert plan(full, _cfg(**{"segment.index.bytes": 4096}), end=10**9) != []


# ---------------------------------------------------------------------- the file work
def test_a_merge_keeps_every_record_and_indexes_as_an_append_would(tmp_path):
    path = tmp_path / "t-0"
    before = _fill(path)
    with Log.open(path, CFG, outside_commit_log=True) as log:
        n = len(log.segment_bases())
        res = segment_merge.merge_log(log)
        assert res.groups and len(log.segment_bases()) == n - res.segments_merged + len(res.groups)
        assert _read(log) == before and log.verify() == []
        merged = log.segment(res.groups[0][0])
        offsets_entries = merged.offset_index.offsets_and_positions()
    # An append of the same batches to an empty segment: the indexes a rebuild writes are the same.
    with Log.open(path, CFG, outside_commit_log=True) as log:
        seg = log.segment(res.groups[0][0])
        got = [a.tolist() for a in offsets_entries]
        assert got == [a.tolist() for a in seg.offset_index.offsets_and_positions()]
    copy = tmp_path / "copy" / "t-0"
    shutil.copytree(path, copy)
    for f in copy.glob(f"{res.groups[0][0]:020d}.*index"):
        f.unlink()                                # recovery rebuilds both by the one index rule
    with Log.open(copy, CFG, outside_commit_log=True) as log:
        seg = log.segment(res.groups[0][0])
        assert [a.tolist() for a in seg.offset_index.offsets_and_positions()] == got
    assert (copy / f"{res.groups[0][0]:020d}.timeindex").read_bytes() == \
        (path / f"{res.groups[0][0]:020d}.timeindex").read_bytes()


def test_segments_a_merge_cannot_carry_are_left_alone(tmp_path):
    path = tmp_path / "t-0"
    before = _fill(path)
    (path / f"{0:020d}.txnindex").write_bytes(b"")
    with Log.open(path, CFG, outside_commit_log=True) as log:
        res = segment_merge.merge_log(log)
        assert res.groups and all(0 not in g for g in res.groups)
        assert _read(log) == before


def test_nothing_at_or_above_the_committed_end_is_merged(tmp_path):
    from seglog.indexer.commit_log import CommitLog

    path = tmp_path / "t-0"
    before = _fill(path)
    with Log.open(path, CFG, outside_commit_log=True) as log:
        bases = log.segment_bases()
    CommitLog(tmp_path, "t").commit("sink", 1, {0: bases[4]})
    with Log.open(path, CFG, outside_commit_log=True) as log:
        res = segment_merge.merge_log(log)
        assert res.groups and max(b for g in res.groups for b in g) < bases[4]
        assert log.segment_bases()[-9:] == bases[-9:]
        assert _read(log) == before


SMALL_CFG = {**CFG, "segment.bytes": 1500}    # two groups: a crash lands in the first, the second and between


def _count_renames(tmp_path, monkeypatch):
    path = tmp_path / "count" / "t-0"
    _fill(path, cfg=SMALL_CFG)
    fake = CrashingOs(10 ** 9)
    monkeypatch.setattr(clean_swap, "os", fake)
    monkeypatch.setattr(recovery, "os", fake)
    with Log.open(path, SMALL_CFG, outside_commit_log=True) as log:
        res = segment_merge.merge_log(log)
        bases = log.segment_bases()
    monkeypatch.undo()
    return fake.calls, bases, res


def test_a_crash_at_any_rename_of_a_merge_loses_nothing(tmp_path, monkeypatch):
    total, merged_bases, res = _count_renames(tmp_path, monkeypatch)
    assert total > 10 and len(res.groups) >= 2
    for n in range(total + 1):
        base = tmp_path / f"n{n}"
        path = base / "t-0"
        before = _fill(path, cfg=SMALL_CFG)
        crashed = run_crashing_at(monkeypatch, n, path, SMALL_CFG, segment_merge.merge_log)
        assert crashed == (n < total)
        with Log.open(path, SMALL_CFG, outside_commit_log=True) as log:
            assert _read(log) == before, f"crash at rename {n}: a record lost, changed or read twice"
            assert log.verify() == []
            assert not [f for f in os.listdir(path) if f.endswith((".cleaned", ".swap"))]
            segment_merge.merge_log(log)           # the next pass finishes the work
            assert _read(log) == before
            assert log.segment_bases() == merged_bases
            assert log.verify() == []
        shutil.rmtree(base)


@pytest.mark.parametrize("stop_after", ["copy", "index"])
def test_a_crash_before_the_commit_point_changes_nothing(tmp_path, monkeypatch, stop_after):
    """Killed while writing the `.cleaned` segment: recovery removes it, the old segments stay."""
    path = tmp_path / "t-0"
    before = _fill(path)
    target = segment_merge._index if stop_after == "index" else segment_merge._copy

    def crash(*a, **kw):
        target(*a, **kw)
        raise Crash("killed")

    monkeypatch.setattr(segment_merge, "_index" if stop_after == "index" else "_copy", crash)
    log = Log.open(path, CFG, outside_commit_log=True)
    bases = log.segment_bases()
    with pytest.raises(Crash):
        segment_merge.merge_log(log)
    abandon(log)
    monkeypatch.undo()
    assert any(f.endswith(".cleaned") for f in os.listdir(path))
    with Log.open(path, CFG, outside_commit_log=True) as log:
        assert log.segment_bases() == bases and _read(log) == before and log.verify() == []
    assert not any(f.endswith(".cleaned") for f in os.listdir(path))


class _PausingOs(CrashingOs):
    """`os` as the swap code sees it, running `hook` before every os.replace (a reader between renames)."""

    def __init__(self, hook):
        super().__init__(10 ** 9)
        self.hook = hook

    def replace(self, a, b):
        self.hook(self.calls)
        return super().replace(a, b)


def test_a_reader_racing_the_swap_reads_everything_or_is_told_to_reopen(tmp_path, monkeypatch):
    """Between any two renames of a merge's swap, a lock-free reader opened then (a fresh listing) and
    one opened before the merge (a stale listing, some segments already open) either read exactly
    every record or raise SegmentDeletedError (the source opens the log again): never a record
    missing, twice, or the log start moved."""
    from seglog.errors import SegmentDeletedError
    from seglog.indexer import log as log_module

    monkeypatch.setattr(log_module, "_SETTLE_WAITS", (0, 0.001))
    path = tmp_path / "t-0"
    before = _fill(path, segments=6)
    stale = Log.open(path, readonly=True)
    assert [r.offset for r in stale.read(0, 5)] == [r[0] for r in before[:5]]     # segment 0 open, old listing
    outcomes = {"full": 0, "reopen": 0}

    def read_with(reader):
        try:
            got = _read(reader)
        except SegmentDeletedError:
            outcomes["reopen"] += 1
            return
        assert got == before, "a reader racing the swap read a different log"
        assert reader.log_start_offset == 0
        outcomes["full"] += 1

    def hook(n):
        try:
            reader = Log.open(path, readonly=True)
        except SegmentDeletedError:
            outcomes["reopen"] += 1
            return
        with reader:
            read_with(reader)
        if n % 3 == 0:
            read_with(stale)

    fake = _PausingOs(hook)
    monkeypatch.setattr(clean_swap, "os", fake)
    monkeypatch.setattr(recovery, "os", fake)
    with Log.open(path, CFG, outside_commit_log=True) as log:
        res = segment_merge.merge_log(log)
    monkeypatch.undo()
    assert res.groups and fake.calls > 10
    assert outcomes["full"] and outcomes["reopen"], outcomes
    read_with(stale)                            # after the swap, the stale listing: reopen, never wrong
    stale.close()
    with Log.open(path, readonly=True) as reader:
        assert _read(reader) == before


def test_a_compacted_partition_merges_on_either_side_of_the_cleaner_checkpoint(tmp_path):
    """Offsets keep their identity and no merged segment straddles the cleaner checkpoint, so the
    cleaner's next clean gives exactly what it gives without the merge."""
    from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset

    cfg = {"cleanup.policy": "compact", "segment.bytes": 4096, "index.interval.bytes": 100,
           "delete.retention.ms": 3_600_000, "segment.index.bytes": 4096}
    now = 2_000_000_000_000
    results = []
    for merge in (False, True):
        path = tmp_path / f"m{merge}" / "c-0"
        with Log.open(path, cfg, outside_commit_log=True) as log:
            for i in range(30):
                log.append([Record(key=b"k%d" % ((i * 5 + j) % 11), value=b"v%d-%d" % (i, j) * 8, timestamp=T0 + i)
                            for j in range(4)])
                log.roll()
            log.clean(now, force=True)
            checkpoint = cleaner_offset(path)
            for i in range(30, 50):
                log.append([Record(key=b"k%d" % (i % 13), value=b"w%d" % i * 8, timestamp=T0 + i) for _ in range(3)])
                log.roll()
            if merge:
                # Without the break at the checkpoint, the plan would merge across it.
                unbroken = plan(segment_merge.segment_facts(log), log.config, end=segment_merge.merge_end(log))
                assert any(g[0].base < checkpoint < g[-1].next_offset for g in unbroken)
                res = segment_merge.merge_log(log)
                assert res.groups
                bases = log.segment_bases()
                ends = {g[0]: bases[bases.index(g[0]) + 1] for g in res.groups}
                assert any(b >= checkpoint for b in ends)
                assert all(e <= checkpoint or b >= checkpoint for b, e in ends.items()), (checkpoint, ends)
                assert cleaner_offset(path) == checkpoint and log.verify() == []
            log.clean(now, force=True)
            results.append(_read(log))
    assert results[0] == results[1]


@st.composite
def _segment_runs(draw):
    n = draw(st.integers(0, 14))
    facts, base = [], draw(st.integers(0, 2**33))
    for _ in range(n):
        span = draw(st.sampled_from([1, 5, 100, 2**30, 2**31]))
        first = T0 + draw(st.integers(0, 500))
        facts.append(MergeFacts(base, base + span, draw(st.integers(1, 2500)), first, first + draw(st.integers(0, 300)),
                                draw(st.integers(0, 40)), draw(st.integers(0, 40)), draw(st.booleans() | st.just(True))))
        base += span
    return facts


@given(facts=_segment_runs(), end_at=st.integers(0, 15), small=st.sampled_from([-1, 0, 300, 1500]),
       segment_ms=st.sampled_from([50, 200, 10**9]), index_bytes=st.sampled_from([64, 500, 4096]),
       break_at=st.integers(0, 15))
@settings(max_examples=300, deadline=None)
def test_the_plan_against_its_rules(facts, end_at, small, segment_ms, index_bytes, break_at):
    """Every group obeys every rule (brute force over its members), and the greedy plan leaves no
    mergeable neighbour out that a rule would have let in."""
    cfg = _cfg(**{"segment.merge.small.bytes": small, "segment.ms": segment_ms, "segment.index.bytes": index_bytes})
    end = facts[end_at].base if end_at < len(facts) else 2**40
    breaks = (facts[break_at].base,) if break_at < len(facts) else ()
    groups = plan(facts, cfg, end=end, breaks=breaks)
    threshold = cfg["segment.bytes"] // 2 if small < 0 else small

    def fits(g):
        n = len(g)
        return (all(f.mergeable and f.next_offset <= end for f in g)
                and all(a.next_offset == b.base for a, b in zip(g, g[1:]))
                and not any(f.base in breaks for f in g[1:])
                and sum(f.size for f in g) <= cfg["segment.bytes"]
                and g[-1].next_offset - 1 - g[0].base <= 2**31 - 1
                and (sum(f.index_entries for f in g) + n) * 8 <= index_bytes
                and (sum(f.time_index_entries for f in g) + n + 1) * 12 <= index_bytes
                and max(f.largest_timestamp for f in g) - g[0].first_timestamp <= segment_ms)

    seen = set()
    for g in groups:
        assert len(g) >= 2 and fits(g) and any(f.size < threshold for f in g)
        assert not seen & {f.base for f in g}
        seen |= {f.base for f in g}
        # Greedy: the segment after the group could not have joined it.
        i = facts.index(g[-1])
        if i + 1 < len(facts):
            assert not fits(g + [facts[i + 1]])
    if threshold <= 0:
        assert groups == []
