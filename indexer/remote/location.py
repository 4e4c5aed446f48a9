"""Where a root's remote tier is (docs/tiered-storage.md §1): parsed from the sidecar's `remote:`
section, recorded under the root as `_seglog/remote.json` so that readers need no option.

Invariant: a root's recorded URI never changes under tiered segments: recording a different one is
refused (the segments recorded there would be orphaned). Credentials are never recorded.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlparse

from seglog.errors import ConfigError
from seglog.indexer.fsutil import atomic_write, make_dirs, meta_path

LOCATION_FILE = "remote.json"
# What indexer/remote/store.py reaches through pyarrow.fs, each URI in the form Hadoop's FileSystem takes (the
# JVM reader reaches the same URI through it): s3a:// is taken as s3://; abfss:// is abfs:// over TLS.
SCHEMES = ("file", "s3", "s3a", "gs", "abfs", "abfss", "hdfs")
KEYS = ("uri", "endpoint", "region")
_FORMS = {"file": "file:///abs/path", "s3": "s3://bucket/prefix", "s3a": "s3a://bucket/prefix",
          "gs": "gs://bucket/prefix", "abfs": "abfs://container@account.dfs.core.windows.net/prefix",
          "abfss": "abfss://container@account.dfs.core.windows.net/prefix", "hdfs": "hdfs://namenode:port/prefix"}


@dataclass(frozen=True)
class RemoteLocation:
    uri: str                     # one of SCHEMES' forms (_FORMS); s3a:// is taken as s3://
    endpoint: str | None = None  # an S3, GCS or Azure endpoint override: http(s)://host:port
    region: str | None = None

    @property
    def scheme(self) -> str:
        return urlparse(self.uri).scheme

    @property
    def azure_container_and_account(self) -> tuple[str, str]:
        """abfs(s)://container@account.<host>/prefix: the container and the storage account."""
        netloc = urlparse(self.uri).netloc
        container, _, host = netloc.partition("@")
        return container, host.split(".", 1)[0]


def location_path(root: str | os.PathLike) -> Path:
    return meta_path(root, LOCATION_FILE)


def parse_location(raw: Any, where: str) -> RemoteLocation:
    """The `remote:` mapping, checked: a ConfigError names the key, the value and what is allowed."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping with keys {', '.join(KEYS)}, got {type(raw).__name__}")
    for key in raw:
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key '{key}'; known keys: {', '.join(KEYS)}")
    uri = raw.get("uri")
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError(f"{where}: 'uri' = {uri!r} is required: the remote tier's URI "
                          f"({', '.join(_FORMS[s] for s in ('file', 's3', 'gs', 'abfs', 'hdfs'))})")
    uri = uri.strip().rstrip("/")
    parsed = urlparse(uri)
    if parsed.scheme not in SCHEMES:
        raise ConfigError(f"{where}: 'uri' = {uri!r}: scheme {parsed.scheme or '(none)'!r} is not supported; "
                          f"allowed: {', '.join(s + '://' for s in SCHEMES)}")
    scheme = parsed.scheme
    if scheme == "file" and (parsed.netloc or not parsed.path.startswith("/")):
        raise ConfigError(f"{where}: 'uri' = {uri!r}: a file URI names an absolute path: file:///abs/path")
    if scheme in ("s3", "s3a", "gs") and not parsed.netloc:
        raise ConfigError(f"{where}: 'uri' = {uri!r}: an {'S3' if scheme != 'gs' else 'GCS'} URI names its bucket: "
                          f"{_FORMS[scheme]}")
    if scheme in ("abfs", "abfss"):
        container, at, host = parsed.netloc.partition("@")
        if not (container and at and "." in host and host.split(".", 1)[0]):
            raise ConfigError(f"{where}: 'uri' = {uri!r}: an Azure URI names its container and storage account, as "
                              f"Hadoop's ABFS does: {_FORMS[scheme]}")
    if scheme == "hdfs" and not parsed.hostname:
        raise ConfigError(f"{where}: 'uri' = {uri!r}: an HDFS URI names its namenode: {_FORMS[scheme]}")
    out = {"uri": uri}
    for key in ("endpoint", "region"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{where}: '{key}' = {value!r} is not allowed; allowed: a non-empty string or null")
        out[key] = value.strip() if isinstance(value, str) else None
    if out["endpoint"] is not None and urlparse(out["endpoint"]).scheme not in ("http", "https"):
        raise ConfigError(f"{where}: 'endpoint' = {out['endpoint']!r}: expected http://host:port or https://host:port")
    # endpoint: an S3, GCS or Azure endpoint override (MinIO, moto, fake-gcs-server, Azurite); region: S3's.
    if scheme == "hdfs" and out["endpoint"] is not None:
        raise ConfigError(f"{where}: 'endpoint' = {out['endpoint']!r} is not allowed with an hdfs:// URI: the URI "
                          f"names the namenode")
    if scheme in ("gs", "abfs", "abfss", "hdfs") and out["region"] is not None:
        raise ConfigError(f"{where}: 'region' = {out['region']!r} is not allowed with a {scheme}:// URI: only S3 "
                          f"locations have a region")
    return RemoteLocation(**out)


def load_location(root: str | os.PathLike) -> RemoteLocation | None:
    """The root's recorded remote tier, or None (no topic of it was ever tiered)."""
    path = location_path(root)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable remote location record: {exc}") from None
    if not isinstance(raw, Mapping) or raw.get("version") != 1:
        raise ConfigError(f"{path}: not a version 1 remote location record")
    return parse_location({k: v for k, v in raw.items() if k != "version"}, str(path))


def record_location(root: str | os.PathLike, location: RemoteLocation) -> None:
    """Record `location` under the root (atomic: temporary name, fsync, rename), unless it is already;
    a different URI than the recorded one is refused."""
    current = load_location(root)
    if current == location:
        return
    if current is not None and current.uri != location.uri:
        raise ConfigError(f"{location_path(root)} records the remote tier {current.uri!r}; the configuration says "
                          f"{location.uri!r}: segments tiered there would be orphaned (move them and edit the "
                          f"record, or configure {current.uri!r})")
    make_dirs(meta_path(root))
    data = json.dumps({"version": 1, **asdict(location)}, sort_keys=True).encode() + b"\n"
    atomic_write(location_path(root), data)
