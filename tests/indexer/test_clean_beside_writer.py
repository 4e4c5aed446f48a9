"""Clean and merge beside the writer (docs/spec.md §3.9, indexer/compaction/swap_gate.py): the output is
built without the partition's lock, which is taken for each group's swap only, re-checked under it.

- A writer appends and rolls through the Log API in this process while another process cleans (or
  merges) the same partition in a loop: the partition's lock is free while a build's `.cleaned` files
  are being written, every lock hold of the cleaner is one group's swap (as many holds as groups, each
  short), and the log ends as the brute-force compaction model says (tests/indexer/test_compaction_model.py).
- Retention or a truncation between a group's build and its swap: the group is not swapped, its
  output removed, the cleaner checkpoint unchanged, nothing lost.
- One cleaner or merger per partition (the maintenance lock): a second one gets MaintenanceLockedError
  and changes nothing; a writable open's recovery leaves a live build's `.cleaned` files alone.
- SIGKILL of the cleaner process at random moments of build and swap while the writer goes on
  appending: recovery leaves no offset twice, nothing never written, every key's latest record, a
  clean verify; a last clean leaves the model's records.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from seglog.errors import MaintenanceLockedError, PartitionLockedError
from seglog.indexer import Log, Record
from seglog.indexer.compaction import clean_swap, swap_gate
from seglog.indexer.compaction.cleaner import clean_partition
from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset
from seglog.indexer.compaction.segment_merge import merge_partition
from seglog.indexer.locks import maintenance_lock, partition_lock
from tests.indexer.test_compaction_model import Model

BASE_TS = 1_700_000_000_000
CFG = {"cleanup.policy": "compact", "segment.bytes": 32768, "index.interval.bytes": 1024, "segment.ms": 1 << 62,
       "min.cleanable.dirty.ratio": 0.01, "delete.retention.ms": 86_400_000, "min.compaction.lag.ms": 0,
       "segment.index.bytes": 65536}
ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("SEGLOG_KILLS", "16"))


def append_round(log: Log, rng: random.Random, written: dict, round_: int, n: int = 400) -> None:
    recs = [Record(key=b"key-%d" % rng.randrange(300),
                   value=None if rng.random() < 0.05 else b"r%d-" % round_ + b"v" * rng.randrange(80),
                   timestamp=BASE_TS + round_)
            for _ in range(n)]
    info = log.append(recs)
    for i, r in enumerate(recs):
        written[info.first_offset + i] = r


def fill(path: Path, rounds: int, rng: random.Random, written: dict, n: int = 400,
         roll_each: bool = False) -> None:
    with Log.open(path, CFG) as log:
        for r in range(rounds):
            append_round(log, rng, written, r, n)
            if roll_each:
                log.roll()
        log.roll()


def model_of(path: Path, written: dict) -> Model:
    """The compaction model over everything written, after one clean from offset 0: the state any
    sequence of cleans reaches once a last clean covers the log (tombstones are kept: a long
    delete.retention.ms), whatever the cleans before it did."""
    model = Model()
    model.records = dict(written)
    with Log.open(path, CFG, readonly=True) as log:
        model.clean(log, int(time.time() * 1000), CFG)
    return model


def check_safe(path: Path, written: dict) -> list[int]:
    """After anything (a kill included): recovery on open, then no offset twice, nothing never written,
    every key's latest record there, a clean verify, no build or swap file left."""
    with Log.open(path, CFG, lock_timeout=60) as log:
        got = [(r.offset, r.key, r.value) for r in log.read()]
        assert log.verify() == []
    offsets = [g[0] for g in got]
    assert offsets == sorted(set(offsets)), "an offset twice"
    assert all((written[o].key, written[o].value) == (k, v) for o, k, v in got), "a record never written"
    latest: dict[bytes, int] = {}
    for o in sorted(written):
        latest[written[o].key] = o
    assert set(latest.values()) <= set(offsets), "a key's latest record was lost"
    assert not [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap"))]
    return offsets


def check_model(path: Path, written: dict) -> None:
    want = sorted(model_of(path, written).records)
    with Log.open(path, CFG, readonly=True) as log:
        assert [r.offset for r in log.read()] == want


def cleaner(path: Path, rounds: int, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "tests.indexer.clean_worker", str(path), json.dumps(CFG),
                             str(rounds), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env=env)


@pytest.mark.parametrize("op", ["clean", "merge"])
def test_a_writer_appends_while_another_process_cleans_or_merges(tmp_path, op):
    path = tmp_path / "state-0"
    rng = random.Random(3)
    written: dict[int, Record] = {}
    # Merge: 40 small segments before the merger starts, so its first pass has several groups whatever
    # the timing (the writer's later small segments may each be merged alone as they come).
    fill(path, 40, rng, written, *((400, False) if op == "clean" else (60, True)))
    proc = cleaner(path, 1000, op)
    free_during_build = 0
    try:
        for r in range(40, 70):
            with Log.open(path, CFG, lock_timeout=60) as log:   # the sink's executor: open, append, close
                append_round(log, rng, written, r, 400 if op == "clean" else 60)   # merge: small segments
                log.roll()
            # While a build writes its `.cleaned` files (before its commit renames them), the lock is free.
            for _ in range(20):
                if any(n.endswith(".log.cleaned") for n in os.listdir(path)):
                    try:
                        lock = partition_lock(path).acquire(0)
                    except PartitionLockedError:
                        continue                    # a swap beginning: it renames them next
                    building = any(n.endswith(".log.cleaned") for n in os.listdir(path))
                    lock.release()
                    free_during_build += building
                time.sleep(0.002)
    finally:
        (tmp_path / "stop").touch()
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    lines = [json.loads(line) for line in out.splitlines()]
    swaps = [line for line in lines if line["op"] in ("clean", "merge")]
    assert any(line["groups"] for line in swaps if line["op"] == op)
    assert free_during_build > 0, "the partition's lock was held while a build wrote its output"
    for line in swaps:
        # One hold per group tried: every swapped group, plus the one given up under the lock, if any.
        assert len(line["holds_ms"]) in (len(line["groups"]), len(line["groups"]) + 1), line
        assert max(line["holds_ms"], default=0) < 1000, line       # a swap, never a build (loaded machine)
    assert any(len(line["holds_ms"]) > 1 for line in swaps), "many groups, many short holds"
    # A last clean over everything: the model's records.
    with Log.open(path, CFG) as log:
        log.roll()
    assert clean_partition(path, CFG, force=True).given_up is None     # nothing left to clean, or cleaned
    check_safe(path, written)
    check_model(path, written)


def _racing(monkeypatch, change) -> None:
    """`change()` runs beside the first group's swap, between its build and the check under the lock."""
    real = swap_gate.SwapGate.swap_in
    done = []

    def swap_in(self, snap, swap):
        if not done:
            done.append(True)
            change()
        return real(self, snap, swap)

    monkeypatch.setattr(swap_gate.SwapGate, "swap_in", swap_in)


@pytest.mark.parametrize("what", ["retention", "truncation below the group", "truncation below the key map's end"])
def test_a_change_between_build_and_swap_gives_the_group_up(tmp_path, monkeypatch, what):
    path = tmp_path / "state-0"
    written: dict[int, Record] = {}
    fill(path, 30, random.Random(5), written)
    with Log.open(path, CFG, readonly=True) as log:
        bases = log.segment_bases()
    checkpoint_before = cleaner_offset(path)

    def change() -> None:
        with Log.open(path, CFG) as writer:       # the writer: the cleaner holds no partition lock now
            if what == "retention":
                writer.config = writer.config.with_overrides({"cleanup.policy": "compact,delete",
                                                              "retention.bytes": writer.size_bytes() // 2})
                assert writer.apply_retention().deleted_bases
            elif what == "truncation below the group":
                writer.truncate_to(bases[0] + 5)
            else:
                writer.truncate_to(bases[1] + 5)

    _racing(monkeypatch, change)
    res = clean_partition(path, CFG, force=True)
    assert res.given_up is not None and not res.cleaned and res.groups == []
    assert len(res.lock_holds_ms) == 1
    assert cleaner_offset(path) == checkpoint_before or cleaner_offset(path) == 0   # named before, never moved
    assert not [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap"))]
    with Log.open(path, CFG) as log:
        survivors = {r.offset: (r.key, r.value) for r in log.read()}
        start, end = log.log_start_offset, log.log_end_offset
        assert log.verify() == []
    # Nothing lost: exactly what the retention or truncation left, untouched by the clean.
    assert survivors == {o: (r.key, r.value) for o, r in written.items() if start <= o < end}


def test_a_merge_given_up_when_retention_takes_its_group(tmp_path, monkeypatch):
    path = tmp_path / "m-0"
    cfg = dict(CFG, **{"cleanup.policy": "delete", "segment.merge.small.bytes": 1 << 20})
    with Log.open(path, cfg) as log:
        for r in range(8):
            log.append([Record(key=b"k", value=b"v" * 100, timestamp=BASE_TS + r) for _ in range(50)])
            log.roll()
        before = [(r.offset, r.value) for r in log.read()]

    def change() -> None:
        with Log.open(path, cfg) as writer:
            writer.config = writer.config.with_overrides({"retention.bytes": writer.size_bytes() - 100})
            assert writer.apply_retention().deleted_bases

    _racing(monkeypatch, change)
    res = merge_partition(path, cfg)
    assert res.given_up is not None and res.groups == []
    assert not [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap"))]
    with Log.open(path, cfg) as log:
        after = [(r.offset, r.value) for r in log.read()]
        assert log.verify() == []
    assert after == [b for b in before if b[0] >= log.log_start_offset]


def test_one_cleaner_or_merger_at_a_time(tmp_path, monkeypatch):
    path = tmp_path / "state-0"
    written: dict[int, Record] = {}
    fill(path, 10, random.Random(1), written)
    names = sorted(os.listdir(path))
    busy = maintenance_lock(path).acquire(0)         # another cleaner, as far as these are concerned
    try:
        with pytest.raises(MaintenanceLockedError):
            clean_partition(path, CFG, force=True)
        with pytest.raises(MaintenanceLockedError):
            merge_partition(path, CFG)
        with Log.open(path, CFG) as log, pytest.raises(MaintenanceLockedError):
            log.clean(force=True)                    # tried once under the partition's lock: no deadlock
        # A live build's output survives a writable open's recovery, which changes nothing there, so
        # fsyncs no folder (a sink's open beside a clean must not wait on the clean's journal commit).
        (path / f"{0:020d}.log.cleaned").write_bytes(b"")
        synced: list[Path] = []
        real_fsync_dir = clean_swap.fsync_dir
        monkeypatch.setattr(clean_swap, "fsync_dir", lambda d: (synced.append(Path(d)), real_fsync_dir(d)))
        with Log.open(path, CFG) as log:
            assert log.recovery_report == []
        assert (path / f"{0:020d}.log.cleaned").exists()
        assert synced == []
    finally:
        busy.release()
    with Log.open(path, CFG) as log:                 # no builder: a stale one is a crash's, removed
        assert any(".cleaned" in line for line in log.recovery_report)
    assert synced == [path]                          # ... and the removal made durable
    assert sorted(os.listdir(path)) == names
    assert cleaner_offset(path) is None


@pytest.mark.slow
def test_cleaner_killed_at_random_moments_beside_a_writer(tmp_path):
    path = tmp_path / "state-0"
    rng = random.Random(11)
    written: dict[int, Record] = {}
    fill(path, 30, rng, written)
    kills = mid_build = mid_swap = 0
    work_s = 0.5          # how long a round's first clean took (learnt from an unkilled one): kills fall within it
    for round_ in range(KILLS):
        fill(path, 6, rng, written)                # dirty segments: the clean rewrites every group
        proc = cleaner(path, 1000, "both")         # cleans and merges until killed
        assert json.loads(proc.stdout.readline())["op"] == "start"
        done = threading.Event()

        def write(r=round_) -> None:
            with Log.open(path, CFG, lock_timeout=60) as log:
                append_round(log, rng, written, 100 + r, 200)
                log.roll()
            done.set()

        writer = threading.Timer(rng.uniform(0.0, work_s), write)
        writer.start()
        time.sleep(rng.uniform(0.2, 2.0) * work_s)    # the map early, the rewrite and swaps late, then idle
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
            left = os.listdir(path)     # before the writer's next open recovers them
            mid_build += any(n.endswith(".cleaned") for n in left)
            mid_swap += any(n.endswith(".swap") for n in left)
        out, _ = proc.communicate()
        first = [json.loads(line) for line in out.splitlines() if '"clean"' in line][:1]
        if first:
            work_s = max(0.05, first[0]["duration_ms"] / 1000)
        writer.join(120)
        assert done.is_set()
        check_safe(path, written)
    with Log.open(path, CFG) as log:
        log.roll()
    assert clean_partition(path, CFG, force=True).given_up is None
    check_safe(path, written)
    check_model(path, written)
    print(f"cleaner beside a writer: {kills} kills in {KILLS} rounds, {mid_build} mid-build, {mid_swap} mid-swap")
    assert kills >= KILLS * 3 // 4


def test_a_builds_writeback_is_started_as_it_is_written(tmp_path):
    """indexer/writeback.py: a kick per MiB written (the writeback of a `.cleaned` segment starts while
    it is built, not all at its seal's fsync), the call itself accepted by the kernel, the bytes intact.
    What it buys is measured in bench/clean_lock.py (a sink batch beside a clean)."""
    from seglog.indexer import writeback
    path = tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        kicker = writeback.WritebackKicker(fd)
        chunk = os.urandom(256 << 10)
        size = 0
        for _ in range(16):                         # 4 MiB in 256 KiB writes
            size += os.pwrite(fd, chunk, size)
            kicker.written(size)
        if writeback._sync_file_range is not None:
            assert kicker._kicked == 4 << 20        # a kick per MiB, the last at the end
            assert writeback._sync_file_range(fd, 0, 4 << 20, writeback._SYNC_FILE_RANGE_WRITE) == 0
        else:                                       # not Linux: the kicker does nothing, by design
            assert kicker._kicked == 0
        os.fsync(fd)
        assert path.read_bytes() == chunk * 16
    finally:
        os.close(fd)
