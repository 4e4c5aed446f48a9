"""Merging small segments (indexer/compaction/segment_merge.py, docs/spec.md §3.10) inside the live `Log`'s
brute-force machine (tests/indexer/test_log_stateful.py): every operation there, plus commits of the
sink's committed end, merges, and roll backs to the committed end.

After every step the inherited invariants hold (the live log, a fresh reader and the model hold the
same records; lookups by offset and by every timestamp, -1/-2/-3 included, agree with brute force;
retention deletes exactly what brute force says and, by time, never an unexpired record), and here
also: `verify` is clean, a merge never adds a segment, never touches the active segment or anything
at or above the committed end, and every merged segment obeys the plan's rules.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from seglog.indexer.compaction import segment_merge
from seglog.indexer.commit_log import CommitLog
from tests.oracles.committed_end import roll_back_to_committed
from tests.indexer.test_log_stateful import RETENTION_MS, LiveLog

EXAMPLES = int(os.environ.get("SEGLOG_STATEFUL_EXAMPLES", "40"))


class MergingLog(LiveLog):
    @initialize(segment_bytes=st.sampled_from([1024, 2048, 4096]), interval=st.sampled_from([0, 100, 400, 1500]),
                retention_bytes=st.sampled_from([-1, -1, 3000, 8000]), segment_ms=st.sampled_from([600, 5_000, 10**9]),
                small=st.sampled_from([-1, -1, 600, 3000]))
    def start(self, segment_bytes, interval, retention_bytes, segment_ms, small):
        super().start(segment_bytes, interval, retention_bytes)
        self.config.update({"segment.ms": segment_ms, "segment.merge.small.bytes": small})
        self.log.close()
        self.log = self.open_log()
        self.commits = CommitLog(self.path.parent, "t")    # the folder t-0 is partition 0 of topic t
        self.committed = 0
        self.batch = 0

    def open_log(self):
        from seglog.indexer import Log

        return Log.open(self.path, self.config, outside_commit_log=True)

    @rule()
    def reopen(self):
        self.log.close()
        self.log = self.open_log()

    @rule(fraction=st.floats(0, 1))
    def truncate(self, fraction):
        super().truncate(fraction)
        if self.next_offset < self.committed:   # the operator's truncation lowers the committed end
            self.committed = self.next_offset
            self.commits.commit("operator", -1, {0: self.committed}, allow_lower=True)

    @rule(n=st.integers(1, 8), step=st.integers(-300, 400), size=st.integers(0, 120), count=st.integers(1, 4),
          then=st.sampled_from(["nothing", "merge", "commit and merge"]))
    def append_small_segments(self, n, step, size, count, then):
        """What the sink's JVM writer leaves: each task's output published as its own small segment."""
        for _ in range(count):
            self.append(n, step, 7, False, size)
            self.log.roll()
        if then == "commit and merge":
            self.commit()
        if then != "nothing":
            self.merge()

    @rule()
    def commit(self):
        """The sink commits everything written so far (its end becomes the high watermark)."""
        self.log.flush()
        self.batch += 1
        self.committed = max(self.committed, self.log.log_end_offset)
        self.commits.commit("sink", self.batch, {0: self.committed})

    def committed_end(self) -> int | None:
        return self.committed if self.commits.end_offsets() else None

    @rule()
    def roll_back_to_the_committed_end(self):
        roll_back_to_committed(self.log, self.committed)
        self.model = [r for r in self.model if r[0] < self.committed]
        self.next_offset = min(self.next_offset, max(self.committed, self.log.log_start_offset))

    @rule()
    def merge(self):
        before = {s.base_offset: s for s in self.log.segments()}
        bases_before = self.log.segment_bases()
        # No commit yet: the topic has no committed end, and the merge is bounded by the active segment alone.
        end = min(bases_before[-1], self.committed) if self.commits.end_offsets() else bases_before[-1]
        result = segment_merge.merge_log(self.log)
        after = self.log.segments()
        assert len(after) == len(before) - result.segments_merged + len(result.groups)
        assert len(after) <= len(before)
        active = after[-1]
        assert active.base_offset == bases_before[-1], "the active segment changed"
        small = segment_merge.small_threshold(self.log.config)
        for group in result.groups:
            assert len(group) >= 2 and any(before[b].size_bytes < small for b in group)
            last = before[group[-1]]
            assert last.next_offset <= end, "merged at or above the committed end or the active segment"
            merged = next(s for s in after if s.base_offset == group[0])
            assert merged.next_offset == last.next_offset
            assert merged.size_bytes == sum(before[b].size_bytes for b in group) <= self.config["segment.bytes"]
            assert merged.state == "sealed"
            stamps = [t for o, t, _ in self.model if merged.base_offset <= o < merged.next_offset]
            first = next(t for o, t, _ in self.model if o == merged.base_offset)
            # The roll rule of an append: every timestamp within segment.ms of the first.
            assert max(stamps) - first <= self.config["segment.ms"]
        # Untouched: every segment outside the groups, byte for byte the same size and bounds.
        merged_bases = {b for g in result.groups for b in g}
        for b, s in before.items():
            if b not in merged_bases:
                assert any(a.base_offset == b and a.size_bytes == s.size_bytes for a in after) or b == bases_before[-1]

    @invariant()
    def verify_is_clean(self):
        if hasattr(self, "log"):
            assert self.log.verify() == []


assert RETENTION_MS > 0
MergingLog.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=30, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_merging_log = MergingLog.TestCase
