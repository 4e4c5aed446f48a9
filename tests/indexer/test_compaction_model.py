"""Property test: compaction (docs/spec.md §3.9) against a brute-force model.

Random keyed appends (updates and tombstones over a few keys), rolls, cleans under random settings
(min.compaction.lag.ms, delete.retention.ms, segment.bytes, index.interval.bytes) and reopenings,
with a clock that moves. The model is a list of records plus Kafka's rules written out plainly: the
dirty section after the last clean's end, cut at the active segment and at the first segment inside
the compaction lag; a record below that cut survives when it is its key's latest in the dirty
section (or its key is not there), unless it is a tombstone whose horizon (the first clean that kept
it, plus delete.retention.ms) has passed. After every step: the log reads exactly the model's
surviving records at their original offsets (key, value, timestamp, headers), from the start and
from every offset (a reader inside a gap continues at the next survivor), the active segment's
bytes are untouched by a clean, and `verify` finds nothing.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from seglog.errors import MissingKeyError
from seglog.indexer import Log, Record

BASE_TS = 1_700_000_000_000
KEYS = [b"a", b"b", b"c", b"d", b"e", b"longer-key-f"]

rec_st = st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.binary(min_size=0, max_size=30)),
                   st.booleans())
settings_st = st.fixed_dictionaries({
    "segment.bytes": st.sampled_from([1024, 1400, 4096]),
    "index.interval.bytes": st.sampled_from([0, 100, 4096]),
    "min.compaction.lag.ms": st.sampled_from([0, 0, 5_000, 60_000]),
    "delete.retention.ms": st.sampled_from([0, 3_000, 30_000]),
    "compression.type": st.sampled_from(["producer", "producer", "gzip", "lz4"]),
})
op_st = st.one_of(
    st.tuples(st.just("append"), st.lists(rec_st, min_size=1, max_size=25)),
    st.tuples(st.just("append"), st.lists(rec_st, min_size=1, max_size=25)),
    st.tuples(st.just("roll"), st.none()),
    st.tuples(st.just("tick"), st.sampled_from([1_000, 4_000, 40_000])),
    st.tuples(st.just("clean"), st.none()),
    st.tuples(st.just("clean"), st.none()),
    st.tuples(st.just("clean"), st.none()),
    st.tuples(st.just("reopen"), settings_st),
)


class Model:
    def __init__(self):
        self.records: dict[int, Record] = {}     # offset -> record, the survivors
        self.horizon: dict[int, int] = {}        # tombstone offset -> delete horizon
        self.checkpoint = 0                      # the end of the last clean's dirty section

    def clean(self, log: Log, now: int, cfg: dict) -> int | None:
        """Kafka's rules, brute force; returns the dirty section's end, or None when nothing is cleaned."""
        segs = log.segments()
        active = segs[-1]
        first_dirty = self.checkpoint if 0 <= self.checkpoint <= log.log_end_offset else 0
        end = active.base_offset
        for s in segs[:-1]:
            if s.next_offset > first_dirty and s.largest_timestamp > now - cfg["min.compaction.lag.ms"]:
                end = min(end, s.base_offset)
                break
        if not any(s.base_offset >= first_dirty and s.next_offset <= end for s in segs[:-1]):
            return None
        latest: dict[bytes, int] = {}
        for off, r in self.records.items():
            if first_dirty <= off < end:
                latest[r.key] = max(latest.get(r.key, -1), off)
        for off in sorted(self.records):
            if off >= end:
                break
            r = self.records[off]
            if off < latest.get(r.key, -1):
                del self.records[off]
            elif r.value is None and off in self.horizon and now >= self.horizon[off]:
                del self.records[off]
        for off, r in self.records.items():
            if off < end and r.value is None and off not in self.horizon:
                self.horizon[off] = now + cfg["delete.retention.ms"]
        self.checkpoint = end
        return end


def check(log: Log, model: Model) -> None:
    want = [(o, r.key, r.value, r.timestamp, r.headers) for o, r in sorted(model.records.items())]
    got = [(r.offset, r.key, r.value, r.timestamp, tuple(r.headers)) for r in log.read()]
    assert got == want
    offsets = [w[0] for w in want]
    for start in range(0, log.log_end_offset + 1, max(1, log.log_end_offset // 7)):
        assert [r.offset for r in log.read(start)] == [o for o in offsets if o >= start]
        arrow = [o for b in log.read_arrow(start) for o in b.column("offset").to_pylist()]
        assert arrow == [o for o in offsets if o >= start]
    assert log.verify() == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=settings_st, ops=st.lists(op_st, min_size=4, max_size=18))
def test_compaction_matches_model(first, ops):
    tmp = Path(tempfile.mkdtemp())
    path = tmp / "state-0"
    cfg = dict(first, **{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.5,
                         "segment.index.bytes": 4096})
    model = Model()
    now = BASE_TS
    log = Log.open(path, cfg)
    try:
        for kind, arg in ops:
            if kind == "append":
                recs = [Record(key=k, value=v, timestamp=now, headers=(("h", k),) if h else ())
                        for k, v, h in arg]
                info = log.append(recs)
                for i, r in enumerate(recs):
                    model.records[info.first_offset + i] = Record(key=r.key, value=r.value, timestamp=now,
                                                                  headers=r.headers)
                now += 10
            elif kind == "roll":
                log.roll()
            elif kind == "tick":
                now += arg
            elif kind == "clean":
                active_path = log.segments()[-1].log_path
                active_bytes = active_path.read_bytes()
                expected_end = model.clean(log, now, cfg)
                result = log.clean(now, force=True)
                assert result.cleaned == (expected_end is not None)
                if result.cleaned:
                    assert result.first_dirty_after == expected_end
                assert active_path.read_bytes() == active_bytes      # the active segment is never cleaned
            elif kind == "reopen":
                log.close()
                cfg = dict(cfg, **arg)
                log = Log.open(path, cfg)
                assert log.recovery_report == []
            check(log, model)
    finally:
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_compacted_topic_refuses_records_without_a_key(tmp_path):
    with Log.open(tmp_path / "state-0", {"cleanup.policy": "compact"}) as log:
        log.append([Record(key=b"k", value=b"v", timestamp=BASE_TS)])
        with pytest.raises(MissingKeyError, match="record 1 .*offset 2"):
            log.append([Record(key=b"k", value=b"v"), Record(key=None, value=b"x")])
        with pytest.raises(MissingKeyError, match="no keys"):
            log.append_columns([b"v"])
        with pytest.raises(MissingKeyError, match="record 0"):
            log.append_columns([b"v"], keys=[None])
        assert log.log_end_offset == 1
        assert [r.value for r in log.read()] == [b"v"]
