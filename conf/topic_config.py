"""Topic configuration: Kafka's names, the defaults from conf/topic.yaml, and validation.

Values are parsed once, at the edge, into an immutable TopicConfig. A bad key or value is refused
with the key, the value and what is allowed (and the nearest valid key for a misspelling).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

from seglog.conf.files import default_file, load_yaml
from seglog.conf.limits import INT32_MAX, INT64_MAX
from seglog.errors import ConfigError, shown


@dataclass(frozen=True)
class _Rule:
    kind: type                      # int, float, bool or str
    low: int | float | None = None  # inclusive bounds for numbers
    high: int | float | None = None
    choices: tuple[str, ...] = ()   # allowed strings (case-sensitive, as Kafka)
    nullable: bool = False
    extra: Callable[[Any], str | None] | None = None  # further check; returns a problem or None
    normalize: Callable[[Any], Any] | None = None     # the canonical form, before the checks

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.kind is bool:
            return "true or false"
        if self.kind is int:
            return f"an integer from {self.low} to {self.high}"
        if self.kind is float:
            return f"a number from {self.low} to {self.high}"
        return "a string" + (" or null" if self.nullable else "")


CLEANUP_POLICIES = ("delete", "compact")


def _policy_list(value: Any) -> Any:
    """Kafka's cleanup.policy is a list: `delete`, `compact`, or both (`compact,delete`, a YAML list).
    Canonical form: the policies, deduplicated, in Kafka's documented order, comma-joined."""
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, str):
        items = value.split(",")
    else:
        return value                                  # the type check refuses it, naming the key
    names = [str(v).strip() for v in items]
    if not names or any(not n for n in names) or any(n not in CLEANUP_POLICIES for n in names):
        return value if isinstance(value, str) else ",".join(map(str, value))
    return ",".join(p for p in ("compact", "delete") if p in names)


# Kafka 4's two timestamp bounds (KIP-937) and the names older Kafka versions used for one symmetric
# bound: an alias sets both (docs/spec.md §5). Explicit new names win over an alias in the same config.
TIMESTAMP_BEFORE = "message.timestamp.before.max.ms"
TIMESTAMP_AFTER = "message.timestamp.after.max.ms"
ALIASES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "message.timestamp.difference.max.ms": (TIMESTAMP_BEFORE, TIMESTAMP_AFTER),   # Kafka 3
    "max.message.time.difference.ms": (TIMESTAMP_BEFORE, TIMESTAMP_AFTER),        # KIP-32's draft name
})

_HINTS = {("compression.type", "none"): " ('none' is the producer's name; a topic says 'uncompressed')"}

# Kafka's topic-level compression.type values (the producer's `none` is `uncompressed` here).
COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


# Every key seglog understands. Kafka's bounds unless noted: segment.bytes may be as small as
# 1 KiB (docs/spec.md §5) so that tests and tiny topics can roll often.
RULES: Mapping[str, _Rule] = MappingProxyType({
    "segment.bytes": _Rule(int, 1024, INT32_MAX),
    "segment.ms": _Rule(int, 1, INT64_MAX),
    "segment.index.bytes": _Rule(int, 24, INT32_MAX),  # room for two time index entries (the seal entry needs one)
    "index.interval.bytes": _Rule(int, 0, INT32_MAX),
    "retention.ms": _Rule(int, -1, INT64_MAX),
    "retention.bytes": _Rule(int, -1, INT64_MAX),
    "message.timestamp.type": _Rule(str, choices=("CreateTime", "LogAppendTime")),
    TIMESTAMP_BEFORE: _Rule(int, 0, INT64_MAX),
    TIMESTAMP_AFTER: _Rule(int, 0, INT64_MAX),
    "message.timestamp.out.of.range.policy": _Rule(str, choices=("fail", "quarantine")),
    "quarantine.topic": _Rule(str, nullable=True),
    "max.message.bytes": _Rule(int, 0, INT32_MAX),
    "file.delete.delay.ms": _Rule(int, 0, INT64_MAX),
    "cleanup.policy": _Rule(str, choices=("delete", "compact", "compact,delete"), normalize=_policy_list),
    # Compaction (docs/spec.md §3.9), Kafka's names, bounds and defaults.
    "min.cleanable.dirty.ratio": _Rule(float, 0.0, 1.0),
    "min.compaction.lag.ms": _Rule(int, 0, INT64_MAX),
    "max.compaction.lag.ms": _Rule(int, 1, INT64_MAX),
    "delete.retention.ms": _Rule(int, 0, INT64_MAX),
    "compression.type": _Rule(str, choices=COMPRESSION_TYPES),
    # Tiered storage (docs/tiered-storage.md §1), Kafka's names (KIP-405) and defaults: -2 is "the same as
    # retention.*"; the cross-checks with retention.* and cleanup.policy are in _check_tiering.
    "remote.storage.enable": _Rule(bool),
    "local.retention.ms": _Rule(int, -2, INT64_MAX),
    "local.retention.bytes": _Rule(int, -2, INT64_MAX),
    # KIP-950 (Kafka 3.9+): remote.storage.enable = false on a topic with tiered segments is refused unless
    # this is true, which deletes the remote data (indexer/remote/tier.py: disable_partition).
    "remote.log.delete.on.disable": _Rule(bool),
    # seglog's own (docs/spec.md §3.10): a sealed segment below this many bytes is "small" and the
    # sidecar may merge it with its neighbours; -1 is half of segment.bytes, 0 never merges.
    "segment.merge.small.bytes": _Rule(int, -1, INT32_MAX),
})


