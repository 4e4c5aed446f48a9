"""Decompression bombs and impossible record counts through every entry a user takes (issue 37 items 1
and 2): `seglog verify`, `seglog dump --print-data`, `Log.read` and the sidecar's `--once` cleaning a
compacted topic each meet a 16 KB zstd batch that inflates to 512 MiB, and a batch claiming 2^31-1
records, under a valid CRC. Each must end in a typed fault naming the file, the position and the bound,
with its peak memory (ru_maxrss of the child) within 64 MiB plus the largest legal inflated batch
(conf/limits.py INFLATED_BATCH_MAX) over the same command on the same topic without the bad batch."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from seglog.conf.limits import INFLATED_BATCH_MAX
from seglog.errors import CorruptRecordError
from seglog.indexer import Log, Record
from seglog.indexer.codec.compression import GZIP, LZ4, ZSTD, inflate_batch
from seglog.indexer.codec.records import HEADER_STRUCT
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.recovery_point import write_recovery_point
from seglog.indexer.topics import create_topic

from tests.indexer.bombs import append_raw, bomb, huge_count

SLACK = 64 << 20
COMPACT = {"cleanup.policy": "compact", "segment.bytes": 1 << 20, "segment.ms": 1 << 62,
           "min.cleanable.dirty.ratio": 0.01, "delete.retention.ms": 1000}

# Runs argv[2:] as `python -m seglog` (or, with argv[1] == "read", Log.read of a partition) and prints
# the child's peak RSS in KiB on its last stderr line, whatever the exit.
_MEASURED = textwrap.dedent("""
    import atexit, resource, runpy, sys
    atexit.register(lambda: print("PEAK", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr))
    if sys.argv[1] == "read":
        from seglog.indexer import Log
        from seglog.errors import SeglogError
        try:
            with Log.open(sys.argv[2], readonly=True) as log:
                print(sum(1 for _ in log.read(0)))
        except SeglogError as exc:
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
            sys.exit(1)
    else:
        sys.argv = ["seglog"] + sys.argv[2:]
        runpy.run_module("seglog", run_name="__main__")
