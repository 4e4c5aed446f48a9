"""A truncation that takes appends back leaves the segment files byte for byte as they were before
those appends (docs/format.md "Time index": which time index entries a truncation keeps). This is what
lets the sink refuse a batch, or roll back a failed attempt, without changing a byte of the log."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from seglog.indexer import Log, Record

CONFIG = {"segment.bytes": 1 << 20, "index.interval.bytes": 60, "segment.index.bytes": 4096}
T0 = 1_700_000_000_000

appends = st.lists(st.lists(st.integers(-1, 40), min_size=1, max_size=6), min_size=1, max_size=12)


def files(part: Path) -> dict[str, bytes]:
    """Each file's bytes; an index file's without its zero tail: a writer reserves the preallocated
    tail only once an append needs it (indexer/indexes/mmap_index.py), and a truncation keeps it reserved."""
    out = {}
    for p in sorted(part.iterdir()):
        if p.suffix in (".log", ".index", ".timeindex"):
            data = p.read_bytes()
            out[p.name] = data if p.suffix == ".log" else data.rstrip(b"\0")
    return out


def append_all(log: Log, batches) -> None:
    for ts in batches:
        log.append([Record(key=b"k", value=b"v" * 20, timestamp=-1 if t < 0 else T0 + t) for t in ts])


@settings(max_examples=120, deadline=None)
@given(before=appends, after=appends, reopen=st.booleans())
def test_truncating_back_restores_every_byte(before, after, reopen):
    with tempfile.TemporaryDirectory() as d:
        part = Path(d) / "t-0"
        log = Log.open(part, CONFIG)
        append_all(log, before)
        end = log.log_end_offset
        log.flush()
        if reopen:
            log.close()
            log = Log.open(part, CONFIG)
        was = files(part)
        append_all(log, after)
        log.truncate_to(end)
        assert files(part) == was
        log.close()
        closed = {p.name: p.stat().st_size for p in part.iterdir()}
        log = Log.open(part, CONFIG)
        append_all(log, after)
        log.truncate_to(end)
        log.close()                        # and closed again, the files are exactly as a close leaves them
        assert {p.name: p.stat().st_size for p in part.iterdir()} == closed
