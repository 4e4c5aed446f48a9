"""The tier pass (docs/tiered-storage.md §4, 5) against a brute-force model, under random interleavings
of appends, rolls, tier passes at advancing times, and crashes between a copy's objects and its record
and between a `deleting` record and the objects (file:// remote tier for speed; the S3 path is the
same code, tests/remote/test_tier.py runs it once through the loopback server).

After every step: every recorded segment has its objects as recorded; every record at or above the
log start reads back as appended, across both tiers; the log start never goes back, and never past a
record that total retention (retention.ms, judged at the last finished pass) must keep. After a
finished pass: the remote tier holds exactly the recorded segments' objects, and local retention by
bytes left nothing it should have removed.

`SEGLOG_STATEFUL_EXAMPLES=500 pytest tests/remote/test_tier_stateful.py` runs a long profile.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from seglog.conf import validate_topic_config
from seglog.indexer import Log, Record
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation, record_location
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.remote.tiered_log import TieredLog
from seglog.indexer.topics import create_topic

T0 = 1_700_000_000_000
RETENTION_MS = 20_000
EXAMPLES = int(os.environ.get("SEGLOG_STATEFUL_EXAMPLES", "25"))
SUFFIXES = (".log", ".index", ".timeindex", ".manifest.json")


class Crash(Exception):
    pass


class TieredPartition(RuleBasedStateMachine):
    @initialize(segment_bytes=st.sampled_from([1024, 2048]), local_bytes=st.sampled_from([-2, 0, 1500, 4000]),
                local_ms=st.sampled_from([-2, 0, 5_000]))
    def start(self, segment_bytes, local_bytes, local_ms):
        self.dir = Path(tempfile.mkdtemp(prefix="seglog-tier-stateful-"))
        self.root = self.dir / "root"
        (self.dir / "remote").mkdir()
        self.raw = {"segment.bytes": segment_bytes, "index.interval.bytes": 200, "segment.ms": 1 << 62,
                    "remote.storage.enable": True, "retention.ms": RETENTION_MS, "local.retention.bytes": local_bytes,
                    "local.retention.ms": local_ms, "file.delete.delay.ms": 0}
        self.cfg = validate_topic_config(self.raw)
        create_topic(self.root, "t", 1, self.raw)
        Log.open(self.root / "t-0", self.cfg).close()        # the partition's folder, as the sink's first open makes it
        self.location = RemoteLocation(f"file://{self.dir}/remote")
        record_location(self.root, self.location)
        self.store = RemoteStore(self.location)
        self.model: list[tuple[int, bytes]] = []     # (timestamp, value) by offset
        self.clock = T0
        self.start_seen = 0
        self.kept_from = 0           # total retention at the last finished pass keeps every offset from here
        self.settled = True          # the files are as a pass that ran to its end left them

    def teardown(self):
        if hasattr(self, "dir"):
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---------------------------------------------------------------- operations
    @rule(n=st.integers(1, 25), step=st.integers(0, 3_000), size=st.integers(10, 150), roll=st.booleans())
    def append(self, n, step, size, roll):
        self.clock += step
        with Log.open(self.root / "t-0", self.cfg) as log:
            recs = [Record(key=None, value=b"%d:" % (len(self.model) + i) + b"v" * size, timestamp=self.clock + i)
                    for i in range(n)]
            log.append(recs)
            if roll:
                log.roll()
            log.seal_inactive()
        self.model += [(r.timestamp, r.value) for r in recs]
        self.settled = False

    def _pass(self, **hooks):
        now = self.clock
        # Total retention judged at `now` keeps every record newer than now - retention.ms, and all after
        # it; a pass that crashes may have applied it already.
        newer = [o for o, (ts, _) in enumerate(self.model) if now - ts <= RETENTION_MS]
        self.kept_from = max(self.kept_from, newer[0] if newer else len(self.model))
        self.settled = False
        tier_partition(self.root, "t", 0, self.cfg, self.store, now=now, **hooks)
        self.settled = True

    @rule(advance=st.integers(0, 15_000))
    def tier_pass(self, advance):
        self.clock += advance
        self._pass()

    @rule(at=st.integers(0, 3))
    def crash_mid_copy(self, at):
        seen = []

        def hook(base):
            seen.append(base)
            if len(seen) > at:
                raise Crash

        try:
            self._pass(before_record=hook)
        except Crash:
            pass

    @rule(advance=st.integers(0, 30_000))
    def crash_mid_delete(self, advance):
        self.clock += advance

        def hook(base):
            raise Crash

        try:
            self._pass(before_delete=hook)
        except Crash:
            pass

    # ---------------------------------------------------------------- invariants
    @invariant()
    def recorded_segments_have_their_objects(self):
        if not hasattr(self, "root"):
            return
        for seg in metadata.read_state(self.root, "t", 0).segments():
            for name, suffix in (("log", ".log"), ("index", ".index"), ("timeindex", ".timeindex")):
                assert self.store.hash(f"t-0/{seg.base:020d}{suffix}") == seg.files[name], (seg.base, suffix)
            assert self.store.size(f"t-0/{seg.base:020d}.manifest.json")

    @invariant()
    def every_record_from_the_log_start_reads_back(self):
        if not hasattr(self, "root") or not self.model:
            return
        with TieredLog(self.root, "t", 0, self.cfg) as log:
            start = log.log_start_offset
            got = [(r.offset, r.timestamp, r.value) for r in log.read()]
        assert start >= self.start_seen                                    # the log start never goes back
        assert start <= self.kept_from                                     # nothing retention must keep is gone
        self.start_seen = start
        assert got == [(o, ts, v) for o, (ts, v) in enumerate(self.model) if o >= start]

    @invariant()
    def a_finished_pass_leaves_only_recorded_objects_and_applied_local_retention(self):
        if not hasattr(self, "root") or not self.settled:
            return
        state = metadata.read_state(self.root, "t", 0)
        assert not state.deleting
        expected = sorted(f"{b:020d}{s}" for b in state.live for s in SUFFIXES)
        assert self.store.list("t-0") == expected
        limit = self.cfg.local_retention("bytes")
        with Log.open(self.root / "t-0", self.cfg, readonly=True) as log:
            segs = log.segments()
        first = segs[0]
        tiered = first.base_offset in state.live and state.live[first.base_offset].next == first.next_offset
        if limit >= 0 and len(segs) > 1 and tiered:
            assert sum(s.size_bytes for s in segs) - first.size_bytes < limit


TieredPartition.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=20, deadline=None,
                                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_tiered_partition = TieredPartition.TestCase
