"""The recovery point (indexer/recovery_point.py): a writable open after a clean close examines no
segment below it; whatever rewrites below it lowers it first; a missing or malformed file means
recovery as before, reported; and a stateful run of appends, rolls, seals, closes, truncations and
crashes (the folder copied while the writer is open) against the brute-force model of records.
Counts of work, never times (bench/open.py measures those)."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from seglog.indexer import Log, Record
from seglog.indexer.recovery_point import RECOVERY_POINT_FILE, read_recovery_point

CONFIG = {"segment.bytes": 1024, "index.interval.bytes": 256}


def build(tmp_path, segments=40):
    path = tmp_path / "t-0"
    with Log.open(path, CONFIG) as log:
        for i in range(segments):
            log.append([Record(value=b"%d" % i * 20, timestamp=1_000 + i) for _ in range(3)])
            log.roll()
        log.append([Record(value=b"tail", timestamp=5_000)])
        end = log.log_end_offset
    return path, end


def point(path):
    return read_recovery_point(path, "t", 0)


def test_a_clean_close_leaves_the_active_base_and_the_next_open_examines_only_the_active_segment(tmp_path):
    path, end = build(tmp_path)
    assert point(path) == (end - 1, None)            # the active segment holds the last record
    with Log.open(path, CONFIG) as log:
        assert log.recovery_examined == 1            # the active segment: 41 segments, 40 trusted
        assert log.recovery_report == []
        assert [r.offset for r in log.read()] == list(range(end))


def test_a_close_rewrites_the_file_only_when_segments_rolled(tmp_path):
    path, _ = build(tmp_path)
    before = (path / RECOVERY_POINT_FILE).stat().st_ino
    with Log.open(path, CONFIG):
        pass
    with Log.open(path, CONFIG) as log:
        log.append([Record(value=b"a", timestamp=1)])   # appended, flushed at close, not rolled
    assert (path / RECOVERY_POINT_FILE).stat().st_ino == before
    with Log.open(path, CONFIG) as log:
        log.append([Record(value=b"b" * 900, timestamp=1)] * 3)   # rolls
        rolled_to = log.segment_bases()[-1]
    assert point(path) == (rolled_to, None)


def test_segments_written_after_the_point_are_recovered_after_a_crash(tmp_path):
    path, end = build(tmp_path)
    log = Log.open(path, CONFIG)
    for i in range(5):
        log.append([Record(value=b"new", timestamp=9_000)] * 3)
        log.roll()
    log.flush()
    copy = tmp_path / "crash" / "t-0"
    shutil.copytree(path, copy)                      # a crash: what a restart finds
    log.close()
    with Log.open(copy, CONFIG) as recovered:
        bases = recovered.segment_bases()
        assert recovered.recovery_examined == sum(1 for b in bases if b >= end - 1)   # at or above the point
        assert recovered.log_end_offset == end + 15
    assert point(copy) == (end + 15, None)            # its close raised it (the active one is empty)


def test_a_torn_tail_above_the_point_is_still_cut(tmp_path):
    path, end = build(tmp_path)
    active = path / f"{Log.open(path, CONFIG, readonly=True).segment_bases()[-1]:020d}.log"
    with open(active, "ab") as fh:
        fh.write(b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x01\x00torn")
    with Log.open(path, CONFIG) as log:
        assert any("torn or corrupt tail" in line for line in log.recovery_report)
        assert log.log_end_offset == end


def test_a_truncation_below_the_point_lowers_it_before_the_cut(tmp_path):
    path, end = build(tmp_path)
    log = Log.open(path, CONFIG)
    log.truncate_to(30)
    assert point(path) == (30, None)                 # lowered, the writer still open
    copy = tmp_path / "crash" / "t-0"
    shutil.copytree(path, copy)
    log.close()
    with Log.open(copy, CONFIG) as recovered:
        assert recovered.log_end_offset == 30
        assert recovered.recovery_examined == sum(1 for b in recovered.segment_bases() if b >= 27)


def test_a_truncation_intent_found_at_open_is_finished_whatever_the_point(tmp_path):
    """A kill between the intent and the cut: the point was lowered first, so the open finishes
    the truncation and trusts nothing it touched."""
    from seglog.indexer import recovery

    path, end = build(tmp_path)
    with Log.open(path, CONFIG) as log:
        seg = log.segment(log.segment_bases()[5])
        intent = recovery.truncation_intent(seg, 16)
        log._lower_recovery_point(16)
        recovery.write_intent(path, intent)
        copy = tmp_path / "crash" / "t-0"
        shutil.copytree(path, copy)                  # killed here: intent durable, nothing cut
        (path / recovery.TRUNCATE_INTENT).unlink()
    with Log.open(copy, CONFIG) as recovered:
        assert recovered.log_end_offset == 16
        assert [r.offset for r in recovered.read()] == list(range(16))
        assert recovered.verify() == []


def test_a_malformed_or_foreign_point_file_means_recovery_as_before_reported(tmp_path):
    path, end = build(tmp_path)
    for text, why in (("0\n1\nt 0 12x\n", "malformed line"), ("7\n", "unknown version"),
                      ("0\n1\nu 3 9\n", "instead of one entry for t-0")):
        (path / RECOVERY_POINT_FILE).write_text(text)
        with Log.open(path, CONFIG) as log:
            assert log.recovery_examined == 41        # every segment, as without a point
            assert any(why in line and "every segment recovered" in line for line in log.recovery_report)
            assert log.log_end_offset == end
        assert point(path) == (end - 1, None)        # the clean close wrote a good one


def test_a_missing_point_file_means_recovery_as_before(tmp_path):
    path, end = build(tmp_path)
    (path / RECOVERY_POINT_FILE).unlink()
    with Log.open(path, CONFIG) as log:
        assert log.recovery_examined == 41
        assert log.recovery_report == []


def test_the_seal_job_raises_the_point_to_the_active_segment(tmp_path):
    path, end = build(tmp_path)
    (path / RECOVERY_POINT_FILE).unlink()
    log = Log.open(path, CONFIG)
    log.seal_inactive()
    assert point(path) == (log.segment_bases()[-1], None)
    log.close()


def test_a_segment_below_the_point_whose_index_is_gone_is_rebuilt(tmp_path):
    path, end = build(tmp_path)
    (path / f"{3:020d}.timeindex").unlink()
    with Log.open(path, CONFIG) as log:
        assert log.recovery_examined == 2
        assert any("index rebuilt (missing)" in line for line in log.recovery_report)


def test_an_odd_length_index_below_the_point_is_rebuilt_by_a_writable_open(tmp_path):
    """Issue 36 item 11: after two writable opens and appends, `verify` still reported the odd-length
    indexes of two sealed segments below the recovery point (opens trusted them unexamined). An open now
    checks that each trusted segment's indexes hold whole entries (two stats) and rebuilds one that does
    not, as Kafka's loader rebuilds an index that fails its check; the sound ones stay unexamined."""
    from tests.cli.helpers import seglog

    path, end = build(tmp_path)
    for base in (3, 6):                              # both non-last, sealed, below the point
        with open(path / f"{base:020d}.index", "ab") as f:
            f.write(b"\x00\x01\x02")
    with Log.open(path, CONFIG) as log:
        log.append([Record(value=b"more", timestamp=6_000)])
        assert log.recovery_examined == 3            # the two damaged ones and the last
        for base in (3, 6):
            assert any(f"{base:020d}.log: offset/time index rebuilt" in line for line in log.recovery_report)
    with Log.open(path, CONFIG) as log:
        log.append([Record(value=b"more", timestamp=6_000)])
        assert log.recovery_examined == 1 and not log.recovery_report
    verified = seglog("verify", tmp_path)
    assert verified.returncode == 0, verified.stdout
    with Log.open(path, readonly=True) as log:
        assert [r.offset for r in log.read()] == list(range(end + 2))
    # a damaged time index is found the same way; `seglog recover` (every segment examined) agrees
    with open(path / f"{3:020d}.timeindex", "ab") as f:
        f.write(b"\x00")
    recovered = seglog("recover", tmp_path)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert f"{3:020d}.log: offset/time index rebuilt" in recovered.stdout
    assert seglog("verify", tmp_path).returncode == 0


