"""The parsers' fuzz profile (issue 37), run by tests/test_fuzz_parsers.py in a subprocess under a memory limit.

Usage: python -m tests.fuzz_parsers_worker TARGET SECONDS WORKDIR. Hypothesis mutates a valid input of TARGET
(batch walkers, index loaders, checkpoint files, commit files, the sidecar's config) for SECONDS and feeds each
example to the parser a user's process runs on it. seglog's typed errors (seglog.errors.SeglogError) are the
expected answer to bad input; anything else is printed as "UNTYPED <target>: <input> <error>" and the exit code is 3.
A MemoryError or a signal (the memory limit, a crash) is the subprocess's death, seen by the test.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from seglog.errors import SeglogError

untyped: list[str] = []


def mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    """`seed` with bytes flipped, overwritten with extreme integers, cut, or spliced with random bytes."""
    extremes = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x00",
                b"9" * 25, b"-1", b"\n", b"\x00", b"18446744073709551616", b"1e999", b"nan"]

    @st.composite
    def one(draw):
        data = bytearray(seed)
        for _ in range(draw(st.integers(0, 6))):
            kind = draw(st.integers(0, 4))
            at = draw(st.integers(0, max(0, len(data))))
            if kind == 0 and data:
                data[min(at, len(data) - 1)] ^= draw(st.integers(1, 255))
            elif kind == 1:
                data[at:at + 4] = draw(st.sampled_from(extremes))
            elif kind == 2:
                del data[at:]
            elif kind == 3:
                data[at:at] = draw(st.binary(max_size=64))
            else:
                data = bytearray(draw(st.binary(max_size=256)))
        return bytes(data)
    return one()


def attempt(target: str, data: bytes, fn) -> None:
    try:
        fn()
    except SeglogError:
        pass
    except Exception as exc:             # noqa: BLE001  (reported: bad input must give a typed error)
        if len(untyped) < 20:
            untyped.append(f"UNTYPED {target}: input {data[:200]!r}: {type(exc).__name__}: {exc}\n"
                           + "".join(traceback.format_exception(exc)[-2:]))


# ---------------------------------------------------------------------------------------------- targets

def _segment_seed(work: Path) -> bytes:
    from seglog.indexer import Log, Record
    path = work / "seed-0"
    if not path.exists():
        with Log.open(path, {"compression.type": "zstd", "segment.bytes": 1 << 20}) as log:
            for k in range(3):
                log.append([Record(b"k%d" % i, b"v%d" % i, 1_700_000_000_000 + i) for i in range(k * 5, k * 5 + 5)])
    return (path / f"{0:020d}.log").read_bytes()


def batches(work: Path):
    """The batch walkers: the header scan, the reference decoder, the columnar decoder, inflating."""
    from seglog.indexer.codec.columns import decode_to_arrow
    from seglog.indexer.codec.records import decode_batch, scan_batches

    def run(data: bytes) -> None:
        def walk():
            scan = scan_batches(data, 0, check_crc=False)
            for pos in scan.positions:
                decode_batch(data, int(pos))
            decode_to_arrow(data, scan.positions, start_offset=0, end_offset=1 << 62)
        attempt("batches", data, walk)
    return _segment_seed(work), run


def indexes(work: Path):
    """The index loaders: an .index and a .timeindex file as a reader opens them, then looked up."""
    from seglog.indexer.indexes.offset_index import OffsetIndex
    from seglog.indexer.indexes.time_index import TimeIndex
    seed = b"".join(int.to_bytes(i, 4, "big") + int.to_bytes(i * 100, 4, "big") for i in range(1, 9))

    def run(data: bytes) -> None:
        for cls, suffix in ((OffsetIndex, ".index"), (TimeIndex, ".timeindex")):
            f = work / f"{0:020d}{suffix}"
            f.write_bytes(data)

            def load():
                idx = cls(f, 0, 1 << 20, writable=False)
                try:
                    idx.sanity_check()
                    assert isinstance(idx.open_problems, list)
                    for i in range(min(idx.entries, 4)):
                        idx.entry(i)
                    if cls is OffsetIndex:
                        idx.lookup(5)
                finally:
                    idx.close()
            attempt(f"index {suffix}", data, load)
    return seed, run


def checkpoints(work: Path):
    """The checkpoint parsers: log-start-offset, recovery point, cleaner offsets, leader epochs."""
    from seglog.indexer import leader_epochs
    from seglog.indexer.checkpoint import read_offsets_file
    from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset
    from seglog.indexer.recovery_point import read_recovery_point, recovery_point_path
    part = work / "t-0"
    part.mkdir(exist_ok=True)
    seed = b"0\n2\nt 0 42\nt 1 7\n"

    def run(data: bytes) -> None:
        f = work / "offsets"
        f.write_bytes(data)
        attempt("log-start-offset checkpoint", data, lambda: read_offsets_file(f))
        recovery_point_path(part).write_bytes(data)
        attempt("recovery point", data, lambda: read_recovery_point(part, "t", 0))
        for name in ("cleaner-offset-checkpoint", "leader-epoch-checkpoint"):
            (part / name).write_bytes(data)
            (work / name).write_bytes(data)
        attempt("cleaner checkpoint", data, lambda: cleaner_offset(part))
        attempt("leader epochs", data, lambda: leader_epochs.checkpoint_max_epoch(part))
    return seed, run


def commits(work: Path):
    """The commit log's parser: a commit file as the readers find it."""
    from seglog.indexer.commit_log import CommitLog, commits_dir
    root = work / "root"
    log = CommitLog(root, "t")
    log.commit("w", 0, {0: 10, 1: 20})
    d = commits_dir(root, "t")
    files = sorted(p for p in d.iterdir() if p.is_file())
    seed = files[-1].read_bytes()

    def run(data: bytes) -> None:
        files[-1].write_bytes(data)
        attempt("commit file", data, lambda: (CommitLog(root, "t").latest(), CommitLog(root, "t").end_offsets()))
    return seed, run


def config(work: Path):
    """The sidecar's config loader (compactor/config.py) on a YAML file."""
    from seglog.compactor.config import load_config
    seed = (f"root: {work}\nhttp: {{host: 127.0.0.1, port: 0}}\nlog:\n  retention.ms: 60000\n"
            f"  segment.bytes: 1048576\n").encode()

    def run(data: bytes) -> None:
        f = work / "compactor.yaml"
        f.write_bytes(data)
        attempt("config", data, lambda: load_config(f))
    return seed, run


TARGETS = {"batches": batches, "indexes": indexes, "checkpoints": checkpoints, "commits": commits, "config": config}


def main() -> int:
    target, seconds, work = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    seed, run = TARGETS[target](work)
    examples = 0

    @settings(max_examples=200, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(mutated(seed))
    def one(data: bytes) -> None:
        nonlocal examples
        examples += 1
        run(data)

    stop = time.monotonic() + seconds
    while time.monotonic() < stop and not untyped:
        one()
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"target": target, "examples": examples}))
    for line in untyped:
        print(line)
    return 3 if untyped else 0


if __name__ == "__main__":
    sys.exit(main())
