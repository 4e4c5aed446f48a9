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
from seglog.indexer.fsutil import atomic_write, make_dirs
from seglog.indexer.names import META_DIR

LOCATION_FILE = "remote.json"
SCHEMES = ("file", "s3", "s3a")          # what indexer/remote/store.py reaches through pyarrow.fs
KEYS = ("uri", "endpoint", "region")


@dataclass(frozen=True)
class RemoteLocation:
    uri: str                     # file:///abs/path or s3://bucket/prefix (s3a:// is taken as s3://)
    endpoint: str | None = None  # an S3 endpoint override: http://host:port
    region: str | None = None

    @property
    def scheme(self) -> str:
        return urlparse(self.uri).scheme


def location_path(root: str | os.PathLike) -> Path:
    return Path(root) / META_DIR / LOCATION_FILE


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
                          f"(file:///abs/path or s3://bucket/prefix)")
    uri = uri.strip().rstrip("/")
    parsed = urlparse(uri)
    if parsed.scheme not in SCHEMES:
        raise ConfigError(f"{where}: 'uri' = {uri!r}: scheme {parsed.scheme or '(none)'!r} is not supported; "
                          f"allowed: {', '.join(s + '://' for s in SCHEMES)}")
    if parsed.scheme == "file" and (parsed.netloc or not parsed.path.startswith("/")):
        raise ConfigError(f"{where}: 'uri' = {uri!r}: a file URI names an absolute path: file:///abs/path")
    if parsed.scheme in ("s3", "s3a") and not parsed.netloc:
        raise ConfigError(f"{where}: 'uri' = {uri!r}: an S3 URI names its bucket: s3://bucket/prefix")
    out = {"uri": uri}
    for key in ("endpoint", "region"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{where}: '{key}' = {value!r} is not allowed; allowed: a non-empty string or null")
        out[key] = value.strip() if isinstance(value, str) else None
    if out["endpoint"] is not None and urlparse(out["endpoint"]).scheme not in ("http", "https"):
        raise ConfigError(f"{where}: 'endpoint' = {out['endpoint']!r}: expected http://host:port or https://host:port")
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
    make_dirs(Path(root) / META_DIR)
    data = json.dumps({"version": 1, **asdict(location)}, sort_keys=True).encode() + b"\n"
    atomic_write(location_path(root), data)
