"""The live `Log` against a brute-force model, under random interleavings of every operation
(docs/reliability.md): append (records and columns), reads, lookups by every timestamp, truncation
anywhere (inside sealed segments and mid-batch), roll, seal, retention by time and size with
timestamps that go backwards, purge, close and reopen, a read-only reader beside the live writer and
after it closes, and a crash (the folder copied while the writer is open, the copy recovered).

After every step: the live log, a fresh read-only reader and the model hold the same records, and
every lookup agrees with brute force. Retention deletes exactly the oldest segments whose records
have all expired (by the model's timestamps), stopping at the first that has not.

CI runs a bounded profile; `SEGLOG_STATEFUL_EXAMPLES=2000 pytest tests/indexer/test_log_stateful.py`
runs a long one.
"""
from __future__ import annotations

import dataclasses

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from seglog.indexer import Log, Record

T0 = 1_700_000_000_000
RETENTION_MS = 5_000
EXAMPLES = int(os.environ.get("SEGLOG_STATEFUL_EXAMPLES", "40"))


class LiveLog(RuleBasedStateMachine):
    @initialize(segment_bytes=st.sampled_from([1024, 2048, 4096]), interval=st.sampled_from([0, 100, 400, 1500]),
                retention_bytes=st.sampled_from([-1, -1, 3000, 8000]))
    def start(self, segment_bytes, interval, retention_bytes):
        self.dir = Path(tempfile.mkdtemp(prefix="seglog-stateful-"))
        self.path = self.dir / "t-0"
        self.config = {"segment.bytes": segment_bytes, "index.interval.bytes": interval,
                       "retention.ms": RETENTION_MS, "retention.bytes": retention_bytes, "file.delete.delay.ms": 0}
        self.log = Log.open(self.path, self.config)
        self.model: list[tuple[int, int, bytes]] = []    # (offset, timestamp, value), from the log start
        self.next_offset = 0
        self.clock = T0

    def teardown(self):
        if hasattr(self, "log"):
            self.log.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---------------------------------------------------------------- operations
    @rule(n=st.integers(1, 30), step=st.integers(-300, 400), spread=st.integers(0, 50),
          columns=st.booleans(), size=st.integers(0, 120))
    def append(self, n, step, spread, columns, size):
        self.clock = max(T0, self.clock + step)
        ts = [self.clock + (i * spread) % 97 for i in range(n)]
        values = [b"%d:" % (self.next_offset + i) + b"v" * size for i in range(n)]
        if columns:
            info = self.log.append_columns(pa.array(values, pa.binary()), timestamps=np.array(ts, np.int64),
                                           max_batch_bytes=300)
        else:
            info = self.log.append([Record(key=b"k", value=v, timestamp=t) for v, t in zip(values, ts)])
        assert info.first_offset == self.next_offset
        self.model += [(self.next_offset + i, t, v) for i, (t, v) in enumerate(zip(ts, values))]
        self.next_offset += n

    @rule(fraction=st.floats(0, 1))
    def truncate(self, fraction):
        start = self.log.log_start_offset
        cut = start + int((self.next_offset - start) * fraction)
        self.log.truncate_to(cut)
        self.model = [r for r in self.model if r[0] < cut]
        self.next_offset = min(self.next_offset, max(cut, start))

    @rule()
    def roll(self):
        self.log.roll()

    @rule()
    def seal(self):
        self.log.seal_inactive()

    @rule(ahead=st.integers(-2_000, 12_000))
    def retention(self, ahead):
        """Brute force of Kafka's two rules (docs/spec.md §3.7), each over the oldest segments: by time,
        delete while every record of the segment has expired, stopping at the first that has not; by
        size, delete while what remains still holds at least retention.bytes. The larger count wins."""
        now = self.clock + ahead
        segments = [s for s in self.log.segments()
                    if any(s.base_offset <= o < s.next_offset for o, _, _ in self.model)]
        # Where a sink commits to the topic, retention counts and deletes only what lies below its committed end
        # (Log.retention_facts, Log.below_committed_end): a straddling segment counts its bytes below it (by the
        # offset index, as Log.byte_size estimates them); none past it is deleted.
        end = self.committed_end()
        if end is not None:
            segments = [dataclasses.replace(s, size_bytes=s.size_bytes if s.next_offset <= end else
                                            0 if s.base_offset >= end else self.log.byte_size(s.base_offset, end))
                        for s in segments]
        by_time = 0
        for s in segments:
            if now - max(t for o, t, _ in self.model if s.base_offset <= o < s.next_offset) > RETENTION_MS:
                by_time += 1
            else:
                break
        by_size, remaining = 0, sum(s.size_bytes for s in segments)
        if self.config["retention.bytes"] >= 0:
            for s in segments:
                if remaining - s.size_bytes < self.config["retention.bytes"]:
                    break
                remaining -= s.size_bytes
                by_size += 1
        count = max(by_time, by_size)
        if end is not None:
            count = min(count, sum(1 for s in segments if s.next_offset <= end))
        expected = [s.base_offset for s in segments[:count]]
        result = self.log.apply_retention(now)
        assert result.deleted_bases == expected, (now, [(s.base_offset, s.size_bytes, s.largest_timestamp) for s in segments])
        if expected:
            start = self.log.log_start_offset
            if by_size <= by_time:   # deleted by time alone: nothing unexpired was lost
                assert all(now - t > RETENTION_MS for o, t, _ in self.model if o < start)
            else:                    # deleted by size: what remains still holds at least retention.bytes
                assert sum(s.size_bytes for s in self.log.segments()) >= self.config["retention.bytes"]
            self.model = [r for r in self.model if r[0] >= start]
            self.next_offset = max(self.next_offset, start)

    def committed_end(self) -> int | None:
        """The sink's committed end of the partition, None where no sink commits to the topic."""
        return None

    @rule(fraction=st.floats(0, 1))
    def read_from_an_offset(self, fraction):
        """A read that starts anywhere seeks with the offset index and returns exactly the records at or
        after that offset."""
        if not self.model:
            return
        start = self.model[0][0] + int((self.next_offset - self.model[0][0]) * fraction)
        got = [(r.offset, r.timestamp, r.value) for r in self.log.read(start)]
        assert got == [r for r in self.model if r[0] >= start]

    @rule()
    def purge(self):
        self.log.purge_deleted()

    @rule()
    def reopen(self):
        self.log.close()
        self.log = Log.open(self.path, self.config)

    @rule()
    def reader_after_the_writer_closes(self):
        self.log.close()
        with Log.open(self.path, readonly=True) as reader:
            self.check_lookups(reader)
        self.log = self.open_log()

    def open_log(self):
        """The writer's open (a subclass that commits what it appends opens outside_commit_log)."""
        return Log.open(self.path, self.config)

    @rule()
    def crash(self):
        """The writer dies after a flush: a copy of the folder taken now is what a restart finds."""
        self.log.flush()
        copy = self.dir / "crash" / "t-0"
        shutil.rmtree(copy.parent, ignore_errors=True)
        shutil.copytree(self.path, copy)
        with Log.open(copy, self.config) as recovered:
            assert [(r.offset, r.timestamp, r.value) for r in recovered.read()] == self.model
            assert recovered.log_end_offset == self.next_offset
            self.check_lookups(recovered)

    # ---------------------------------------------------------------- checks
    def check_lookups(self, log):
        for p in self.probes():
            expected = next((o for o, t, _ in self.model if t >= p), None)
            assert log.offset_for_timestamp(p) == expected, p
        # Kafka's special timestamps: -2 the log start, -1 the log end, -3 the (earliest) record with
        # the largest timestamp (KIP-734)
        assert log.offset_for_timestamp(-1) == self.next_offset
        if self.model:
            assert log.offset_for_timestamp(-2) == self.model[0][0]
            top = max(t for _, t, _ in self.model)
            assert log.offset_for_timestamp(-3) == next(o for o, t, _ in self.model if t == top)
        else:
            assert log.offset_for_timestamp(-2) == log.log_start_offset <= self.next_offset

    def probes(self):
        ts = sorted({t for _, t, _ in self.model})
        return sorted({q for t in ts for q in (t - 1, t, t + 1)} | {T0 - 1})

    @invariant()
    def live_log_matches_the_model(self):
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.next_offset
        assert [(r.offset, r.timestamp, r.value) for r in self.log.read()] == self.model
        rows = [b for b in self.log.read_arrow(self.log.log_start_offset)]
        got = [(o, t, v) for b in rows for o, t, v in zip(b.column("offset").to_pylist(),
                                                          b.column("timestamp").to_pylist(),
                                                          b.column("value").to_pylist())]
        assert got == self.model
        self.check_lookups(self.log)

    @invariant()
    def a_fresh_reader_beside_the_live_writer_agrees(self):
        if not hasattr(self, "log"):
            return
        with Log.open(self.path, readonly=True) as reader:
            assert [(r.offset, r.timestamp, r.value) for r in reader.read(None, self.next_offset)] == self.model
            self.check_lookups(reader)


LiveLog.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=25, deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_live_log = LiveLog.TestCase
