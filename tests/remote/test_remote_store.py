"""The remote tier's store (indexer/remote/store.py) and location record (indexer/remote/location.py):
the same answers through file:// and real servers on loopback: S3 (moto's server mode), GCS
(fake-gcs-server) and Azure Storage (Azurite); hdfs:// where no libhdfs is installed is a typed error
naming what is missing."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from seglog.errors import ConfigError, StorageError
from seglog.indexer.remote.location import RemoteLocation, load_location, location_path, parse_location, record_location
from seglog.indexer.remote.store import RemoteStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["file", "s3", "gs", "abfs"])
def store(request, tmp_path):
    if request.param == "file":
        (tmp_path / "remote").mkdir()
        return RemoteStore(RemoteLocation(f"file://{tmp_path}/remote"))
    if request.param == "gs":
        server = request.getfixturevalue("gcs_server")
        uri = server.make_bucket(f"b-{uuid.uuid4().hex[:12]}") + "/some/prefix"
        return RemoteStore(parse_location({"uri": uri, "endpoint": server.endpoint}, "test"))
    if request.param == "abfs":
        server = request.getfixturevalue("azurite_server")
        uri = server.make_container(f"c-{uuid.uuid4().hex[:12]}") + "/some/prefix"
        return RemoteStore(parse_location({"uri": uri, "endpoint": server.endpoint}, "test"))
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
    ({}, "'uri'"), ({"uri": "ftp://b/p"}, "scheme 'ftp'"), ({"uri": "file://relative/p"}, "absolute path"),
    ({"uri": "s3:///p"}, "bucket"), ({"uri": "s3://b", "endpoint": "127.0.0.1:9000"}, "'endpoint'"),
    ({"uri": "s3://b", "bucket": "x"}, "unknown key 'bucket'"), ({"uri": "s3://b", "region": 5}, "'region'"),
    ({"uri": "gs:///p"}, "GCS URI names its bucket"), ({"uri": "gs://b", "region": "eu"}, "only S3 locations"),
    ({"uri": "abfs://acct.dfs.core.windows.net/p"}, "container and storage account"),
    ({"uri": "abfss://c@/p"}, "container and storage account"),
    ({"uri": "hdfs:///p"}, "names its namenode"),
    ({"uri": "hdfs://nn:8020/p", "endpoint": "http://nn:9870"}, "the URI names the namenode"),
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


@pytest.mark.parametrize("uri,key_path", [
    ("gs://bucket/pre/fix", "bucket/pre/fix/t-0/x"),
    ("abfs://cont@acct.dfs.core.windows.net/pre", "cont/pre/t-0/x"),
    ("abfss://cont@acct.dfs.core.windows.net", "cont/t-0/x"),
])
def test_gcs_and_azure_locations_name_their_bucket_or_container(uri, key_path):
    """The store's keys go under the bucket (GCS) or the container (Azure: the account is the filesystem's
    root, as in pyarrow's AzureFileSystem); nothing is reached until an object is."""
    loc = parse_location({"uri": uri}, "remote")
    assert loc.uri == uri and RemoteStore(loc).path("t-0/x") == key_path
    if loc.scheme.startswith("abfs"):
        assert loc.azure_container_and_account == ("cont", "acct")


HDFS_PROBE = """
import sys
from seglog.errors import RemoteTierUnavailableError
from seglog.indexer.remote.location import parse_location
from seglog.indexer.remote.store import RemoteStore
try:
    RemoteStore(parse_location({"uri": "hdfs://127.0.0.1:1/seglog"}, "remote"))
except RemoteTierUnavailableError as exc:
    print(exc)
    sys.exit(0)
sys.exit(3)
"""


def _java_home() -> str | None:
    import shutil

    java = shutil.which("java")
    return str(Path(java).resolve().parents[1]) if java else None


