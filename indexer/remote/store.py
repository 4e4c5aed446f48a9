"""The remote tier's objects through `pyarrow.fs` (docs/tiered-storage.md §2): `file://`, `s3://` (`s3a://`
taken as `s3://`), `gs://`, `abfs://`/`abfss://` (an endpoint override for MinIO, a loopback server,
fake-gcs-server or Azurite) and `hdfs://`. Keys are relative to the location's URI; one prefix per
topic-partition, per segment `<base>.log`, `.index`, `.timeindex` and `<base>.manifest.json`.

Credentials are never recorded: each client takes them from the process's environment (S3: the AWS
variables or default chain; GCS: Google's default credentials, anonymous for a plain-HTTP emulator
endpoint; Azure: AZURE_STORAGE_ACCOUNT_KEY, else the Azure default credential; HDFS: the login user or a
Kerberos ticket, through the Hadoop configuration libhdfs reads).

Uploads stream in fixed chunks and hash as they go: memory stays flat with segment size.
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import logging
import os
import time
from urllib.parse import ParseResult, urlparse

import pyarrow
import pyarrow.fs as pafs

from seglog.errors import ConfigError, RemoteTierUnavailableError, StorageError
from seglog.indexer.names import partition_dir_name
from seglog.indexer.remote.location import RemoteLocation

CHUNK = 8 << 20            # bytes per upload write (one S3 multipart part's worth)
MANIFEST_SUFFIX = ".manifest.json"
AZURE_KEY_ENV = "AZURE_STORAGE_ACCOUNT_KEY"
# How long the GCS client retries an operation (transient errors, and obtaining credentials) before it
# fails: its own default is 15 minutes, which would hold a tier pass that long where no credential or
# network is there (measured: a list without credentials failed after the limit, not before).
GCS_RETRY_LIMIT = datetime.timedelta(seconds=60)
_AZURE_DEFAULT_DFS = ".dfs.core.windows.net"


# What a client raises for a failed operation: an OSError mostly, a bare ArrowException from some (the Azure
# client's namespace probe when no credential can be had).
_FAILURES = (OSError, pyarrow.ArrowException)
_MISSING = ("does not exist", "NoSuchKey", "NOT_FOUND", "BlobNotFound")


# The AWS SDK for C++ under pyarrow's S3 client reports a GET whose response body it could not take in ("Failed to
# flush response stream") as INTERNAL_FAILURE, which its own retry policy treats as final, though the transfer is
# what failed, not the request (seen under load against a loopback server; other users of the SDK retry it, e.g.
# apache/doris#61636). A ranged read changes nothing, so it is sent again, a bounded number of times.
_TRANSIENT_READ = ("Failed to flush response stream",)
READ_ATTEMPTS = 3
_log = logging.getLogger("seglog.remote")


def _transient(exc: BaseException) -> bool:
    """Whether a failed read is one the client gave up on too soon (`_TRANSIENT_READ`)."""
    return any(m in str(exc) for m in _TRANSIENT_READ)


def _missing(exc: BaseException) -> bool:
    """Whether a client's failure says the object is not there (each client words it its own way)."""
    return isinstance(exc, FileNotFoundError) or any(m in str(exc) for m in _MISSING)


def segment_key(topic: str, partition: int, base: int, suffix: str) -> str:
    return f"{partition_dir_name(topic, partition)}/{base:020d}{suffix}"


def _client(location: RemoteLocation, name: str):
    """pyarrow.fs's class `name`, or a RemoteTierUnavailableError when this pyarrow was built without it."""
    cls = getattr(pafs, name, None)
    if cls is None:
        raise RemoteTierUnavailableError(f"remote tier {location.uri}: scheme '{location.scheme}://' is reached "
                                         f"through pyarrow.fs.{name}, which this pyarrow ({pyarrow.__version__}) "
                                         f"was built without")
    return cls


def _endpoint(location: RemoteLocation) -> ParseResult | None:
    return urlparse(location.endpoint) if location.endpoint else None


def _s3(location: RemoteLocation, parsed: ParseResult) -> tuple[pafs.FileSystem, str]:
    kwargs = {}
    if location.region:
        kwargs["region"] = location.region
    ep = _endpoint(location)
    if ep is not None:
        kwargs["endpoint_override"] = ep.netloc
        kwargs["scheme"] = ep.scheme
    return _client(location, "S3FileSystem")(**kwargs), f"{parsed.netloc}{parsed.path}"


