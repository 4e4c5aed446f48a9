"""SIGKILL at random moments of a writer appending and flushing, of a writer truncating, and of the
sidecar's pass; after every kill, recovery must find every flushed record, dense offsets, a clean
`verify` and no temporary file left (docs/reliability.md). Prints the number of kills survived."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from seglog.indexer import Log

pytestmark = pytest.mark.slow
KILLS = int(os.environ.get("SEGLOG_KILLS", "12"))
CONFIG = {"segment.bytes": 4096, "index.interval.bytes": 256}

WRITER = textwrap.dedent("""
    import random, sys
    from seglog.indexer import Log, Record
    path, seed, truncating = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
    rng = random.Random(seed)
    config = {"segment.bytes": 4096, "index.interval.bytes": 256}
    with Log.open(path, config, outside_commit_log=True) as log:
        while True:
            end = log.log_end_offset
            n = rng.randint(1, 40)
            log.append([Record(value=b"%d" % (end + i) + b"x" * rng.randint(0, 80), timestamp=1_000 + end + i)
                        for i in range(n)])
            if truncating and rng.random() < 0.3:
                log.truncate_to(rng.randint(log.log_start_offset, log.log_end_offset))
            log.flush()
            print(log.log_end_offset, flush=True)     # everything below this is durable
            if rng.random() < 0.1:
                log.roll()
""")


def check(path, flushed_end: int | None, *, exact: bool) -> int:
    with Log.open(path, CONFIG, outside_commit_log=True) as log:                      # recovery runs here
        records = list(log.read())
        offsets = [r.offset for r in records]
        assert offsets == list(range(log.log_start_offset, log.log_end_offset)), "offsets not dense"
        assert all(r.value.startswith(b"%d" % r.offset) for r in records), "a record holds another's value"
        if flushed_end is not None:
            assert (log.log_end_offset == flushed_end) if exact else (log.log_end_offset >= flushed_end)
        assert log.verify() == []
        end = log.log_end_offset
    assert not [n for n in os.listdir(path) if ".tmp-" in n or n == "truncate.pending"]
    return end


@pytest.mark.parametrize("truncating", [False, True])
def test_writer_killed_at_random_moments(tmp_path, truncating):
    path = tmp_path / "t-0"
    rng = random.Random(11)
    kills = 0
    for round_ in range(KILLS):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(round_), "1" if truncating else "0"],
                                stdout=subprocess.PIPE, text=True)
        flushed = None
        deadline = time.monotonic() + rng.uniform(0.3, 1.5)
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            flushed = int(line)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        # flushed records survive; with truncation the last flushed end is the end only if no
        # truncation came after it, so then only the invariants are checked
        check(path, None if truncating else flushed, exact=False)
    print(f"kill loop ({'truncating' if truncating else 'appending'} writer): {kills} kills survived")
    assert kills == KILLS


SIDECAR_CONFIG = """
root: {root}
log: {{retention.ms: 60000, segment.bytes: 4096, index.interval.bytes: 256, file.delete.delay.ms: 0}}
http: {{host: 127.0.0.1, port: 0}}
"""


def test_sidecar_pass_killed_at_random_moments(tmp_path):
    import numpy as np
    import pyarrow as pa

    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.topics import create_topic

    root = tmp_path / "root"
    create_topic(root, "t", 2, {"segment.bytes": 4096, "index.interval.bytes": 256})
    now = int(time.time() * 1000)
    ends = {}
    for p in range(2):
        with Log.open(root / f"t-{p}", CONFIG, outside_commit_log=True) as log:
            for k in range(60):   # old records (expired by retention.ms=60000) then recent ones
                ts = now - 3_600_000 + k if k < 40 else now + k
                log.append_columns(pa.array([b"%d" % (log.log_end_offset + i) + b"y" * 50 for i in range(20)]),
                                   timestamps=np.full(20, ts, np.int64))
            ends[p] = log.log_end_offset
    CommitLog(root, "t").commit("w", 0, ends)
    config = tmp_path / "compactor.yaml"
    config.write_text(SIDECAR_CONFIG.format(root=root))
    rng = random.Random(5)
    kills = 0
    for _ in range(KILLS):
        proc = subprocess.Popen([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.7))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        for p in range(2):
            with Log.open(root / f"t-{p}", readonly=True) as log:
                start = log.log_start_offset
                assert [r.offset for r in log.read()] == list(range(start, ends[p]))
                # retention may only have removed expired records: the recent ones all remain
                assert start <= 40 * 20
    done = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for p in range(2):
        end = check(root / f"t-{p}", ends[p], exact=True)
        with Log.open(root / f"t-{p}", readonly=True) as log:
            # whole segments go: every expired-only segment, none holding a recent record
            assert 40 * 20 - 4096 // 70 <= log.log_start_offset <= 40 * 20 and end == ends[p]
            assert all(r.timestamp < now for r in log.read(log.log_start_offset, 40 * 20))
    print(f"kill loop (sidecar --once): {kills} kills survived")
