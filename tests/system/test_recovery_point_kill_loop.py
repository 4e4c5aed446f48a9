"""SIGKILL at random moments of a writer that appends, rolls, seals, truncates and closes cleanly (each
close raises the recovery point, each truncation lowers it first, indexer/recovery_point.py); after
every kill a torn tail is sometimes added to the last segment. Recovery must find every durable record
(dense offsets, each record's own value), cut the torn tail, examine exactly the segments not wholly
below the recovery point, and leave a clean `verify` (docs/reliability.md)."""
from __future__ import annotations

import bisect
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from seglog.indexer import Log
from seglog.indexer.recovery_point import read_recovery_point

pytestmark = pytest.mark.slow
KILLS = int(os.environ.get("SEGLOG_KILLS", "12"))
CONFIG = {"segment.bytes": 2048, "index.interval.bytes": 256}

# Prints "D <end>" once everything below <end> is durable, "T <cut>" before a truncation starts.
WRITER = textwrap.dedent("""
    import random, sys
    from seglog.indexer import Log, Record
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    config = {"segment.bytes": 2048, "index.interval.bytes": 256}
    log = Log.open(path, config)
    while True:
        end = log.log_end_offset
        n = rng.randint(1, 30)
        log.append([Record(value=b"%d" % (end + i) + b"x" * rng.randint(0, 60), timestamp=1_000 + end + i)
                    for i in range(n)])
        r = rng.random()
        if r < 0.15:
            cut = rng.randint(log.log_start_offset, log.log_end_offset)
            print("T", cut, flush=True)
            log.truncate_to(cut)
        elif r < 0.25:
            log.roll()
        elif r < 0.3:
            log.seal_inactive()
        log.flush()
        if rng.random() < 0.2:
            log.close()                   # raises the recovery point to the log end
            log = Log.open(path, config)
        print("D", log.log_end_offset, flush=True)
""")

def after(durable: int, line: str) -> int:
    """The end every recovery must reach once the writer printed `line`: a D line's end, or a T line's cut (a
    truncation may be finished by recovery: its cut is then the end)."""
    kind, value = line.split()
    return int(value) if kind == "D" else min(durable, int(value))


def test_writer_with_recovery_points_killed_at_random_moments(tmp_path):
    path = tmp_path / "t-0"
    rng = random.Random(23)
    kills = torn = 0
    for round_ in range(KILLS):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(round_)], stdout=subprocess.PIPE,
                                text=True)
        durable = 0
        deadline = time.monotonic() + rng.uniform(0.3, 1.5)
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            durable = after(durable, line)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # The writer ran on between the last line read and the kill: what it printed then happened too (a
        # truncation it started lowers what must survive).
        for line in proc.stdout:
            durable = after(durable, line)
        proc.stdout.close()
        kills += 1
        with Log.open(path, CONFIG, readonly=True) as reader:
            last = reader.segment_bases()[-1]
            flushed_end = reader.log_end_offset
        add_torn = rng.random() < 0.5
        if add_torn:
            with open(path / f"{last:020d}.log", "ab") as fh:
                fh.write(bytes.fromhex("000000000000000900000200") + b"torn-tail")
        # Killed mid-truncation: recovery finishes it, and the cut may take the torn bytes with it.
        truncating = (path / "truncate.pending").exists()
        point = read_recovery_point(path, "t", 0)[0]
        with Log.open(path, CONFIG) as log:                       # recovery runs here
            bases = log.segment_bases()
            below = max(0, bisect.bisect_right(bases, point) - 1)
            assert log.recovery_examined == len(bases) - below, (point, bases, log.recovery_report)
            assert point <= max(flushed_end, log.log_end_offset)
            if add_torn and not truncating:
                torn += 1
                assert any("torn or corrupt tail" in line for line in log.recovery_report), log.recovery_report
            records = list(log.read())
            assert [r.offset for r in records] == list(range(log.log_start_offset, log.log_end_offset))
            assert all(r.value.startswith(b"%d" % r.offset) for r in records), "a record holds another's value"
            assert log.log_end_offset >= durable, (log.log_end_offset, durable)
            assert log.verify() == []
        assert not [n for n in os.listdir(path) if ".tmp-" in n or n == "truncate.pending"]
    print(f"kill loop (writer with recovery points): {kills} kills survived, {torn} torn tails cut")
    assert kills == KILLS
