"""The cleaner's pure plan (indexer/compaction/clean_plan.py, docs/spec.md §3.9): the dirty section, the dirty
ratio against min.cleanable.dirty.ratio (strictly above, as Kafka), the two compaction lags, the
active segment and an open transaction as limits, and the grouping bounds."""
from __future__ import annotations

from seglog.conf.topic_config import validate_topic_config
from seglog.indexer.compaction.clean_plan import CleanFacts, first_dirty_offset, groups, plan

NOW = 1_000_000


def facts(*sizes, ts=None, entries=1):
    out, base = [], 0
    for i, size in enumerate(sizes):
        nxt = base + 10
        t = ts[i] if ts else 100
        out.append(CleanFacts(base, nxt, size, t, t, entries, entries))
        base = nxt
    return out


def cfg(**kw):
    return validate_topic_config({"cleanup.policy": "compact", **{k.replace("_", "."): v for k, v in kw.items()}})


def test_dirty_ratio_and_its_threshold():
    f = facts(100, 100, 100, 50)                       # the last (active) never counts
    p = plan(f, cfg(), checkpoint=10, log_start=0, now=NOW)
    assert (p.first_dirty, p.first_uncleanable, p.clean_bytes, p.dirty_bytes) == (10, 30, 100, 200)
    assert abs(p.dirty_ratio - 2 / 3) < 1e-9 and p.due
    assert not plan(f, cfg(**{"min_cleanable_dirty_ratio": 2 / 3}), checkpoint=10, log_start=0, now=NOW).due
    assert not plan(f, cfg(), checkpoint=30, log_start=0, now=NOW).dirty_bytes


def test_checkpoint_reset_as_kafka():
    assert first_dirty_offset(None, 5, 50) == 5
    assert first_dirty_offset(3, 5, 50) == 5          # below the log start
    assert first_dirty_offset(60, 5, 50) == 5         # past the log end
    assert first_dirty_offset(20, 5, 50) == 20


def test_min_compaction_lag_stops_at_the_first_young_segment():
    f = facts(100, 100, 100, 10, ts=[NOW - 5000, NOW - 100, NOW - 5000, NOW])
    p = plan(f, cfg(**{"min_compaction_lag_ms": 1000}), checkpoint=None, log_start=0, now=NOW)
    assert p.first_uncleanable == 10 and p.dirty_bytes == 100


def test_max_compaction_lag_forces_a_clean_below_the_ratio():
    f = facts(1000, 1000, 10, 10, ts=[NOW - 50_000, NOW - 50_000, NOW - 50_000, NOW])
    lazy = cfg(**{"min_cleanable_dirty_ratio": 0.99})
    assert not plan(f, lazy, checkpoint=20, log_start=0, now=NOW).due
    forced = plan(f, cfg(**{"min_cleanable_dirty_ratio": 0.99, "max_compaction_lag_ms": 10_000}), checkpoint=20,
                  log_start=0, now=NOW)
    assert forced.due and "max.compaction.lag.ms" in forced.reason


def test_an_open_transaction_ends_the_dirty_section():
    p = plan(facts(100, 100, 100, 10), cfg(), checkpoint=None, log_start=0, now=NOW, first_unstable=15)
    assert p.first_uncleanable == 15 and p.dirty_bytes == 100


def test_groups_respect_segment_bytes_and_index_size():
    c = cfg(**{"segment_bytes": 1024, "segment_index_bytes": 1024})
    f = facts(400, 400, 400, 100, 100, 10)
    assert [[x.base for x in g] for g in groups(f, 50, c)] == [[0, 10], [20, 30, 40]]
    many = facts(10, 10, 10, 10, entries=30)          # 3 x 30 entries of 12 bytes pass 1024
    assert [len(g) for g in groups(many, 40, c)] == [2, 1]
    assert groups(f, 10, c) == [[f[0]]]               # only segments below the map's end


def test_the_remote_end_is_the_plans_start_and_no_group_reaches_below_it():
    """docs/tiered-storage.md §4: a topic tiered, then switched to compact: segments below the remote end
    are neither clean nor dirty (no ratio counts them) and no cleaned group holds one."""
    f = facts(100, 100, 100, 100, 10)
    p = plan(f, cfg(), checkpoint=10, log_start=0, now=NOW, tiered_end=20)
    assert (p.first_dirty, p.clean_bytes, p.dirty_bytes) == (20, 0, 200)     # the checkpoint below it: moved up
    p = plan(f, cfg(), checkpoint=30, log_start=0, now=NOW, tiered_end=20)
    assert (p.first_dirty, p.clean_bytes, p.dirty_bytes) == (30, 100, 100)   # clean bytes from the remote end only
    assert not plan(f, cfg(), checkpoint=None, log_start=0, now=NOW, tiered_end=40).dirty_bytes   # all tiered
    c = cfg(**{"segment_bytes": 1 << 20})
    assert [[x.base for x in g] for g in groups(f, 40, c)] == [[0, 10, 20, 30]]
    assert [[x.base for x in g] for g in groups(f, 40, c, 20)] == [[20, 30]]
    assert groups(f, 40, c, 40) == []
