"""Kafka's own DumpLogSegments on a segment fetched back from the remote tier (the loopback S3 server):
a tiered segment is a plain Kafka segment, its .log, .index and .timeindex byte for byte as tiered."""
from __future__ import annotations

import uuid

import pytest

from seglog.conf import validate_topic_config
from seglog.indexer import Log, Record
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.topics import create_topic
from tests.indexer.test_kafka_format import parse_dump
from tests.kafka_tools import dump_log_segments

T0 = 1_700_000_000_000
CFG = {"segment.bytes": 8192, "index.interval.bytes": 256, "remote.storage.enable": True, "retention.ms": -1,
       "local.retention.bytes": 0}


@pytest.mark.kafka
def test_dump_log_segments_accepts_a_segment_fetched_back_from_s3(tmp_path, s3_server):
    root = tmp_path / "root"
    create_topic(root, "t", 1, CFG)
    with Log.open(root / "t-0", CFG) as log:
        for i in range(0, 300, 5):
            log.append([Record(key=b"k%d" % j, value=b"value-%d" % j * 5, timestamp=T0 + j, headers=(("h", b"%d" % j),))
                        for j in range(i, i + 5)])
        log.seal_inactive()
    store = RemoteStore(RemoteLocation(s3_server.make_bucket(f"k-{uuid.uuid4().hex[:10]}") + "/p",
                                       endpoint=s3_server.endpoint, region="us-east-1"))
    res = tier_partition(root, "t", 0, validate_topic_config(CFG), store)
    assert res.local_deleted and not (root / "t-0" / f"{res.copied[0]:020d}.log").exists()   # remote only now
    seg = metadata.read_state(root, "t", 0).segments()[0]
    fetched = tmp_path / "fetched" / "t-0"
    fetched.mkdir(parents=True)
    for suffix in (".log", ".index", ".timeindex"):
        (fetched / f"{seg.base:020d}{suffix}").write_bytes(store.read(f"t-0/{seg.base:020d}{suffix}"))
    log_file = fetched / f"{seg.base:020d}.log"
    files, problems = parse_dump(dump_log_segments(["--deep-iteration", "--print-data-log", "--files", str(log_file)]))
    assert not problems, problems
    dumped = [r for b in files[str(log_file)].batches for r in b.records]
    assert [(d["offset"], d["key"], d["timestamp"]) for d in dumped] == \
        [(o, "k%d" % o, T0 + o) for o in range(seg.base, seg.next)]
    indexes = [str(fetched / f"{seg.base:020d}{s}") for s in (".index", ".timeindex")]
    _, problems = parse_dump(dump_log_segments(["--verify-index-only", "--files", ",".join(indexes)]))
    assert not problems, problems
