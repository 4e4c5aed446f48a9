"""The remote tier's objects through `pyarrow.fs` (docs/tiered-storage.md §2): `file://` and `s3://`
(`s3a://` taken as `s3://`, an endpoint override for MinIO or a loopback server). Keys are relative to
the location's URI; one prefix per topic-partition, per segment `<base>.log`, `.index`, `.timeindex`
and `<base>.manifest.json`.

Uploads stream in fixed chunks and hash as they go: memory stays flat with segment size.
"""
from __future__ import annotations

import hashlib
import os
from urllib.parse import urlparse

import pyarrow.fs as pafs

from seglog.errors import StorageError
from seglog.indexer.names import partition_dir_name
from seglog.indexer.remote.location import RemoteLocation

CHUNK = 8 << 20            # bytes per upload write (one S3 multipart part's worth)
MANIFEST_SUFFIX = ".manifest.json"


def segment_key(topic: str, partition: int, base: int, suffix: str) -> str:
    return f"{partition_dir_name(topic, partition)}/{base:020d}{suffix}"


def _filesystem(location: RemoteLocation) -> tuple[pafs.FileSystem, str]:
    parsed = urlparse(location.uri)
    if parsed.scheme == "file":
        return pafs.LocalFileSystem(), parsed.path.rstrip("/")
    kwargs = {}
    if location.region:
        kwargs["region"] = location.region
    if location.endpoint:
        ep = urlparse(location.endpoint)
        kwargs["endpoint_override"] = ep.netloc
        kwargs["scheme"] = ep.scheme
    # Credentials from the environment or the default chain: never from the recorded location.
    fs = pafs.S3FileSystem(**kwargs)
    return fs, f"{parsed.netloc}{parsed.path}".rstrip("/")


class RemoteStore:
    """One root's remote tier. Every failure is a StorageError naming the object."""

    def __init__(self, location: RemoteLocation):
        self.location = location
        self.fs, self.base = _filesystem(location)

    def path(self, key: str) -> str:
        return f"{self.base}/{key}"

    def _fail(self, what: str, key: str, exc: Exception) -> StorageError:
        return StorageError(f"remote tier {self.location.uri}: {what} {key}: {type(exc).__name__}: {exc}")

    def put_file(self, local: str | os.PathLike, key: str) -> dict:
        """Copy a local file to `key`, streaming; returns its {"size", "sha256"} as copied."""
        digest, size = hashlib.sha256(), 0
        try:
            if isinstance(self.fs, pafs.LocalFileSystem):
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
        except OSError as exc:
            raise self._fail("cannot write", key, exc) from exc
        return {"size": size, "sha256": digest.hexdigest()}

    def put_bytes(self, key: str, data: bytes) -> None:
        try:
            if isinstance(self.fs, pafs.LocalFileSystem):
                self.fs.create_dir(self.path(key).rpartition("/")[0], recursive=True)
            with self.fs.open_output_stream(self.path(key)) as out:
                out.write(data)
        except OSError as exc:
            raise self._fail("cannot write", key, exc) from exc

    def read(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        """`length` bytes of `key` from `offset` (all of it when None): one ranged read."""
        try:
            with self.fs.open_input_file(self.path(key)) as f:
                if length is None:
                    length = f.size() - offset
                return f.read_at(length, offset) if length > 0 else b""
        except FileNotFoundError:
            raise
        except OSError as exc:
            if "does not exist" in str(exc) or "NoSuchKey" in str(exc) or "Path does not exist" in str(exc):
                raise FileNotFoundError(self.path(key)) from exc
            raise self._fail("cannot read", key, exc) from exc

    def size(self, key: str) -> int | None:
        info = self.fs.get_file_info(self.path(key))
        return info.size if info.type == pafs.FileType.File else None

    def hash(self, key: str) -> dict | None:
        """{"size", "sha256"} of `key` read back in chunks, or None when it is missing."""
        try:
            f = self.fs.open_input_stream(self.path(key))
        except (FileNotFoundError, OSError):
            return None
        digest, size = hashlib.sha256(), 0
        with f:
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                digest.update(chunk)
                size += len(chunk)
        return {"size": size, "sha256": digest.hexdigest()}

    def list(self, prefix: str) -> list[str]:
        """The object names (not keys) directly under `prefix`; [] when there is none."""
        sel = pafs.FileSelector(self.path(prefix), allow_not_found=True, recursive=False)
        try:
            return sorted(i.base_name for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.File)
        except OSError as exc:
            raise self._fail("cannot list", prefix, exc) from exc

    def delete(self, key: str) -> None:
        """Delete `key`; an object already gone is fine (deletion is finished by the next pass)."""
        try:
            self.fs.delete_file(self.path(key))
        except FileNotFoundError:
            pass
        except OSError as exc:
            if self.size(key) is None:
                return
            raise self._fail("cannot delete", key, exc) from exc
