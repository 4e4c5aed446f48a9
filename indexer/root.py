"""A log root: the folder holding <topic>-<partition> folders and _seglog/ metadata (docs/spec.md §2.1)."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

from seglog.conf.topic_config import TopicConfig, validate_topic_config
from seglog.errors import ConfigError
from seglog.indexer.names import META_DIR, parse_partition_dir, partition_dir_name


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_FILE_URI_EXAMPLE = "a folder path (/data/log) or a file URI naming one (file:///data/log, file:/data/log)"


def local_root(raw: object, where: str) -> str:
    """The local folder a log root names: a plain path as given, a `file:` URI (file:///abs, file:/abs) as the
    absolute path it names. Spark hands `save("file:///data/log")` over as written; taken as a path it would
    be the relative folder `file:/data/log` under the current directory, which no other tool would look in.
    Any other scheme (s3://, hdfs://: a log root is a local folder), a relative or host-naming file URI, and
    a file URI with %-escapes, a query or a fragment are ConfigError naming `where`. The one rule in Python;
    Java's is RootPath.java, both held to tests/conformance/root_uris.json."""
    if not isinstance(raw, (str, os.PathLike)):
        raise ConfigError(f"{where} = {raw!r}; allowed: {_FILE_URI_EXAMPLE}")
    text = os.fspath(raw)
    if isinstance(text, bytes) or not _SCHEME.match(text):
        return text
    scheme, rest = text.split(":", 1)
    if scheme.lower() != "file":
        raise ConfigError(f"{where} = {text!r}: scheme '{scheme}' is not supported: a log root is a local folder; "
                          f"allowed: {_FILE_URI_EXAMPLE}")
    if rest.startswith("///"):
        path = rest[2:]
    elif rest.startswith("//"):
        raise ConfigError(f"{where} = {text!r}: a file URI with a host is not supported; allowed: {_FILE_URI_EXAMPLE}")
    elif rest.startswith("/"):
        path = rest
    else:
        raise ConfigError(f"{where} = {text!r}: a file URI names an absolute path; allowed: {_FILE_URI_EXAMPLE}")
    if any(c in path for c in "%?#"):
        raise ConfigError(f"{where} = {text!r}: %-escapes, queries and fragments are not supported in a file URI; "
                          f"give the folder's plain path")
    return path


class LogRoot:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def partition_path(self, topic: str, partition: int) -> Path:
        # partition_dir_name validates the topic, so no path ever leaves the root
        return self.path / partition_dir_name(topic, partition)

    def partitions(self, topic: str | None = None) -> list[tuple[str, int]]:
        if not self.path.is_dir():
            return []
        found = []
        for entry in os.scandir(self.path):
            if entry.is_dir() and entry.name != META_DIR:
                parsed = parse_partition_dir(entry.name)
                if parsed and (topic is None or parsed[0] == topic):
                    found.append(parsed)
        return sorted(found)

    def topics(self) -> list[str]:
        """Topics with a partition folder or recorded metadata (a topic may have no folder yet)."""
        from seglog.indexer.topics import list_topics

        return sorted({t for t, _ in self.partitions()} | set(list_topics(self.path)))

    def topic_partitions(self, topic: str) -> list[int]:
        """A topic's partitions: 0 to its recorded count (a partition the sink never wrote has no
        folder, and reads as empty), plus any partition folder found."""
        from seglog.indexer.topics import load_topic

        meta = load_topic(self.path, topic)
        found = {p for _, p in self.partitions(topic)}
        return sorted(found | set(range(meta.partitions if meta is not None else 0)))

    def topic_config(self, topic: str, overrides: Mapping[str, Any] | None = None,
                     base: Mapping[str, Any] | None = None) -> TopicConfig:
        """Precedence, highest first: `overrides`, the topic's recorded configuration, `base`,
        the built-in defaults (docs/spec.md §9)."""
        from seglog.indexer.topics import load_topic

        cfg = validate_topic_config(base, where="log configuration")
        meta = load_topic(self.path, topic)
        if meta is not None and meta.config:
            cfg = cfg.with_overrides(meta.config, where=f"recorded configuration of topic {topic}")
        if overrides:
            cfg = cfg.with_overrides(overrides, where=f"configuration of topic {topic}")
        return cfg

    def open_log(self, topic: str, partition: int, config: Mapping[str, Any] | TopicConfig | None = None, **kw):
        from seglog.indexer.log import Log

        if config is None:
            config = self.topic_config(topic)
        return Log.open(self.partition_path(topic, partition), config, **kw)
