"""The sidecar's YAML configuration (docs/spec.md §9): parsed once, at start-up, into an immutable CompactorConfig.

```yaml
root: /data/log                 # the folder the sink writes to
log: {retention.ms: 604800000}  # topic configuration (docs/spec.md §5) for every topic
topics: {events: {retention.ms: 86400000}}
schedule: {seal.interval.ms: 10000, ...}
http: {host: 127.0.0.1, port: 9400}
consumer: {lag.interval.ms: 30000, idle.forget.ms: 604800000}   # streaming queries' lag (optional)
remote: {uri: s3://bucket/prefix, endpoint: http://127.0.0.1:9000}   # tiered storage (optional)
console: {records.enable: false, page.size: 100}   # the read-only web console (compactor/console_app.py)
```

Every problem is a ConfigError naming the file, the key (dotted: ``schedule.seal.interval.ms``), the
value and what is allowed, with the nearest valid key for a misspelling. Topic keys are checked by
``conf.validate_topic_config`` (one set of rules for the sink and the sidecar); the sections below are
the sidecar's own.

Precedence of topic configuration, highest first: the file's ``topics.<name>``, the topic's own
configuration recorded when the sink created it, the file's ``log``, the built-in defaults; the
jobs apply it with ``indexer.root.LogRoot.topic_config(topic, overrides=topics[topic], base=log)``.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from seglog.conf import TopicConfig, load_yaml, validate_topic_config
from seglog.conf.limits import INT32_MAX
from seglog.conf.topic_config import int_from_text
from seglog.errors import ConfigError, InvalidTopicError, shown
from seglog.indexer.names import validate_topic
from seglog.indexer.root import local_root

if TYPE_CHECKING:
    from seglog.indexer.remote.location import RemoteLocation


SECTIONS = ("root", "log", "topics", "schedule", "http", "remote", "consumer", "console")


@dataclass(frozen=True)
class _IntRule:
    default: int
    low: int
    high: int
    help: str

    def describe(self) -> str:
        return f"an integer from {self.low} to {self.high}"


# schedule: how often each job runs, and how long a job waits for a lock. Intervals have a floor of
# 10 ms (tests use a few hundred ms) and a ceiling of int32 ms (~24 days).
SCHEDULE_RULES: Mapping[str, _IntRule] = MappingProxyType({
    "seal.interval.ms": _IntRule(10_000, 10, INT32_MAX, "seal inactive segments"),
    "roll.interval.ms": _IntRule(60_000, 10, INT32_MAX, "roll active segments idle past segment.ms"),
    "retention.check.interval.ms": _IntRule(300_000, 10, INT32_MAX, "time and size retention"),
    "delete.check.interval.ms": _IntRule(30_000, 10, INT32_MAX, "unlink .deleted files past file.delete.delay.ms"),
    # The cleaner (docs/spec.md §3.9): how often it looks for a compacted partition to clean (Kafka's
    # log.cleaner.backoff.ms), and the memory its key -> offset map may take (Kafka's name and default).
    "clean.interval.ms": _IntRule(15_000, 10, INT32_MAX, "compact partitions of compacted topics when due"),
    "log.cleaner.dedupe.buffer.size": _IntRule(128 << 20, 1024, INT32_MAX,
                                               "bytes the cleaner's key -> latest offset map may take"),
    # seglog's own (docs/spec.md §3.10): how often small sealed segments are merged, and at most how
    # many merged segments one partition's pass writes (a pass holds the partition's lock meanwhile).
    "merge.interval.ms": _IntRule(60_000, 10, INT32_MAX, "merge small sealed segments (seglog's own)"),
    "merge.max.groups.per.pass": _IntRule(4, 1, 1_000_000, "merged segments written per partition per pass"),
    # Tiered storage (docs/tiered-storage.md §4): how often sealed segments of remote.storage.enable
    # topics are copied to the remote tier and both tiers' retention applied.
    "tier.interval.ms": _IntRule(30_000, 10, INT32_MAX, "copy sealed segments to the remote tier, tiered retention"),
    # A job waits this long for a partition the sink is writing, then skips it until the next pass.
    "partition.lock.timeout.ms": _IntRule(500, 0, 600_000, "wait for a partition's lock"),
    # A sidecar that is not the leader retries the leader lock this often.
    "leader.retry.interval.ms": _IntRule(1_000, 10, 600_000, "retry the leader lock"),
})

# http: where the endpoints listen, and what bounds a client (compactor/http.py): a connection that
# sends nothing for read.timeout.ms is closed, and past max.connections at once a new one is answered
# 503 and closed, so slow or idle clients cannot hold threads without bound.
HTTP_KEYS = ("host", "port", "read.timeout.ms", "max.connections", "bearer.token")
HTTP_DEFAULTS: Mapping[str, Any] = MappingProxyType({"host": "127.0.0.1", "port": 9400, "read.timeout.ms": 10_000,
                                                     "max.connections": 64, "bearer.token": None})
# A bearer token shorter than this is guessable by a client allowed to try many times.
TOKEN_MIN_CHARS = 16

# console: the read-only web console (compactor/console_app.py). Records show data, so their browser
# is off unless asked for; every page is paged, and the size samples are a bounded ring.
CONSOLE_RULES: Mapping[str, _IntRule] = MappingProxyType({
    "page.size": _IntRule(100, 10, 1000, "rows per page of topics, partitions, segments and writers"),
    "records.page.max": _IntRule(100, 1, 1000, "records per page of the record browser, at most"),
    "records.value.max.bytes": _IntRule(4096, 64, 1 << 20, "bytes of a key, value or header shown, at most"),
    "samples.max": _IntRule(720, 2, 100_000, "size samples kept in memory for the charts"),
    "sample.interval.ms": _IntRule(60_000, 100, INT32_MAX, "how often the charts' samples are taken, at least"),
})
CONSOLE_FLAGS: Mapping[str, bool] = MappingProxyType({"enable": True, "records.enable": False})


# consumer: the streaming queries' positions and lag (compactor/lag.py, docs/spec.md §9): how often lag is
# measured, and after how long without a commit a query is forgotten (Kafka's offsets.retention.minutes: 7 days).
CONSUMER_RULES: Mapping[str, _IntRule] = MappingProxyType({
    "lag.interval.ms": _IntRule(30_000, 10, INT32_MAX, "measure the streaming queries' lag"),
    "idle.forget.ms": _IntRule(7 * 24 * 3600 * 1000, 1_000, 10 * 365 * 24 * 3600 * 1000,
                               "forget a query (its position file) idle this long"),
})


@dataclass(frozen=True)
class ConsumerConfig:
    lag_interval_ms: int = 30_000
    idle_forget_ms: int = 7 * 24 * 3600 * 1000


@dataclass(frozen=True)
class Schedule:
    seal_interval_ms: int
    roll_interval_ms: int
    retention_check_interval_ms: int
    delete_check_interval_ms: int
    clean_interval_ms: int
    log_cleaner_dedupe_buffer_size: int
    merge_interval_ms: int
    merge_max_groups_per_pass: int
    tier_interval_ms: int
    partition_lock_timeout_ms: int
    leader_retry_interval_ms: int

    @classmethod
    def from_mapping(cls, values: Mapping[str, int]) -> "Schedule":
        return cls(**{k.replace(".", "_"): v for k, v in values.items()})


@dataclass(frozen=True)
class HttpConfig:
    host: str
    port: int  # 0: the operating system picks a free port (logged at start-up)
    read_timeout_ms: int = 10_000
    max_connections: int = 64
    bearer_token: str | None = None     # None: no token asked (/healthz and /readyz never ask one)

    def __repr__(self) -> str:          # the token never reaches a log line
        token = None if self.bearer_token is None else "<redacted>"
        return (f"HttpConfig(host={self.host!r}, port={self.port}, read_timeout_ms={self.read_timeout_ms}, "
                f"max_connections={self.max_connections}, bearer_token={token})")


@dataclass(frozen=True)
class ConsoleConfig:
    enable: bool = True
    records_enable: bool = False
    page_size: int = 100
    records_page_max: int = 100
    records_value_max_bytes: int = 4096
    samples_max: int = 720
    sample_interval_ms: int = 60_000


@dataclass(frozen=True)
class CompactorConfig:
    root: Path
    log: Mapping[str, Any]                      # the file's `log` overrides, validated
    topics: Mapping[str, Mapping[str, Any]]     # the file's `topics.<name>` overrides, validated
    schedule: Schedule
    http: HttpConfig
    source: str = "<config>"                    # where it came from, for messages
    remote: "RemoteLocation | None" = None      # the remote tier (docs/tiered-storage.md §1), if any
    consumer: ConsumerConfig = ConsumerConfig()
    console: ConsoleConfig = ConsoleConfig()
    log_config: TopicConfig = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "log_config", validate_topic_config(self.log, where=f"{self.source}: log"))


def _nearest(key: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _unknown(where: str, key: object, known: tuple[str, ...] | list[str]) -> ConfigError:
    return ConfigError(f"{where}: unknown key {shown(str(key))}{_nearest(str(key), known)}; "
                       f"known keys: {', '.join(known)}")


def _mapping(where: str, name: str, value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: '{name}' = {shown(value)} is not a mapping; expected a mapping of keys to values")
    return value


def _int(where: str, key: str, value: Any, low: int, high: int) -> int:
    value = int_from_text(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: '{key}' = {shown(value)} is not an integer; allowed: an integer from {low} to {high}")
    if not low <= value <= high:
        raise ConfigError(f"{where}: '{key}' = {shown(value)} is out of range; allowed: an integer from {low} to {high}")
    return value


def _schedule(where: str, raw: Mapping[str, Any]) -> Schedule:
    values = {k: rule.default for k, rule in SCHEDULE_RULES.items()}
    for key, value in raw.items():
        rule = SCHEDULE_RULES.get(str(key))
        if rule is None:
            raise _unknown(where, f"schedule.{key}", [f"schedule.{k}" for k in SCHEDULE_RULES])
        values[str(key)] = _int(where, f"schedule.{key}", value, rule.low, rule.high)
    return Schedule.from_mapping(values)


def _consumer(where: str, raw: Mapping[str, Any]) -> ConsumerConfig:
    values = {k: rule.default for k, rule in CONSUMER_RULES.items()}
    for key, value in raw.items():
        rule = CONSUMER_RULES.get(str(key))
        if rule is None:
            raise _unknown(where, f"consumer.{key}", [f"consumer.{k}" for k in CONSUMER_RULES])
        values[str(key)] = _int(where, f"consumer.{key}", value, rule.low, rule.high)
    return ConsumerConfig(**{k.replace(".", "_"): v for k, v in values.items()})


def _http(where: str, raw: Mapping[str, Any]) -> HttpConfig:
    values = dict(HTTP_DEFAULTS)
    for key, value in raw.items():
        if key not in HTTP_KEYS:
            raise _unknown(where, f"http.{key}", [f"http.{k}" for k in HTTP_KEYS])
        values[str(key)] = value
    host = values["host"]
    if not isinstance(host, str) or not host.strip():
        raise ConfigError(f"{where}: 'http.host' = {shown(host)} is not allowed; allowed: a host name or IP address "
                          f"to listen on (0.0.0.0 for every interface)")
    port = _int(where, "http.port", values["port"], 0, 65535)
    read_timeout_ms = _int(where, "http.read.timeout.ms", values["read.timeout.ms"], 100, 600_000)
    max_connections = _int(where, "http.max.connections", values["max.connections"], 1, 10_000)
    token = values["bearer.token"]
    if token is not None and (not isinstance(token, str) or len(token) < TOKEN_MIN_CHARS or len(token) > 4096
                              or not token.isascii() or not token.isprintable() or token != token.strip()):
        # the value itself is never echoed: it is a secret, even when a bad one
        raise ConfigError(f"{where}: 'http.bearer.token' is not allowed; allowed: printable ASCII of "
                          f"{TOKEN_MIN_CHARS} to 4096 characters without surrounding spaces")
    return HttpConfig(host=host.strip(), port=port, read_timeout_ms=read_timeout_ms, max_connections=max_connections,
                      bearer_token=token)


def _console(where: str, raw: Mapping[str, Any]) -> ConsoleConfig:
    values: dict[str, Any] = {**CONSOLE_FLAGS, **{k: rule.default for k, rule in CONSOLE_RULES.items()}}
    known = [f"console.{k}" for k in (*CONSOLE_FLAGS, *CONSOLE_RULES)]
    for key, value in raw.items():
        key = str(key)
        if key in CONSOLE_FLAGS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: 'console.{key}' = {shown(value)} is not allowed; allowed: true or false")
            values[key] = value
        elif key in CONSOLE_RULES:
            rule = CONSOLE_RULES[key]
            values[key] = _int(where, f"console.{key}", value, rule.low, rule.high)
        else:
            raise _unknown(where, f"console.{key}", known)
    return ConsoleConfig(**{k.replace(".", "_"): v for k, v in values.items()})


def _root(where: str, value: Any, base_dir: Path | None) -> Path:
    if value is None:
        raise ConfigError(f"{where}: 'root' is required: the folder the sink writes to")
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise ConfigError(f"{where}: 'root' = {shown(value)} is not allowed; allowed: a folder path (string)")
    path = Path(local_root(str(value).strip(), f"{where}: 'root'")).expanduser()   # file:///data/log is /data/log
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path  # a relative root is relative to the configuration file
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{where}: 'root' = {str(value)!r} exists and is not a folder")
    return path


def _topics(where: str, raw: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for topic, overrides in raw.items():
        try:
            validate_topic(topic)
        except InvalidTopicError as exc:
            raise ConfigError(f"{where}: 'topics.{topic}': {exc}") from None
        section = _mapping(where, f"topics.{topic}", overrides)
        # Validate now (start-up), against the defaults; keep only what the file sets, so precedence
        # can be applied per topic later.
        cfg = validate_topic_config(section, where=f"{where}: topics.{topic}")
        out[topic] = MappingProxyType({str(k): cfg[str(k)] for k in section})
    return MappingProxyType(out)


def parse_config(raw: Any, source: str = "<config>", base_dir: Path | None = None) -> CompactorConfig:
    """Validate a loaded YAML document (a mapping) and build the CompactorConfig."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: expected a mapping with keys {', '.join(SECTIONS)}, "
                          f"got {type(raw).__name__}")
    for key in raw:
        if key not in SECTIONS:
            raise _unknown(source, key, SECTIONS)
    log_raw = _mapping(source, "log", raw.get("log"))
    log_cfg = validate_topic_config(log_raw, where=f"{source}: log")
    log = MappingProxyType({str(k): log_cfg[str(k)] for k in log_raw})
    return CompactorConfig(
        root=_root(source, raw.get("root"), base_dir),
        log=log,
        topics=_topics(source, _mapping(source, "topics", raw.get("topics"))),
        schedule=_schedule(source, _mapping(source, "schedule", raw.get("schedule"))),
        http=_http(source, _mapping(source, "http", raw.get("http"))),
        source=source,
        remote=_remote(source, raw.get("remote")),
        consumer=_consumer(source, _mapping(source, "consumer", raw.get("consumer"))),
        console=_console(source, _mapping(source, "console", raw.get("console"))),
    )


def _remote(where: str, raw: Any):
    """The `remote:` section (docs/tiered-storage.md §1): where tiered segments go; None when absent."""
    if raw is None:
        return None
    from seglog.indexer.remote.location import parse_location

    return parse_location(raw, f"{where}: remote")


def load_config(path: str | Path) -> CompactorConfig:
    """Read and validate the sidecar's YAML file; raises ConfigError naming the file and the key."""
    path = Path(path)
    return parse_config(load_yaml(path), source=str(path), base_dir=path.resolve().parent)