def _gcs(location: RemoteLocation, parsed: ParseResult) -> tuple[pafs.FileSystem, str]:
    kwargs = {"retry_time_limit": GCS_RETRY_LIMIT}
    ep = _endpoint(location)
    if ep is not None:
        kwargs["endpoint_override"] = ep.netloc
        kwargs["scheme"] = ep.scheme
        # Google serves GCS over https only: a plain-HTTP endpoint is an emulator (fake-gcs-server), and no
        # credential is sent over plain HTTP.
        kwargs["anonymous"] = ep.scheme == "http"
    return _client(location, "GcsFileSystem")(**kwargs), f"{parsed.netloc}{parsed.path}"


def _azure(location: RemoteLocation, parsed: ParseResult) -> tuple[pafs.FileSystem, str]:
    container, account = location.azure_container_and_account
    kwargs = {"account_name": account}
    key = os.environ.get(AZURE_KEY_ENV)
    if key:
        try:
            base64.b64decode(key, validate=True)
        except ValueError:
            # pyarrow's client takes any text here and aborts the whole process when a read decodes it
            raise ConfigError(f"remote tier {location.uri}: {AZURE_KEY_ENV} is not base64, as an Azure storage "
                              f"account key is (copy it whole from the account's access keys)") from None
        kwargs["account_key"] = key
    ep = _endpoint(location)
    host_suffix = parsed.netloc.partition("@")[2][len(account):]       # ".dfs.core.windows.net"
    if ep is not None:          # an emulator (Azurite) or a private endpoint: both services at one authority
        kwargs.update(blob_storage_authority=ep.netloc, dfs_storage_authority=ep.netloc,
                      blob_storage_scheme=ep.scheme, dfs_storage_scheme=ep.scheme)
    elif host_suffix != _AZURE_DEFAULT_DFS and host_suffix.startswith(".dfs."):
        # another Azure cloud (.dfs.core.chinacloudapi.cn, ...): its blob service beside its dfs one
        kwargs.update(dfs_storage_authority=host_suffix, blob_storage_authority=".blob." + host_suffix[len(".dfs."):])
    return _client(location, "AzureFileSystem")(**kwargs), f"{container}{parsed.path}"


def _hdfs_missing(exc: Exception) -> str:
    """What a failed HadoopFileSystem set-up lacks, as a user can act on it."""
    said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "libjvm" in said:
        what = "needs a JVM: set JAVA_HOME to a Java installation (pyarrow loads its libjvm.so)"
    elif "libhdfs" in said:
        what = ("needs Hadoop's native libhdfs.so: set ARROW_LIBHDFS_DIR to the folder holding it (or HADOOP_HOME, "
                "whose lib/native holds it)")
    else:
        what = ("cannot connect to the namenode (with libhdfs, CLASSPATH must hold Hadoop's jars: "
                "`hadoop classpath --glob`)")
    return f"{what}; pyarrow said: {said}"


def _hdfs(location: RemoteLocation, parsed: ParseResult) -> tuple[pafs.FileSystem, str]:
    cls = _client(location, "HadoopFileSystem")
    try:
        fs = cls(parsed.hostname, parsed.port or 8020)
    except OSError as exc:
        raise RemoteTierUnavailableError(f"remote tier {location.uri}: scheme 'hdfs://' is reached through "
                                         f"pyarrow's HadoopFileSystem, which {_hdfs_missing(exc)}") from None
    return fs, parsed.path


def _filesystem(location: RemoteLocation) -> tuple[pafs.FileSystem, str]:
    """The location's pyarrow filesystem and the path its keys go under. Credentials come from the
    environment (the module doc), never from the recorded location."""
    parsed = urlparse(location.uri)
    if parsed.scheme == "file":
        return pafs.LocalFileSystem(), parsed.path.rstrip("/")
    make = {"s3": _s3, "s3a": _s3, "gs": _gcs, "abfs": _azure, "abfss": _azure, "hdfs": _hdfs}[parsed.scheme]
    try:
        fs, base = make(location, parsed)
    except (RemoteTierUnavailableError, ConfigError):
        raise
    except (*_FAILURES, ValueError) as exc:
        raise RemoteTierUnavailableError(f"remote tier {location.uri}: pyarrow's client for '{parsed.scheme}://' "
                                         f"cannot be set up: {type(exc).__name__}: {exc}") from None
    return fs, base.rstrip("/")