class PointLog(RuleBasedStateMachine):
    """The live log against the model, with crashes: after every step, a copy of the folder (what a
    restart finds) recovers to exactly the model's records, and examines no segment below the point."""

    @initialize(segment_bytes=st.sampled_from([1024, 2048]))
    def start(self, segment_bytes):
        self.dir = Path(tempfile.mkdtemp(prefix="seglog-point-"))
        self.path = self.dir / "t-0"
        self.config = {"segment.bytes": segment_bytes, "index.interval.bytes": 128}
        self.log = Log.open(self.path, self.config)
        self.model: list[tuple[int, bytes]] = []
        self.generation = 0

    def teardown(self):
        if hasattr(self, "log"):
            self.log.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    @rule(n=st.integers(1, 12), size=st.integers(0, 60))
    def append(self, n, size):
        end = self.log.log_end_offset
        values = [b"%d:" % (end + i) + b"v" * size for i in range(n)]
        self.log.append([Record(value=v, timestamp=1_000 + end + i) for i, v in enumerate(values)])
        self.model += [(end + i, v) for i, v in enumerate(values)]

    @rule()
    def roll(self):
        self.log.roll()

    @rule()
    def seal(self):
        self.log.seal_inactive()

    @rule()
    def close_and_reopen(self):
        self.log.close()
        self.log = Log.open(self.path, self.config)
        below = read_recovery_point(self.path, "t", 0)[0]
        bases = self.log.segment_bases()
        assert self.log.recovery_examined == sum(
            1 for i, b in enumerate(bases) if i == len(bases) - 1 or bases[i + 1] > below)

    @rule(fraction=st.floats(0, 1))
    def truncate(self, fraction):
        cut = int(self.log.log_end_offset * fraction)
        self.log.truncate_to(cut)
        self.model = [r for r in self.model if r[0] < cut]

    @rule()
    def crash(self):
        """The writer dies (no close): the restart's folder is a copy taken now, and the writer goes on there."""
        self.log.flush()
        self.generation += 1
        copy = self.dir / f"crash{self.generation}" / "t-0"
        shutil.copytree(self.path, copy)
        self.log.close()           # the original folder is abandoned
        self.path = copy
        self.log = Log.open(self.path, self.config)

    @invariant()
    def the_point_never_covers_more_than_the_log(self):
        if hasattr(self, "log"):
            assert read_recovery_point(self.path, "t", 0)[0] <= self.log.log_end_offset

    @invariant()
    def records_match_the_model(self):
        if hasattr(self, "log"):
            assert [(r.offset, r.value) for r in self.log.read()] == self.model


PointLog.TestCase.settings = settings(max_examples=30, stateful_step_count=30, deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
test_point_log = PointLog.TestCase