@pytest.mark.parametrize("jvm", ["no JAVA_HOME", "JAVA_HOME without libhdfs"])
def test_hdfs_without_its_native_client_is_a_typed_error_naming_what_is_missing(jvm):
    """pyarrow reaches hdfs:// through libhdfs and a JVM; where they are missing (as here: no Hadoop
    installation) the store names the scheme and what to install or set. A fresh process each time: pyarrow
    loads libjvm into the process that asks."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "ARROW_LIBHDFS_DIR", "HADOOP_HOME")}
    if jvm != "no JAVA_HOME":
        home = _java_home()
        if home is None or not list(Path(home).glob("lib/server/libjvm.so")):
            pytest.fail("no JDK with lib/server/libjvm.so beside `java` on PATH (seglog's tests need Java 17+)")
        env["JAVA_HOME"] = home
    proc = subprocess.run([sys.executable, "-c", HDFS_PROBE], env=env, capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    said = proc.stdout.strip()
    assert said.startswith("remote tier hdfs://127.0.0.1:1/seglog: scheme 'hdfs://' is reached through pyarrow's "
                           "HadoopFileSystem, which needs")
    if jvm == "no JAVA_HOME":
        assert "needs a JVM: set JAVA_HOME" in said and "libjvm" in said
    else:
        assert "needs Hadoop's native libhdfs.so: set ARROW_LIBHDFS_DIR" in said and "libhdfs" in said


def test_an_object_this_process_cannot_reach_is_a_storage_error_never_a_missing_one(azurite_server, monkeypatch):
    """A wrong credential (Azurite refuses the request) fails every operation by name, the URI and the key;
    `hash` does not answer None (missing), which `verify --remote` would report as a lost object. A key
    that is no account key at all is refused before any request."""
    from tests.emulators import AZURITE_KEY

    uri = azurite_server.make_container(f"c-{uuid.uuid4().hex[:12]}") + "/p"
    location = parse_location({"uri": uri, "endpoint": azurite_server.endpoint}, "test")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "==" + AZURITE_KEY[:-2])     # not base64: refused by name
    with pytest.raises(ConfigError, match="AZURE_STORAGE_ACCOUNT_KEY is not base64"):
        RemoteStore(location)                  # (pyarrow's client would abort the process on its first read)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "A" + AZURITE_KEY[1:])       # base64, the wrong key
    store = RemoteStore(location)
    ops = {"list": lambda: store.list("t-0"), "size": lambda: store.size("t-0/x.log"),
           "read": lambda: store.read("t-0/x.log"), "hash": lambda: store.hash("t-0/x.log"),
           "write": lambda: store.put_bytes("t-0/x.log", b"x"), "delete": lambda: store.delete("t-0/x.log")}
    for name, op in ops.items():
        with pytest.raises(StorageError) as info:
            op()
        assert str(info.value).startswith(f"remote tier {uri}: cannot "), name
        assert "t-0" in str(info.value), name


class _TransferFails:
    """The store's real client (a file:// one here), but its first `times` ranged reads fail as the AWS SDK for C++
    fails a GET whose body it could not take in (the exact text pyarrow raises)."""

    TEXT = ("When reading information for key 'some/key' in bucket 'b': AWS Error INTERNAL_FAILURE during GetObject "
            "operation: Failed to flush response stream")

    def __init__(self, fs, times: int):
        self.fs, self.left, self.reads = fs, times, 0

    def open_input_file(self, path):
        outer, real = self, self.fs.open_input_file(path)

        class File:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                real.close()

            def size(self):
                return real.size()

            def read_at(self, length, offset):
                outer.reads += 1
                if outer.left > 0:
                    outer.left -= 1
                    raise OSError(outer.TEXT)
                return real.read_at(length, offset)

        return File()


def test_a_read_the_client_gave_up_on_in_transfer_is_sent_again(tmp_path, caplog):
    """The SDK reports a failed transfer of a GET's body as INTERNAL_FAILURE and does not retry it (seen in the
    soak against the loopback server under load): the store reads again, at most READ_ATTEMPTS times in all,
    and says so in a warning; a read that keeps failing is a StorageError naming the object."""
    from seglog.indexer.remote.store import READ_ATTEMPTS

    (tmp_path / "remote").mkdir()
    store = RemoteStore(RemoteLocation(f"file://{tmp_path}/remote"))
    store.put_bytes("t-0/x.log", b"0123456789")
    store.fs = _TransferFails(store.fs, READ_ATTEMPTS - 1)
    with caplog.at_level("WARNING", logger="seglog.remote"):
        assert store.read("t-0/x.log", 2, 5) == b"23456"
    assert store.fs.reads == READ_ATTEMPTS
    assert sum("reading it again" in r.getMessage() for r in caplog.records) == READ_ATTEMPTS - 1

    store.fs = _TransferFails(store.fs.fs, READ_ATTEMPTS)
    with pytest.raises(StorageError, match=r"cannot read t-0/x\.log.*Failed to flush response stream"):
        store.read("t-0/x.log", 2, 5)
    assert store.fs.reads == READ_ATTEMPTS


def test_a_read_failing_otherwise_is_not_sent_again(tmp_path):
    """Only the transfer the client gave up on is sent again: any other failure is the caller's at once."""
    (tmp_path / "remote").mkdir()
    store = RemoteStore(RemoteLocation(f"file://{tmp_path}/remote"))
    store.put_bytes("t-0/x.log", b"0123456789")
    store.fs = _TransferFails(store.fs, 1)
    store.fs.TEXT = "AWS Error ACCESS_DENIED during GetObject operation: Access Denied"
    with pytest.raises(StorageError, match="Access Denied"):
        store.read("t-0/x.log")
    assert store.fs.reads == 1