class RemoteStore:
    """One root's remote tier. Every failure is a StorageError naming the object."""

    def __init__(self, location: RemoteLocation):
        self.location = location
        self.fs, self.base = _filesystem(location)
        # Object stores have no folders; a local or HDFS file needs its parent folder made first.
        self._make_dirs = location.scheme in ("file", "hdfs")

    def path(self, key: str) -> str:
        return f"{self.base}/{key}"

    def _fail(self, what: str, key: str, exc: Exception) -> StorageError:
        return StorageError(f"remote tier {self.location.uri}: {what} {key}: {type(exc).__name__}: {exc}")

    def put_file(self, local: str | os.PathLike, key: str) -> dict:
        """Copy a local file to `key`, streaming; returns its {"size", "sha256"} as copied."""
        digest, size = hashlib.sha256(), 0
        try:
            if self._make_dirs:
                self.fs.create_dir(self.path(key).rpartition("/")[0], recursive=True)
            with open(local, "rb", buffering=0) as src, self.fs.open_output_stream(self.path(key)) as out:
                while True:
                    chunk = src.read(CHUNK)
                    if not chunk:
                        break
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
        except FileNotFoundError:
            raise
        except _FAILURES as exc:
            raise self._fail("cannot write", key, exc) from exc
        return {"size": size, "sha256": digest.hexdigest()}

    def put_bytes(self, key: str, data: bytes) -> None:
        try:
            if self._make_dirs:
                self.fs.create_dir(self.path(key).rpartition("/")[0], recursive=True)
            with self.fs.open_output_stream(self.path(key)) as out:
                out.write(data)
        except _FAILURES as exc:
            raise self._fail("cannot write", key, exc) from exc

    def read(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        """`length` bytes of `key` from `offset` (all of it when None): one ranged read, sent again (at most
        READ_ATTEMPTS in all) when the client gave up on its transfer too soon (`_transient`)."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                return self._read_once(key, offset, length)
            except _FAILURES as exc:
                if _missing(exc):
                    raise FileNotFoundError(self.path(key)) from exc
                if attempt == READ_ATTEMPTS or not _transient(exc):
                    raise self._fail("cannot read", key, exc) from exc
                _log.warning("remote tier %s: read of %s at %d failed in transfer (%s); reading it again (%d of %d)",
                             self.location.uri, key, offset, exc, attempt + 1, READ_ATTEMPTS)
                time.sleep(0.05 * attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _read_once(self, key: str, offset: int, length: int | None) -> bytes:
        with self.fs.open_input_file(self.path(key)) as f:
            if length is None:
                length = f.size() - offset
            return f.read_at(length, offset) if length > 0 else b""

    def size(self, key: str) -> int | None:
        """`key`'s size, None when it is missing."""
        try:
            info = self.fs.get_file_info(self.path(key))
        except _FAILURES as exc:
            raise self._fail("cannot look up", key, exc) from exc
        return info.size if info.type == pafs.FileType.File else None

    def hash(self, key: str) -> dict | None:
        """{"size", "sha256"} of `key` read back in chunks, or None when it is missing (any other
        failure is a StorageError: an object this process cannot reach is not a missing one)."""
        digest, size = hashlib.sha256(), 0
        try:
            with self.fs.open_input_stream(self.path(key)) as f:
                while True:
                    chunk = f.read(CHUNK)
                    if not chunk:
                        break
                    digest.update(chunk)
                    size += len(chunk)
        except _FAILURES as exc:
            if _missing(exc):
                return None
            raise self._fail("cannot read", key, exc) from exc
        return {"size": size, "sha256": digest.hexdigest()}

    def list(self, prefix: str) -> list[str]:
        """The object names (not keys) directly under `prefix`; [] when there is none."""
        sel = pafs.FileSelector(self.path(prefix), allow_not_found=True, recursive=False)
        try:
            return sorted(i.base_name for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.File)
        except _FAILURES as exc:
            raise self._fail("cannot list", prefix, exc) from exc

    def list_dirs(self, prefix: str) -> list[str]:
        """The names of the folders (common prefixes) directly under `prefix` ("" for the location's own)."""
        sel = pafs.FileSelector(self.path(prefix).rstrip("/"), allow_not_found=True, recursive=False)
        try:
            return sorted(i.base_name for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.Directory)
        except _FAILURES as exc:
            raise self._fail("cannot list", prefix or "/", exc) from exc

    def delete(self, key: str) -> None:
        """Delete `key`; an object already gone is fine (deletion is finished by the next pass)."""
        try:
            self.fs.delete_file(self.path(key))
        except _FAILURES as exc:
            if _missing(exc) or self.size(key) is None:
                return
            raise self._fail("cannot delete", key, exc) from exc
