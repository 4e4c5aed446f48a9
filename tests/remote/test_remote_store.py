"""The remote tier's store (indexer/remote/store.py) and location record (indexer/remote/location.py):
the same answers through file:// and a real S3 server on loopback (moto's server mode)."""
from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from seglog.errors import ConfigError
from seglog.indexer.remote.location import RemoteLocation, load_location, location_path, parse_location, record_location
from seglog.indexer.remote.store import RemoteStore


@pytest.fixture(params=["file", "s3"])
def store(request, tmp_path):
    if request.param == "file":
        (tmp_path / "remote").mkdir()
        return RemoteStore(RemoteLocation(f"file://{tmp_path}/remote"))
    server = request.getfixturevalue("s3_server")
    uri = server.make_bucket(f"b-{uuid.uuid4().hex[:12]}") + "/some/prefix"
    return RemoteStore(RemoteLocation(uri, endpoint=server.endpoint, region="us-east-1"))


def test_put_read_list_delete_round_trip(store, tmp_path):
    data = bytes(range(256)) * 4000          # ~1 MB: more than one read
    src = tmp_path / "seg.log"
    src.write_bytes(data)
    got = store.put_file(src, "t-0/00000000000000000000.log")
    assert got == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    store.put_bytes("t-0/00000000000000000000.manifest.json", b"{}")
    assert store.read("t-0/00000000000000000000.log", 1000, 10) == data[1000:1010]   # a ranged read
    assert store.read("t-0/00000000000000000000.log") == data
    assert store.hash("t-0/00000000000000000000.log") == got
    assert store.size("t-0/00000000000000000000.log") == len(data)
    assert store.list("t-0") == ["00000000000000000000.log", "00000000000000000000.manifest.json"]
    assert store.list("t-1") == []
    store.delete("t-0/00000000000000000000.log")
    store.delete("t-0/00000000000000000000.log")                          # already gone: fine
    assert store.list("t-0") == ["00000000000000000000.manifest.json"]
    assert store.size("t-0/00000000000000000000.log") is None
    assert store.hash("t-0/00000000000000000000.log") is None
    with pytest.raises(FileNotFoundError):
        store.read("t-0/00000000000000000000.log", 0, 4)


@pytest.mark.parametrize("raw,problem", [
    ({}, "'uri'"), ({"uri": "gs://b/p"}, "scheme 'gs'"), ({"uri": "file://relative/p"}, "absolute path"),
    ({"uri": "s3:///p"}, "bucket"), ({"uri": "s3://b", "endpoint": "127.0.0.1:9000"}, "'endpoint'"),
    ({"uri": "s3://b", "bucket": "x"}, "unknown key 'bucket'"), ({"uri": "s3://b", "region": 5}, "'region'"),
])
def test_bad_locations_are_refused_by_name(raw, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_location(raw, "remote")


def test_the_location_is_recorded_once_and_never_silently_changed(tmp_path):
    loc = parse_location({"uri": "s3a://bucket/prefix/", "endpoint": "http://127.0.0.1:9", "region": "eu"}, "remote")
    assert loc.uri == "s3a://bucket/prefix"
    assert load_location(tmp_path) is None
    record_location(tmp_path, loc)
    assert load_location(tmp_path) == loc
    assert "secret" not in location_path(tmp_path).read_text().lower()
    record_location(tmp_path, loc)                                        # the same again: no change
    moved = RemoteLocation("s3://other/prefix")
    with pytest.raises(ConfigError, match="orphaned"):
        record_location(tmp_path, moved)
    assert json.loads(location_path(tmp_path).read_text())["uri"] == "s3a://bucket/prefix"