def _load_defaults() -> Mapping[str, Any]:
    raw = load_yaml(default_file("topic.yaml")) or {}
    missing = set(RULES) - set(raw)
    unknown = set(raw) - set(RULES)
    if missing or unknown:  # the shipped file and the rules must describe the same keys
        raise ConfigError(f"conf/topic.yaml is out of step with the rules: missing {sorted(missing)}, "
                          f"unknown {sorted(unknown)}")
    return MappingProxyType({k: _check(k, v, "conf/topic.yaml") for k, v in raw.items()})


_INT_TEXT = re.compile(r"[-+]?[0-9]+")   # "--4096" or "4e3" is not an integer, and says so


def int_from_text(value: Any) -> Any:
    """An integer's text form as int (Spark options, properties files and YAML strings give text);
    anything else unchanged, for the caller's type check to refuse with the key's name."""
    if isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
        try:
            return int(value.strip())
        except ValueError:      # past Python's int max str digits (4300): no seglog integer is that long
            return value
    return value


def _float_from_text(value: Any) -> Any:
    """A number's text form as float (Spark options and properties files give text); else unchanged."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    return value


def _nearest(key: str) -> str:
    close = difflib.get_close_matches(key, [*RULES, *ALIASES], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _bool_from_text(value: Any) -> Any:
    """`true`/`false` in any case, spaces around (Kafka's ConfigDef parses booleans so; Spark options
    and properties files give text) as bool; anything else unchanged, for the type check to refuse."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def _check(key: str, value: Any, where: str) -> Any:
    rule = RULES.get(key)
    if rule is None:
        raise ConfigError(f"{where}: unknown configuration key {shown(str(key))}{_nearest(key)}; "
                          f"known keys: {', '.join(sorted(RULES))}")
    if value is None and rule.nullable:
        return None
    if rule.normalize is not None:
        value = rule.normalize(value)
    if rule.kind is float:
        value = _float_from_text(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise ConfigError(f"{where}: '{key}' = {shown(value)} is not a number; allowed: {rule.describe()}")
        value = float(value)
        if not (rule.low <= value <= rule.high):
            raise ConfigError(f"{where}: '{key}' = {shown(value)} is out of range; allowed: {rule.describe()}")
    elif rule.kind is bool:
        value = _bool_from_text(value)
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: '{key}' = {shown(value)} is not a boolean; allowed: {rule.describe()}")
    elif rule.kind is int:
        # Accept ints and their string form (Spark options and properties files give strings),
        # refuse bools and floats, which would hide a mistake.
        value = int_from_text(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: '{key}' = {shown(value)} is not an integer; "
                              f"allowed: {rule.describe()}")
        if not (rule.low <= value <= rule.high):
            raise ConfigError(f"{where}: '{key}' = {shown(value)} is out of range; allowed: {rule.describe()}")
    else:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: '{key}' = {shown(value)} is not a string; allowed: {rule.describe()}")
        if rule.choices and value not in rule.choices:
            hint = _HINTS.get((key, value), "")
            raise ConfigError(f"{where}: '{key}' = {shown(value)} is not allowed; allowed: {rule.describe()}{hint}")
    if rule.extra is not None:
        problem = rule.extra(value)
        if problem:
            raise ConfigError(f"{where}: '{key}' = {shown(value)}: {problem}")
    return value


class TopicConfig(Mapping[str, Any]):
    """Immutable, validated topic configuration; read it like a dict with Kafka's key names."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]):
        self._values = MappingProxyType(dict(values))

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"TopicConfig({dict(self._values)!r})"

    def overrides(self) -> dict[str, Any]:
        """The keys whose value differs from the built-in default (what is worth recording)."""
        return {k: v for k, v in self._values.items() if TOPIC_DEFAULTS[k] != v}

    def with_overrides(self, overrides: Mapping[str, Any] | None, where: str = "config") -> "TopicConfig":
        return validate_topic_config(overrides, base=self, where=where)

    # Typed accessors for the hot paths.
    @property
    def segment_bytes(self) -> int:
        return self._values["segment.bytes"]

    @property
    def log_append_time(self) -> bool:
        return self._values["message.timestamp.type"] == "LogAppendTime"

    @property
    def compacted(self) -> bool:
        """cleanup.policy holds `compact`: the cleaner keeps the latest record per key (docs/spec.md §3.9)."""
        return "compact" in self._values["cleanup.policy"].split(",")

    @property
    def tiered(self) -> bool:
        """remote.storage.enable: the sidecar copies sealed segments to the remote tier (docs/tiered-storage.md)."""
        return bool(self._values["remote.storage.enable"])

    @property
    def delete_remote_on_disable(self) -> bool:
        """remote.log.delete.on.disable (KIP-950): with remote.storage.enable false, the topic's tiered segments
        are deleted; without it, switching tiering off a topic with tiered segments is refused."""
        return bool(self._values["remote.log.delete.on.disable"])

    def local_retention(self, kind: str) -> int:
        """local.retention.ms / .bytes (`kind` "ms" or "bytes") with -2 resolved to retention.*."""
        value = self._values[f"local.retention.{kind}"]
        return self._values[f"retention.{kind}"] if value == SAME_AS_TOTAL else value

    @property
    def deletes(self) -> bool:
        """cleanup.policy holds `delete`: retention by time and size applies (docs/spec.md §3.7)."""
        return "delete" in self._values["cleanup.policy"].split(",")


def validate_topic_config(overrides: Mapping[str, Any] | None = None, *, base: Mapping[str, Any] | None = None,
                          where: str = "config") -> TopicConfig:
    """Defaults (or ``base``) updated with ``overrides``; every override checked against RULES."""
    values = dict(base if base is not None else TOPIC_DEFAULTS)
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ConfigError(f"{where}: expected a mapping of configuration keys, got {type(overrides).__name__}")
    items = [(str(k), v) for k, v in (overrides or {}).items()]
    # Aliases first, so that an explicit new name in the same mapping wins (as in Kafka).
    for key, value in sorted(items, key=lambda kv: kv[0] not in ALIASES):
        for target in ALIASES.get(key, (key,)):
            values[target] = _check(target, value, where if target == key else f"{where} ('{key}' sets it)")
    if values["message.timestamp.out.of.range.policy"] == "quarantine" and not values["quarantine.topic"]:
        raise ConfigError(f"{where}: 'message.timestamp.out.of.range.policy' = 'quarantine' needs "
                          f"'quarantine.topic' to name the topic that receives refused records")
    _check_tiering(values, where)
    return TopicConfig(values)


LOCAL_RETENTION = (("local.retention.ms", "retention.ms"), ("local.retention.bytes", "retention.bytes"))
SAME_AS_TOTAL = -2      # local.retention.*: the same as retention.*


def _check_tiering(values: Mapping[str, Any], where: str) -> None:
    """Kafka's LogConfig rules for tiered storage (docs/tiered-storage.md §1): the local tier never
    keeps more than the whole log, and a compacted topic is never tiered (its segments change after
    they are sealed; a tiered one is immutable). The JVM's TopicConfigRules.checkTiering keeps them too."""
    for local, total in LOCAL_RETENTION:
        lv, tv = values[local], values[total]
        if tv == -1 or lv == SAME_AS_TOTAL:
            continue
        if lv == -1:
            raise ConfigError(f"{where}: '{local}' = -1 (keep forever) while '{total}' = {tv}: the local tier "
                              f"cannot keep more than the whole log; allowed: -2 (the same as '{total}') or 0 to {tv}")
        if lv > tv:
            raise ConfigError(f"{where}: '{local}' = {lv} is above '{total}' = {tv}: the local tier cannot keep "
                              f"more than the whole log; allowed: -2 (the same as '{total}') or 0 to {tv}")
    if values["remote.storage.enable"] and "compact" in str(values["cleanup.policy"]).split(","):
        raise ConfigError(f"{where}: 'remote.storage.enable' = true with 'cleanup.policy' = "
                          f"{values['cleanup.policy']!r}: tiered storage is refused on compacted topics (as Kafka "
                          f"refuses it): a tiered segment never changes, a compacted one does")


def requested_topic_config(config: Mapping[str, Any] | TopicConfig | None, where: str = "config") -> dict[str, Any]:
    """The validated value of every key a topic's creator asked for, by Kafka's name (an alias gives
    the keys it sets), even a value equal to the built-in default: what a topic's metadata records.
    Invariant: a recorded key always wins over the sidecar's `log:` defaults (docs/spec.md §5), so a
    key dropped here because it equals seglog's default would let another default replace it."""
    validated = validate_topic_config(config, where=where)
    if isinstance(config, TopicConfig):
        return dict(validated)
    keys: dict[str, None] = {}
    for key in (config or {}):
        for target in ALIASES.get(str(key), (str(key),)):
            keys[target] = None
    return {key: validated[key] for key in keys}


TOPIC_DEFAULTS: Mapping[str, Any] = _load_defaults()
