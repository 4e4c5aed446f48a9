"""Readers race the writer and the sidecar's jobs (docs/reliability.md): a reader PROCESS loops
read-only opens, reads up to the committed end, lookups and `segments()`, while this process
appends, truncates uncommitted tails, rolls, seals, enforces retention and purges. Every reader
error is counted: no raw OS error and no wrong row is allowed; a typed OffsetOutOfRangeError is
allowed only for records retention really removed (below the log start the reader then sees)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pytest

from seglog.indexer import Log
from seglog.indexer.commit_log import CommitLog

pytestmark = pytest.mark.slow
SECONDS = 12

READER = textwrap.dedent("""
    import json, sys, time
    from seglog.errors import OffsetOutOfRangeError
    from seglog.indexer import Log
    from seglog.indexer.commit_log import CommitLog
    root, seconds = sys.argv[1], float(sys.argv[2])
    stats = {"reads": 0, "rows": 0, "lookups": 0, "lost_to_retention": 0, "errors": []}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        end = CommitLog(root, "t").end_offsets().get(0, 0)
        try:
            with Log.open(root + "/t-0", readonly=True) as log:
                start = log.log_start_offset
                rows = [(r.offset, r.timestamp, r.value) for r in log.read(start, end)]
                if [o for o, _, _ in rows] != list(range(start, max(start, end))):
                    stats["errors"].append(f"offsets {rows[:1]}..{rows[-1:]} for [{start}, {end})")
                for o, t, v in rows:
                    if v != b"%d" % o or t != 1_000_000 + o:
                        stats["errors"].append(f"wrong row at {o}: {t} {v[:20]!r}")
                        break
                if rows:
                    probe = rows[len(rows) // 2]
                    got = log.offset_for_timestamp(probe[1])
                    if got is None or got > probe[0]:
                        stats["errors"].append(f"lookup {probe[1]} gave {got}, record {probe[0]} has it")
                    stats["lookups"] += 1
                log.segments()
                stats["reads"] += 1
                stats["rows"] += len(rows)
        except OffsetOutOfRangeError as exc:
            stats["lost_to_retention"] += 1      # checked by the parent against the log start
            stats.setdefault("typed", []).append(str(exc)[:200])
        except Exception as exc:
            import traceback
            stats["errors"].append(f"{type(exc).__name__}: {exc} @ " + " < ".join(f"{f.name}:{f.lineno}" for f in reversed(traceback.extract_tb(exc.__traceback__)))[:600])
    print(json.dumps(stats))
""")


def test_a_reader_process_races_writer_and_sidecar_jobs(tmp_path):
    root = tmp_path / "root"
    config = {"segment.bytes": 2048, "index.interval.bytes": 256, "retention.bytes": 20_000,
              "file.delete.delay.ms": 0}
    log = Log.open(root / "t-0", config, outside_commit_log=True)
    commits = CommitLog(root, "t")
    reader = subprocess.Popen([sys.executable, "-c", READER, str(root), str(SECONDS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rng = np.random.default_rng(3)
    batch = 0
    deadline = time.monotonic() + SECONDS + 1
    try:
        while time.monotonic() < deadline and reader.poll() is None:
            base = log.log_end_offset
            n = int(rng.integers(1, 30))
            log.append_columns(pa.array([b"%d" % (base + i) for i in range(n)]),
                               timestamps=np.arange(base, base + n, dtype=np.int64) + 1_000_000)
            if rng.random() < 0.3:                    # an uncommitted tail cut back, as the sink's roll-back
                log.truncate_to(base + int(rng.integers(0, n)))
            log.flush()
            commits.commit("w", batch, {0: log.log_end_offset})
            batch += 1
            if rng.random() < 0.2:
                log.roll()
            if rng.random() < 0.3:
                log.seal_inactive()
                log.apply_retention()
                log.purge_deleted()
        out, err = reader.communicate(timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
        log.close()
    stats = json.loads(out.strip().splitlines()[-1])
    print(f"reader race: {stats['reads']} reads, {stats['rows']} rows, {stats['lookups']} lookups, "
          f"{stats['lost_to_retention']} typed data-loss reports, {batch} commits")
    for e in stats["errors"][:8]:
        print("READER ERROR", e)
    assert stats["errors"] == [], stats["errors"][:5]
    assert stats["reads"] > 20 and batch > 50
    for message in stats.get("typed", []):
        assert "below the log start" in message or "deleted" in message, message


def test_readers_of_the_committed_range_never_judge_a_tail_being_cut_back(tmp_path):
    """Issue 23, item 6: the sink's roll back. The writer keeps appending past the committed end and
    cutting that uncommitted tail back, so a reader's view of the active segment often ends inside a
    batch being cut or rewritten. Reading [start, committed) must never report corruption for bytes
    past its bound (it did, ~0.4% of reads, "batch at position N has length N, past the end")."""
    root = tmp_path / "root"
    config = {"segment.bytes": 1 << 20, "index.interval.bytes": 128}
    log = Log.open(root / "t-0", config, outside_commit_log=True)
    commits = CommitLog(root, "t")
    reader = subprocess.Popen([sys.executable, "-c", READER, str(root), str(SECONDS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rng = np.random.default_rng(11)
    batch, cuts = 0, 0
    deadline = time.monotonic() + SECONDS + 1
    try:
        while time.monotonic() < deadline and reader.poll() is None:
            base = log.log_end_offset
            n = int(rng.integers(1, 20))
            log.append_columns(pa.array([b"%d" % (base + i) for i in range(n)]),
                               timestamps=np.arange(base, base + n, dtype=np.int64) + 1_000_000)
            log.flush()
            commits.commit("w", batch, {0: log.log_end_offset})
            batch += 1
            committed = log.log_end_offset
            for _ in range(int(rng.integers(1, 4))):       # an uncommitted tail: written, then cut back
                m = int(rng.integers(1, 40))
                log.append_columns(pa.array([b"u" * int(rng.integers(1, 300)) for _ in range(m)]),
                                   timestamps=np.full(m, 5, dtype=np.int64), max_batch_bytes=int(rng.integers(64, 4096)))
                log.truncate_to(committed)
                cuts += 1
            if rng.random() < 0.05:
                log.roll()
        out, err = reader.communicate(timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
        log.close()
    stats = json.loads(out.strip().splitlines()[-1])
    print(f"roll-back race: {stats['reads']} reads, {stats['rows']} rows, {cuts} tails cut back, {batch} commits")
    assert stats["errors"] == [], stats["errors"][:5]
    assert stats["reads"] > 20 and cuts > 100


def test_a_reader_opening_while_a_truncation_has_cut_the_log_below_its_index(tmp_path):
    """`finish_truncation` cuts the `.log` before the indexes: a read-only open in between sees an
    offset index entry past the file's end. It reads what the file holds, never a corruption report."""
    import os

    with Log.open(tmp_path / "t-0", {"index.interval.bytes": 100}, outside_commit_log=True) as log:
        for k in range(20):
            log.append_columns(pa.array([b"%d" % (3 * k + i) for i in range(3)]),
                               timestamps=np.full(3, 1_000_000 + k, np.int64), max_batch_bytes=64)
        seg = log.active_segment
        last = seg.offset_index.last_entry()
        cut_at = seg.position_of(30)[0]          # the batch holding offset 30 starts here
        assert cut_at < last[1]
        os.truncate(seg.log_path, cut_at + 7)    # mid-batch, below the last index entry
        with Log.open(tmp_path / "t-0", readonly=True) as ro:
            assert [r.offset for r in ro.read(0, 30)] == list(range(30))
            assert ro.log_end_offset == 30 and [r.offset for r in ro.read()] == list(range(30))
            assert ro.offset_for_timestamp(1_000_000 + 9) == 27
