"""The sink's commit log: full states, merge of partitions, lowering only on request, races, retention."""
from __future__ import annotations

import multiprocessing as mp

import pytest

from seglog.indexer.commit_log import CommitConflictError, CommitLog, CorruptCommitError


def test_empty(tmp_path):
    log = CommitLog(tmp_path, "t")
    assert log.latest() is None and log.end_offsets() == {} and log.last_batch("w") is None


def test_commit_carries_partitions_forward(tmp_path):
    log = CommitLog(tmp_path, "t")
    s0 = log.commit("q1", 0, {0: 10, 1: 5})
    assert (s0.seq, s0.batch_id, s0.end_offsets, s0.writers) == (0, 0, {0: 10, 1: 5}, {"q1": 0})
    s1 = log.commit("q2", 7, {1: 9})
    assert s1.seq == 1 and s1.end_offsets == {0: 10, 1: 9} and s1.writers == {"q1": 0, "q2": 7}
    assert log.last_batch("q1") == 0 and log.last_batch("q2") == 7
    assert CommitLog(tmp_path, "t").end_offsets() == {0: 10, 1: 9}
    assert (tmp_path / "_seglog" / "commits" / "t" / f"{1:020d}.json").exists()


def test_lowering_only_when_asked(tmp_path):
    log = CommitLog(tmp_path, "t")
    log.commit("q", 0, {0: 10})
    with pytest.raises(CommitConflictError, match=r"\{0: \(10, 4\)\}"):
        log.commit("q", 1, {0: 4})
    assert log.end_offsets() == {0: 10} and log.last_batch("q") == 0
    state = log.commit("operator", -1, {0: 4}, allow_lower=True)
    assert state.end_offsets == {0: 4} and log.last_batch("q") == 0


def test_retention_keeps_last_n(tmp_path):
    log = CommitLog(tmp_path, "t", retain=3)
    for b in range(10):
        log.commit("q", b, {0: b + 1})
    assert [s.seq for s in log.history()] == [7, 8, 9]
    assert log.latest().end_offsets == {0: 10}


def test_bad_arguments(tmp_path):
    log = CommitLog(tmp_path, "t")
    for ends in ({-1: 3}, {0: -3}, {"0": 3}, {0: 1.5}):
        with pytest.raises(ValueError):
            log.commit("q", 0, ends)
    with pytest.raises(ValueError):
        log.commit("", 0, {0: 1})
    assert log.latest() is None


def test_corrupt_file_is_reported(tmp_path):
    log = CommitLog(tmp_path, "t")
    log.commit("q", 0, {0: 1})
    (log.dir / f"{1:020d}.json").write_text("{not json")
    with pytest.raises(CorruptCommitError, match="00000000000000000001.json"):
        log.latest()


def _committer(args):
    root, w, n = args
    log = CommitLog(root, "t", retain=1000)
    for b in range(n):
        log.commit(f"w{w}", b, {w: b + 1})


def test_concurrent_committers_lose_nothing(tmp_path):
    # 4 processes each commit 25 batches for their own partition: every commit gets its own seq and
    # the final state carries every writer's last batch and partition end.
    with mp.get_context("fork").Pool(4) as pool:
        pool.map(_committer, [(str(tmp_path), w, 25) for w in range(4)])
    log = CommitLog(tmp_path, "t")
    state = log.latest()
    assert state.seq == 99
    assert state.end_offsets == {0: 25, 1: 25, 2: 25, 3: 25}
    assert state.writers == {"w0": 24, "w1": 24, "w2": 24, "w3": 24}
    # each state is the previous plus one writer's step: ends never go backwards along the history
    hist = log.history()
    for a, b in zip(hist, hist[1:]):
        assert all(b.end_offsets.get(p, 0) >= o for p, o in a.end_offsets.items())
