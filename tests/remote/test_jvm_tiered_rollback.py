"""The JVM write's exactly-once roll back never cuts below a partition's remote end (docs/tiered-storage.md
§4), through `df.write.format("seglog")` in local[2]: the partition holds records past its committed end
(written by the core's Log API before any commit, as a crashed write's publish leaves them) and the tier
job copied them, so the roll back a write starts with would cut tiered offsets. The write is refused with
the typed error sink/write_errors.py maps (OffsetOutOfRangeError naming the partition and the offsets),
and every file of the partition, its metadata log and the commit log stay as they were."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from seglog.conf import validate_topic_config
from seglog.errors import OffsetOutOfRangeError
from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.topics import create_topic
from seglog.sink.write_errors import typed_error

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
TIERED = {"segment.bytes": 1024, "segment.ms": 1 << 62, "index.interval.bytes": 64, "remote.storage.enable": True,
          "retention.ms": -1}


def tiered_topic(tmp_path: Path, topic: str, extra: dict) -> tuple[Path, int]:
    """`topic` written past its committed end (none yet) and tiered; returns the root and the remote end."""
    root = tmp_path / "root"
    cfg = dict(TIERED, **extra)
    create_topic(root, topic, 1, cfg)
    with Log.open(root / f"{topic}-0", cfg, outside_commit_log=True) as log:
        for i in range(30):
            log.append([Record(key=b"k%d" % i, value=b"v" * 300, timestamp=T0 + i)])
        log.seal_inactive()
    (tmp_path / "remote").mkdir(exist_ok=True)
    tier_partition(root, topic, 0, validate_topic_config(cfg), RemoteStore(RemoteLocation(f"file://{tmp_path}/remote")))
    remote_end = metadata.read_state(root, topic, 0).end
    assert remote_end is not None and remote_end > 0
    return root, remote_end


def snapshot(root: Path, topic: str) -> dict[str, str]:
    """What the refusal must not change: the partition's files, its metadata log, the log start checkpoint."""
    paths = list((root / f"{topic}-0").iterdir()) + [metadata.metadata_path(root, topic, 0)]
    paths += [p for p in root.glob("log-start-offset-checkpoint")]
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


@pytest.mark.parametrize("local_copies", ["kept", "deleted by local retention"])
def test_a_roll_back_below_the_remote_end_is_refused_by_name_and_changes_nothing(spark, tmp_path, local_copies):
    topic = "t"
    extra = {} if local_copies == "kept" else {"local.retention.bytes": 0}
    root, remote_end = tiered_topic(tmp_path, topic, extra)
    if local_copies != "kept":      # the cut would be a restart of the log (CommittedEndRollBack.restart)
        with Log.open(root / f"{topic}-0", readonly=True) as log:
            assert log.segment_bases()[0] == remote_end
    before = snapshot(root, topic)
    assert CommitLog(root, topic).latest() is None           # committed end 0: a roll back would cut to 0
    df = spark.createDataFrame([(b"k", b"new")], "key binary, value binary")
    with pytest.raises(Exception) as info:
        (df.write.format("seglog").mode("append").option("topic", topic)
         .option("txnAppId", "app").option("txnVersion", "0").save(str(root)))
    err = typed_error(info.value)
    assert isinstance(err, OffsetOutOfRangeError), str(info.value)[:3000]
    assert (f"cannot roll partition {topic}-0 back to its committed end 0: offsets up to {remote_end - 1} are tiered "
            f"to the remote tier") in str(err)
    assert snapshot(root, topic) == before
    assert CommitLog(root, topic).latest() is None
