"""One root per remote prefix (issue 36 item 14; docs/tiered-storage.md §2, indexer/remote/owner.py): a second
root configured with the same URI is refused before it writes or deletes anything there, the first root's reads
stay its own; the sweep deletes only what its metadata log recorded; a root tiered before owner objects claims
its prefix on its next pass. Through the loopback S3 server (moto) and file://."""
from __future__ import annotations

import json
import uuid

import pytest

from seglog.conf import validate_topic_config
from seglog.errors import RemotePrefixOwnedError
from seglog.indexer import Log, Record
from seglog.indexer.remote import metadata, owner
from seglog.indexer.remote.location import RemoteLocation
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.remote.tiered_log import TieredLog
from seglog.indexer.topics import create_topic

T0 = 1_700_000_000_000
CFG = {"segment.bytes": 1024, "segment.ms": 1 << 62, "index.interval.bytes": 64, "remote.storage.enable": True,
       "retention.ms": -1, "local.retention.bytes": 0}


def fill(root, tag: bytes, n=100):
    create_topic(root, "t", 1, CFG)
    with Log.open(root / "t-0", CFG) as log:
        for i in range(n):
            log.append([Record(key=b"k%d" % i, value=tag + b"-%d" % i + b"." * 200, timestamp=T0 + i)])
        log.seal_inactive()
    return validate_topic_config(CFG)


def values(root) -> list[bytes]:
    with TieredLog(root, "t", 0) as log:
        return [r.value for r in log.read(log.log_start_offset)]


def every_object(store) -> dict[str, bytes]:
    out = {}
    for d in store.list_dirs(""):
        for name in store.list(d):
            out[f"{d}/{name}"] = store.read(f"{d}/{name}")
    return out


@pytest.fixture(params=["s3", "file"])
def store(request, tmp_path):
    if request.param == "file":
        (tmp_path / "remote").mkdir()
        return RemoteStore(RemoteLocation(f"file://{tmp_path}/remote"))
    s3 = request.getfixturevalue("s3_server")
    uri = s3.make_bucket(f"own-{uuid.uuid4().hex[:10]}") + "/p"
    return RemoteStore(RemoteLocation(uri, endpoint=s3.endpoint, region="us-east-1"))


def test_a_second_root_on_the_same_uri_is_refused_and_changes_nothing(tmp_path, store):
    a, b = tmp_path / "a", tmp_path / "b"
    cfg = fill(a, b"A")
    assert tier_partition(a, "t", 0, cfg, store).copied
    want = values(a)
    assert len(want) == 100 and all(v.startswith(b"A-") for v in want)
    objs = every_object(store)
    cfg_b = fill(b, b"B")
    b_meta = metadata.metadata_path(b, "t", 0)
    for _ in range(2):
        with pytest.raises(RemotePrefixOwnedError) as err:
            tier_partition(b, "t", 0, cfg_b, store)
        assert str(a.resolve()) in str(err.value) and str(b) in str(err.value)
        assert owner.root_id(a) in str(err.value) and owner.root_id(b) in str(err.value)
    assert every_object(store) == objs                     # nothing written or deleted
    assert not b_meta.exists()
    assert values(a) == want                               # A reads its own rows
    assert tier_partition(a, "t", 0, cfg, store).summary() == {}


def test_a_reader_refuses_a_prefix_another_root_owns(tmp_path, store):
    a = tmp_path / "a"
    cfg = fill(a, b"A")
    tier_partition(a, "t", 0, cfg, store)
    rec = json.loads(store.read(owner.OWNER_KEY))
    assert rec["root_id"] == owner.root_id(a)
    store.put_bytes(owner.OWNER_KEY, json.dumps({**rec, "root_id": uuid.uuid4().hex, "root": "/elsewhere"}).encode())
    with pytest.raises(RemotePrefixOwnedError, match="/elsewhere"):
        values(a)
    with pytest.raises(RemotePrefixOwnedError, match="/elsewhere"):
        tier_partition(a, "t", 0, cfg, store)


def test_a_root_tiered_before_owner_objects_claims_its_prefix(tmp_path, store):
    """An existing tiered root (no root id, no owner object) keeps working: read as before, claimed on its next
    pass, even with a crashed copy's unrecorded objects at its remote end."""
    a = tmp_path / "a"
    cfg = fill(a, b"A")
    tier_partition(a, "t", 0, cfg, store)
    store.delete(owner.OWNER_KEY)
    owner.root_id_path(a).unlink()                         # as the root was before this change
    end = metadata.read_state(a, "t", 0).end
    store.put_bytes(f"t-0/{end:020d}.log", b"a crashed copy's")
    want = values(a)
    assert len(want) == 100
    tier_partition(a, "t", 0, cfg, store)
    assert json.loads(store.read(owner.OWNER_KEY))["root_id"] == owner.root_id(a)
    assert values(a) == want


def test_the_sweep_deletes_only_what_the_metadata_log_recorded(tmp_path, store):
    a = tmp_path / "a"
    cfg = fill(a, b"A")
    tier_partition(a, "t", 0, cfg, store)
    stray = "t-0/99999999999999999999.log.note"            # not a segment's object: never recorded
    store.put_bytes(stray, b"someone else's")
    with Log.open(a / "t-0", CFG) as log:
        for i in range(100, 130):
            log.append([Record(key=b"k", value=b"." * 200, timestamp=T0 + i)])
        log.seal_inactive()
    res = tier_partition(a, "t", 0, cfg, store)
    assert res.copied and stray not in res.swept
    assert store.read(stray) == b"someone else's"