""")


def measured(kind: str, *args) -> tuple[subprocess.CompletedProcess, int]:
    proc = subprocess.run([sys.executable, "-c", _MEASURED, kind, *map(str, args)], capture_output=True, text=True,
                          timeout=600)
    peak = [line for line in proc.stderr.splitlines() if line.startswith("PEAK ")]
    assert peak, proc.stderr[-3000:]
    return proc, int(peak[-1].split()[1]) * 1024


def topic(root: Path, name: str, batch: bytes | None, sealed: bool = True) -> Path:
    """A compacted topic: a segment of keyed records, then a second that makes the first cleanable;
    committed to the end. `batch` (at offset 12) is appended raw as a copied-in file would hold it:
    `sealed`, at the end of the first segment's file before the second is written (the recovery point
    moved past it: recovery would truncate it as an unreadable tail, and the readers are what is
    tested); else into the empty active segment at the end (where a writer cannot roll past it)."""
    create_topic(root, name, 1, COMPACT)
    path = root / f"{name}-0"
    old = time.time_ns() // 1_000_000 - 60_000
    end = 12
    with Log.open(path, COMPACT) as log:
        log.append([Record(key=b"k%d" % (i % 3), value=b"v%d" % i, timestamp=old) for i in range(end)])
    if batch is not None:
        base, _, *rest = HEADER_STRUCT.unpack_from(batch, 0)
        assert base == end
        end += rest[4] + 1                                        # its lastOffsetDelta + 1
    if batch is not None and sealed:
        append_raw(path / f"{0:020d}.log", batch)
        write_recovery_point(path, name, 0, end)
    with Log.open(path, COMPACT) as log:
        log.roll()
        if batch is not None and not sealed:
            append_raw(path / f"{12:020d}.log", batch)
            CommitLog(root, name).commit("w", 0, {0: end})
            return path
        assert log.log_end_offset == end
        log.append([Record(key=b"k%d" % (i % 3), value=b"w%d" % i, timestamp=old) for i in range(12)])
        log.roll()
        log.seal_inactive()
        CommitLog(root, name).commit("w", 0, {0: log.log_end_offset})
    return path


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    base = tmp_path_factory.mktemp("bombs")
    made = {"at": 0}
    for kind, batch in (("plain", None), ("bomb", bomb(12)), ("count", huge_count(12))):
        if kind == "bomb":
            made["at"] = (base / "plain" / "t-0" / f"{0:020d}.log").stat().st_size
        topic(base / kind, "t", batch, sealed=kind == "bomb")
        made[kind] = base / kind
    return made


def _sidecar(tmp: Path, root: Path):
    config = tmp / f"sidecar-{root.name}.yaml"
    config.write_text(f"root: {root}\nhttp: {{host: 127.0.0.1, port: 0}}\n")
    return measured("cli", "compactor", "run", "--once", "--config", config)


ENTRIES = {
    "verify": lambda tmp, root: measured("cli", "verify", root),
    "dump": lambda tmp, root: measured("cli", "dump", "--print-data", *sorted((root / "t-0").glob("*.log"))),
    "read": lambda tmp, root: measured("read", root / "t-0"),
    "sidecar": _sidecar,
}


# The count batch sits in the active segment (a writer cannot roll past it): verify takes what follows the
# last whole batch there for a write in flight, as after a crash, and the sidecar cleans sealed segments only.
@pytest.mark.parametrize("kind,entry", [("bomb", e) for e in sorted(ENTRIES)] + [("count", "dump"), ("count", "read")])
def test_a_hostile_batch_is_a_typed_fault_within_bounded_memory(roots, tmp_path, entry, kind):
    run = ENTRIES[entry]
    good, baseline = run(tmp_path, roots["plain"])
    assert good.returncode == 0, good.stdout[-2000:] + good.stderr[-3000:]
    bad, peak = run(tmp_path, roots[kind])
    out = bad.stdout + bad.stderr
    assert peak <= baseline + SLACK + INFLATED_BATCH_MAX, f"peak {peak >> 20} MiB over baseline {baseline >> 20} MiB"
    assert "Traceback" not in out and "MemoryError" not in out, out[-3000:]
    # the bomb follows the first segment's records; the count opens the (active) second segment
    at = roots["at"] if kind == "bomb" else 0
    assert f"position {at}" in out, out[-3000:]
    if entry != "sidecar":                                     # the sidecar reports the partition and goes on
        assert bad.returncode == 1, out[-3000:]
    if kind == "bomb":
        assert f"more than {INFLATED_BATCH_MAX} bytes" in out, out[-3000:]
    else:
        assert "record count 2147483647 cannot fit" in out, out[-3000:]
    if entry in ("verify", "read"):     # dump prints each file's name before its batches; the sidecar names
        assert f"{0 if kind == 'bomb' else 12:020d}.log" in out, out[-3000:]   # the partition


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_every_codec_stops_at_the_ceiling(codec):
    batch = bomb(0, INFLATED_BATCH_MAX + 4096, codec)
    with pytest.raises(CorruptRecordError, match=f"position 0: its .* records decompress to more than "
                                                 f"{INFLATED_BATCH_MAX} bytes"):
        inflate_batch(batch, 0, len(batch))
    fits = bomb(0, INFLATED_BATCH_MAX, codec)                 # at the ceiling exactly: read whole
    assert len(inflate_batch(fits, 0, len(fits))) == INFLATED_BATCH_MAX + 61


def test_the_roots_differ_only_by_the_batch(roots):
    # the baseline is the same command on the same topic without the hostile batch
    bomb_log = roots["bomb"] / "t-0" / f"{0:020d}.log"
    assert roots["at"] > 0 and 0 < bomb_log.stat().st_size - roots["at"] < 64 << 10
    assert (roots["count"] / "t-0" / f"{12:020d}.log").stat().st_size < 1024
