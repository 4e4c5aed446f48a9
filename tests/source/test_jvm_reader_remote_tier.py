"""format("seglog") on a partition whose oldest segments are on the remote tier only (docs/tiered-storage.md
§6): the reads that need those offsets read them (tests/remote/test_jvm_tiered_reads.py compares them row
for row with the log before tiering); a remote tier this process cannot reach fails loudly, naming it
(RemoteTierNotReadableException), whatever failOnDataLoss says, never returning fewer rows; a read of the
local tier alone is unchanged."""
from __future__ import annotations

import shutil

import pytest

from seglog.conf import validate_topic_config
from seglog.indexer.commit_log import CommitLog
from seglog.indexer import Log, Record
from seglog.indexer.remote.location import RemoteLocation, record_location
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.remote.tiered_log import TieredLog
from seglog.indexer.topics import create_topic

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CFG = {"segment.bytes": 2048, "index.interval.bytes": 128, "remote.storage.enable": True, "retention.ms": -1,
       "local.retention.bytes": 3000}


@pytest.fixture(scope="module")
def tiered_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiered") / "root"
    create_topic(root, "t", 1, CFG)
    with Log.open(root / "t-0", CFG, outside_commit_log=True) as log:
        for i in range(120):
            log.append([Record(key=b"k%d" % i, value=b"v" * 60, timestamp=T0 + i * 1000)])
        log.seal_inactive()
        end = log.log_end_offset
    CommitLog(root, "t").commit("w", 0, {0: end})
    remote = root.parent / "remote"
    remote.mkdir()
    loc = RemoteLocation(f"file://{remote}")
    record_location(root, loc)
    res = tier_partition(root, "t", 0, validate_topic_config(CFG), RemoteStore(loc))
    assert res.local_deleted
    with TieredLog(root, "t", 0) as tiered:
        local_start = tiered.local_log_start_offset
        assert tiered.log_start_offset == 0 < local_start
    return root, local_start, end


def read(spark, root, **options):
    r = spark.read.format("seglog").option("topic", "t")
    for k, v in options.items():
        r = r.option(k, v)
    return sorted(row.offset for row in r.load(str(root)).select("offset").collect())


@pytest.mark.parametrize("options, first", [
    ({}, 0), ({"failOnDataLoss": "false"}, 0), ({"startingOffsets": '{"t": {"0": 5}}'}, 5),
    ({"startingOffsets": '{"t": {"0": 5}}', "failOnDataLoss": "false"}, 5), ({"startingTimestamp": str(T0 + 3_000)}, 3),
], ids=["earliest", "earliest-no-fail", "offset", "offset-no-fail", "timestamp"])
def test_a_read_that_needs_the_remote_tier_reads_it(spark, tiered_root, options, first):
    root, local_start, end = tiered_root
    assert first < local_start
    assert read(spark, root, **options) == list(range(first, end))


@pytest.mark.parametrize("options", [{}, {"failOnDataLoss": "false"}], ids=["earliest", "earliest-no-fail"])
def test_a_remote_tier_that_cannot_be_reached_fails_naming_it(spark, tiered_root, tmp_path, options):
    root, local_start, _ = tiered_root
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    (copy / "_seglog" / "remote.json").unlink()              # the root no longer says where its remote tier is
    with pytest.raises(Exception) as caught:
        read(spark, copy, **options)
    text = str(caught.value)
    assert "RemoteTierNotReadableException" in text
    assert f"records tiered segments (offsets 0 to {local_start - 1})" in text and "remote.json is missing" in text


def test_a_read_of_the_local_tier_alone_is_unchanged(spark, tiered_root):
    root, local_start, end = tiered_root
    assert read(spark, root, startingOffsets=f'{{"t": {{"0": {local_start}}}}}') == list(range(local_start, end))
    assert read(spark, root, startingTimestamp=str(T0 + (local_start + 2) * 1000)) == list(range(local_start + 2, end))
