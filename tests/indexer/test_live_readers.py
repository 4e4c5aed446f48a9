"""Read-only readers kept open while the writer truncates, rolls and seals under them
(docs/reliability.md, "a reader whose files a writer shrank").

Readers take no lock, so a reader opened before a truncation still holds the old sizes and entry
counts while the writer zeroes index entries, seals (trims the index files below them) and cuts the
log. Such a reader may see the log as it was or as it is, but it must never die by a signal (a
memory-mapped index touched past its file's new end is SIGBUS), never loop forever on a short read,
and never return a record under another offset. A failure here kills the test process (SIGBUS) or
hangs it (pytest-timeout), which is the point: both were possible before.

Segments are built of one-record batches with an index entry per batch, so an index spans pages
and a trim frees whole pages a stale reader would otherwise touch.
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from seglog.errors import SeglogError
from seglog.indexer import Log

T0 = 1_700_000_000_000
MAX_READERS = 3
EXAMPLES = int(os.environ.get("SEGLOG_STATEFUL_EXAMPLES", "25"))   # CI's bounded profile; raise it for a long run


class ReadersUnderTruncation(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.dir = Path(tempfile.mkdtemp(prefix="seglog-live-readers-"))
        self.path = self.dir / "t-0"
        self.config = {"segment.bytes": 1 << 20, "index.interval.bytes": 0, "file.delete.delay.ms": 60_000}
        self.log = Log.open(self.path, self.config)
        self.timestamps: list[int] = []   # the writer's records now, by offset
        self.highest_end = 0              # every offset a stale reader may still see is below it
        self.generation = 0
        self.readers: list[Log] = []

    def teardown(self):
        for reader in getattr(self, "readers", []):
            reader.close()
        if hasattr(self, "log"):
            self.log.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---------------------------------------------------------------- the writer
    @rule(n=st.integers(1, 1500), step=st.integers(-50, 500))
    def append(self, n, step):
        first = len(self.timestamps)
        self.generation += 1
        ts = T0 + first * 10 + step + np.arange(n, dtype=np.int64) * 3
        values = [b"%d:%d" % (first + i, self.generation) for i in range(n)]
        info = self.log.append_columns(pa.array(values, pa.binary()), timestamps=ts, max_batch_bytes=80)
        assert info.first_offset == first
        self.timestamps += ts.tolist()
        self.highest_end = max(self.highest_end, len(self.timestamps))

    @rule(fraction=st.floats(0, 1) | st.floats(0, 0.05))
    def truncate(self, fraction):
        cut = int(len(self.timestamps) * fraction)
        self.log.truncate_to(cut)
        del self.timestamps[cut:]

    @rule()
    def roll_and_seal(self):
        self.log.roll()   # seals the old active segment: its index files are trimmed to their entries

    # ---------------------------------------------------------------- readers that stay open
    @precondition(lambda self: len(self.readers) < MAX_READERS)
    @rule()
    def open_reader(self):
        reader = Log.open(self.path, readonly=True)
        for ts in self.timestamps[::400]:   # opens (and maps, before the fix) the segments' indexes
            reader.offset_for_timestamp(ts)
        self.readers.append(reader)

    @precondition(lambda self: self.readers)
    @rule(which=st.integers(0, MAX_READERS - 1))
    def close_reader(self, which):
        self.readers.pop(which % len(self.readers)).close()

    @precondition(lambda self: self.readers)
    @rule(which=st.integers(0, MAX_READERS - 1), fraction=st.floats(0, 1.2))
    def stale_lookup(self, which, fraction):
        reader = self.readers[which % len(self.readers)]
        target = T0 + int(self.highest_end * 10 * fraction)
        try:
            found = reader.offset_for_timestamp(target)
        except SeglogError:
            return   # a typed refusal of a log that changed under the reader is allowed
        assert found is None or 0 <= found <= self.highest_end

    @precondition(lambda self: self.readers)
    @rule(which=st.integers(0, MAX_READERS - 1), fraction=st.floats(0, 1), arrow=st.booleans())
    def stale_read(self, which, fraction, arrow):
        reader = self.readers[which % len(self.readers)]
        start = int(self.highest_end * fraction)
        try:
            start = min(max(start, reader.log_start_offset), reader.log_end_offset)
            if arrow:
                pairs = [(int(o), bytes(v)) for b in itertools.islice(reader.read_arrow(start), 3)
                         for o, v in zip(b.column("offset").to_pylist(), b.column("value").to_pylist())]
            else:
                pairs = [(r.offset, r.value) for r in itertools.islice(reader.read(start), 2000)]
        except SeglogError:
            return
        for offset, value in pairs:   # whatever it sees, a record is under its own offset
            assert value.split(b":")[0] == b"%d" % offset, (offset, value)

    # ---------------------------------------------------------------- a fresh reader is exact
    @invariant()
    def a_fresh_reader_agrees(self):
        if not hasattr(self, "log"):
            return
        self.log.flush()
        with Log.open(self.path, readonly=True) as reader:
            assert reader.log_end_offset == len(self.timestamps)
            got = [r.timestamp for r in reader.read(0)]
            assert got == self.timestamps
            if self.timestamps:
                ts = np.array(self.timestamps)
                for target in (int(ts.min()), int(np.median(ts)), int(ts.max())):
                    expected = int(np.flatnonzero(ts >= target)[0])
                    assert reader.offset_for_timestamp(target) == expected


ReadersUnderTruncation.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_readers_under_truncation = pytest.mark.timeout(600)(ReadersUnderTruncation.TestCase)


def test_a_reader_whose_sealed_index_was_truncated_and_trimmed_under_it(tmp_path):
    """The shortest path to the old SIGBUS, step by step: a reader maps a sealed segment's index,
    the writer truncates into that segment and seals it again (trimmed below the reader's entries),
    the reader looks up and reads past the cut. It now answers from what is left (or from what it
    saw), in its own process, without a signal or an endless loop."""
    config = {"segment.bytes": 1 << 30, "index.interval.bytes": 0}
    n = 5000
    ts = T0 + np.arange(n, dtype=np.int64)
    values = [b"%d:1" % i for i in range(n)]
    with Log.open(tmp_path, config) as writer:
        writer.append_columns(pa.array(values, pa.binary()), timestamps=ts, max_batch_bytes=80)
        writer.roll()
        with Log.open(tmp_path, readonly=True) as reader:
            assert reader.offset_for_timestamp(T0 + 4900) == 4900   # maps/reads the whole index
            writer.truncate_to(10)
            writer.roll()
            writer.flush()
            found = reader.offset_for_timestamp(T0 + 4900)
            assert found is None or 0 <= found <= n
            for record in reader.read(4000):
                assert record.value.split(b":")[0] == b"%d" % record.offset
        with Log.open(tmp_path, readonly=True) as fresh:
            assert fresh.log_end_offset == 10
            assert fresh.offset_for_timestamp(T0 + 4900) is None
