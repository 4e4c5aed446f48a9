"""Kafka as the judge of merged segments (docs/spec.md §3.10, docs/kafka.md): after small segments
(records with keys, null values, headers, varied batch sizes) are merged, Kafka's DumpLogSegments
`--deep-iteration --print-data-log` finds every batch of every merged `.log` valid, with consecutive
offsets, and dumps exactly the records seglog reads; `--verify-index-only` finds no index mismatch."""
from __future__ import annotations

import random

import pytest

from seglog.indexer.compaction import segment_merge
from seglog.indexer.log import Log
from seglog.indexer.codec.records import Record
from seglog.indexer.segment import now_ms
from tests.indexer.test_kafka_format import parse_dump
from tests.kafka_tools import dump_log_segments

CONFIG = {"segment.bytes": 16384, "index.interval.bytes": 200, "segment.index.bytes": 4096}


@pytest.mark.kafka
def test_dump_log_segments_accepts_merged_segments(tmp_path):
    part = tmp_path / "merged-0"
    rng = random.Random(13)
    now = now_ms()
    with Log.open(part, CONFIG) as log:
        for s in range(24):
            for _ in range(rng.randrange(1, 6)):
                log.append([Record(key=b"key-%d" % rng.randrange(25) if rng.random() < 0.8 else None,
                                   value=None if rng.random() < 0.1 else b"v-%d-" % s + b"x" * rng.randrange(300),
                                   timestamp=now - rng.randrange(100_000),
                                   headers=(("h", b"%d" % s),) if rng.random() < 0.3 else ())
                            for _ in range(rng.randrange(1, 12))])
            log.roll()
        log.append([Record(key=b"a", value=b"in the active segment", timestamp=now)])
        res = segment_merge.merge_log(log)
        assert len(res.groups) >= 2 and log.verify() == []
        records = list(log.read())
        bases = log.segment_bases()
    ranges = [(g[0], bases[bases.index(g[0]) + 1]) for g in res.groups]     # each merged segment's offsets
    merged = [part / f"{g[0]:020d}.log" for g in res.groups]
    out = dump_log_segments(["--deep-iteration", "--print-data-log", "--files", ",".join(map(str, merged))])
    files, problems = parse_dump(out)
    assert not problems, "DumpLogSegments found problems in merged segments:\n" + "\n".join(problems)
    assert all(b.valid for f in files.values() for b in f.batches)
    dumped = [r for p in merged for b in files[str(p)].batches for r in b.records]
    expected = [r for r in records if any(lo <= r.offset < hi for lo, hi in ranges)]
    assert [(d["offset"], d["key"], d["value"], d["timestamp"]) for d in dumped] == \
        [(r.offset, None if r.key is None else r.key.decode(), None if r.value is None else r.value.decode(),
          r.timestamp) for r in expected]
    indexes = [p.with_suffix(s) for p in merged for s in (".index", ".timeindex")]
    out = dump_log_segments(["--verify-index-only", "--files", ",".join(map(str, indexes))])
    _, problems = parse_dump(out)
    assert not problems, "DumpLogSegments --verify-index-only:\n" + out
