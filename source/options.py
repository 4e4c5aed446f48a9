"""Options of the `seglog` data source, parsed once at the edge (docs/spec.md §8).

The names and meanings are those of Spark's Kafka source; Spark hands them over as strings with
lower-cased keys. Everything here is pure (no file access) so that a bad option is refused at
`load()` time with the option's name, the value and what is allowed.

Precedence, as in Spark's Kafka source: for the start, `startingTimestamp` over
`startingOffsetsByTimestamp` over `startingOffsets`; for the end, `endingTimestamp` over
`endingOffsetsByTimestamp` over `endingOffsets`.

The topics are chosen as Spark's Kafka source chooses them, by exactly one of `subscribe` (or seglog's
`topic`), `subscribePattern` (a regex matching whole topic names of the root; Python's `re` here, Java's
in the JVM reader) and `assign` (JSON `{"topic": [0, 1]}`); `TopicSelection` keeps the choice, and
`planning.check_layout` resolves it against the root. The streaming options (`maxOffsetsPerTrigger`, ...)
belong to the JVM reader alone: this reader is batch only.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Mapping

from seglog.errors import BrokerOptionError, ConfigError
from seglog.indexer.names import validate_topic
from seglog.indexer.root import local_root
from seglog.indexer.transactions import DEFAULT_ISOLATION_LEVEL, ISOLATION_LEVELS

EARLIEST = -2   # Kafka's ListOffsets sentinels, as in the offsets JSON
LATEST = -1

DEFAULT_MAX_BYTES_PER_TASK = 128 << 20
# Rows per batch handed to Spark: the jar's default (ReadOptions.DEFAULT_MAX_ROWS_PER_BATCH, Spark's own columnar
# batch size, spark.sql.parquet.columnarReaderBatchSize), so one option means one number on both readers
# (conf/options.yaml holds it; tests/source/test_option_table.py checks both parsers against it).
DEFAULT_MAX_ROWS_PER_BATCH = 4096

# Lower-cased key -> the spelling users write (error messages name the latter).
KNOWN_OPTIONS = {
    "path": "path",
    "topic": "topic",
    "subscribe": "subscribe",
    "subscribepattern": "subscribePattern",
    "assign": "assign",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "startingtimestamp": "startingTimestamp",
    "endingtimestamp": "endingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy",
    "failondataloss": "failOnDataLoss",
    "includeheaders": "includeHeaders",
    "minpartitions": "minPartitions",
    "maxbytespertask": "maxBytesPerTask",
    "maxrowsperbatch": "maxRowsPerBatch",
    "filterpushdown": "filterPushdown",
    # The jar's switch between columnar batches and rows: accepted and checked as the jar's, and a no-op here
    # (this reader always hands Spark Arrow record batches), so one set of options works on both readers.
    "columnarreads": "columnarReads",
    "maxrecordsperpartition": "maxRecordsPerPartition",
    # Kafka's consumer check.crcs (docs/spec.md §8): accepted and checked as the jar's; this reader's walk
    # always checks CRCs (false only allows skipping them, as in Kafka).
    "checkcrcs": "checkCrcs",
    # Spark's Kafka source passes consumer settings with a `kafka.` prefix; this is the one seglog
    # honours (both spellings accepted). Default: the Kafka consumer's (and so Spark's) read_uncommitted.
    "isolation.level": "isolation.level",
    "kafka.isolation.level": "kafka.isolation.level",
}


# Options of Spark's Kafka source whose only meaning is a broker (every `kafka.*` key but
# kafka.isolation.level is one too): refused with BrokerOptionError, saying why.
BROKER_ONLY_OPTIONS = {k.lower(): k for k in (
    "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs", "groupIdPrefix")}

# The topic options, lower-cased key -> the spelling users write; exactly one is given.
TOPIC_OPTIONS = {"topic": "topic", "subscribe": "subscribe", "subscribepattern": "subscribePattern", "assign": "assign"}
_ASSIGN_EXAMPLE = '{"events": [0, 1], "other": [0]}'


@dataclass(frozen=True)
class TopicSelection:
    """Which topics and partitions a read takes: `subscribe` names topics, `pattern` matches whole topic
    names of the root, `assign` names partitions (and reads no other)."""
    kind: str                                   # "subscribe" | "pattern" | "assign"
    option: str                                 # the option given, as users spell it
    topics: tuple[str, ...] = ()                # subscribe; assign: the topics it names
    pattern: str | None = None                  # pattern
    assigned: Mapping[str, tuple[int, ...]] = field(default_factory=dict)   # assign

    def may_read(self, topic: str) -> bool:
        """Whether a topic can be among those read: an offsets JSON naming any other is refused when parsed."""
        if self.kind == "pattern":
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics

    def describe(self) -> str:
        if self.kind == "pattern":
            return f"pattern {self.pattern!r}"
        if self.kind == "assign":
            return "assign " + json.dumps({t: list(p) for t, p in self.assigned.items()})
        return ", ".join(self.topics)


@dataclass(frozen=True)
class Bound:
    """One end of the read: `earliest`, `latest`, per-partition offsets, one timestamp for every
    partition, or per-partition timestamps. `values` maps (topic, partition) to an offset or ms."""
    kind: str                      # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    option: str                    # the option it came from (for error messages)
    timestamp: int | None = None   # kind == "timestamp"
    values: Mapping[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class SourceOptions:
    root: str
    selection: TopicSelection
    starting: Bound
    ending: Bound
    strategy: str = "error"                  # startingOffsetsByTimestampStrategy: error | latest
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_bytes_per_task: int = DEFAULT_MAX_BYTES_PER_TASK
    max_rows_per_batch: int = DEFAULT_MAX_ROWS_PER_BATCH
    # Pushed filters become seeks. Spark 4.1 keeps the read planned during pushdown on the relation
    # and reuses it for a later query on the same DataFrame that pushes no filter; false keeps the
    # reader stateless (Spark then applies every filter itself).
    filter_pushdown: bool = True
    # read_uncommitted or read_committed (indexer/transactions.py: control records are never rows;
    # read_committed also drops aborted transactions).
    isolation_level: str = DEFAULT_ISOLATION_LEVEL
    # maxRecordsPerPartition (Spark's Kafka source): no task holds more offsets; None: no such limit.
    max_records_per_partition: int | None = None
    # checkCrcs (Kafka's check.crcs): the jar's reader skips CRCs when false; this reader checks them always.
    check_crcs: bool = True
    # columnarReads (the jar's rows-or-vectors switch): checked, no effect here (Arrow batches either way).
    columnar_reads: bool = True

    @property
    def topics(self) -> tuple[str, ...]:
        """The topics named by subscribe or assign (a pattern names none: planning finds them)."""
        return self.selection.topics


def _bad(option: str, value: object, allowed: str) -> ConfigError:
    return ConfigError(f"seglog source: invalid value {value!r} for option {option!r}; allowed: {allowed}")


def _parse_bool(option: str, raw: str | None, default: bool) -> bool:
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise _bad(option, raw, "'true' or 'false'")


def _parse_int(option: str, raw: str, *, minimum: int, what: str) -> int:
    text = str(raw).strip()
    try:
        value = int(text)
    except ValueError:
        raise _bad(option, raw, what) from None
    if value < minimum:
        raise _bad(option, raw, what)
    return value


def _parse_topics(raw: str | None, option: str) -> tuple[str, ...]:
    if raw is None or not str(raw).strip():
        raise _bad(option, raw, "a topic name or a comma-separated list of topic names")
    names = [t.strip() for t in str(raw).split(",")]
    if any(not t for t in names):
        raise _bad(option, raw, "a topic name or a comma-separated list of topic names, without empty entries")
    topics: list[str] = []
    for name in names:
        _check_topic_name(option, name)
        if name not in topics:
            topics.append(name)
    return tuple(topics)


def _check_topic_name(option: str, name: str) -> None:
    try:
        validate_topic(name)
    except ValueError as e:
        raise ConfigError(f"seglog source: option {option!r}: {e}") from None


def _parse_pattern(raw: str | None) -> str:
    text = "" if raw is None else str(raw).strip()
    if not text:
        raise _bad("subscribePattern", raw, "a non-empty regular expression over topic names, e.g. 'events-.*'")
    try:
        re.compile(text)
    except re.error as e:
        raise _bad("subscribePattern", raw, f"a regular expression ({e})") from None
    return text


def _parse_assign(raw: str | None) -> dict[str, tuple[int, ...]]:
    allowed = f"JSON object of topic -> [partition, ...], e.g. {_ASSIGN_EXAMPLE}"
    try:
        doc = json.loads(str(raw))
    except (TypeError, ValueError):
        raise _bad("assign", raw, "a " + allowed) from None
    if not isinstance(doc, dict) or not doc:
        raise _bad("assign", raw, "a non-empty " + allowed)
    out: dict[str, tuple[int, ...]] = {}
    for topic, parts in sorted(doc.items()):
        _check_topic_name("assign", topic)
        if not isinstance(parts, list) or not parts:
            raise _bad("assign", raw, f"for topic {topic!r} a non-empty list of partitions, e.g. {_ASSIGN_EXAMPLE}")
        for p in parts:
            if isinstance(p, bool) or not isinstance(p, int) or p < 0:
                raise _bad("assign", raw, f"partitions are integers >= 0; got {p!r} for topic {topic!r}")
        out[topic] = tuple(sorted(set(parts)))
    return out


def _parse_selection(opts: Mapping[str, str]) -> TopicSelection:
    """Exactly one of subscribe (or topic), subscribePattern and assign, as Spark's Kafka source requires."""
    given = [name for key, name in TOPIC_OPTIONS.items() if key in opts]
    if len(given) > 1:
        raise ConfigError("seglog source: give exactly one of 'subscribe' (or 'topic'), 'subscribePattern' and "
                          f"'assign', as Spark's Kafka source requires; given: {', '.join(given)}")
    if not given:
        raise ConfigError("seglog source: option 'topic' is required: a topic name or a comma-separated list of "
                          "topics, e.g. .option('topic', 'events') (or 'subscribePattern', a regular expression over "
                          f"the topics of the root, or 'assign', JSON such as {_ASSIGN_EXAMPLE})")
    option = given[0]
    raw = opts[option.lower()]
    if option == "subscribePattern":
        return TopicSelection("pattern", option, pattern=_parse_pattern(raw))
    if option == "assign":
        assigned = _parse_assign(raw)
        return TopicSelection("assign", option, topics=tuple(assigned), assigned=assigned)
    return TopicSelection("subscribe", option, topics=_parse_topics(raw, option))


def _parse_partition_json(option: str, raw: str, selection: TopicSelection, *,
                          what: str, value_ok, value_rule: str, root: str | None = None) -> dict[tuple[str, int], int]:
    """{"topic": {"0": v, "1": v}} -> {(topic, 0): v, ...}; every topic named must be one the read can take.
    Offsets (`root` given) may carry a stream's topic ids under TOPIC_IDS_KEY, checked by `_check_topic_ids`."""
    example = '{"events": {"0": 23, "1": -2}}' if what == "offset" else '{"events": {"0": 1700000000000}}'
    try:
        doc = json.loads(raw)
    except (TypeError, ValueError):
        raise _bad(option, raw, f"a JSON object of topic -> {{partition: {what}}}, e.g. {example}") from None
    if not isinstance(doc, dict) or not doc:
        raise _bad(option, raw, f"a non-empty JSON object of topic -> {{partition: {what}}}, e.g. {example}")
    out: dict[tuple[str, int], int] = {}
    for topic, parts in doc.items():
        if root is not None and topic == TOPIC_IDS_KEY:
            _check_topic_ids(option, raw, root, parts)
            continue
        if not selection.may_read(topic):
            raise ConfigError(f"seglog source: option {option!r} names topic {topic!r}, which is not read "
                              f"({selection.option}: {selection.describe()})")
        if not isinstance(parts, dict) or not parts:
            raise _bad(option, raw, f"for topic {topic!r} a non-empty JSON object of partition -> {what}")
        for key, value in parts.items():
            if not (isinstance(key, str) and key.isdigit()):
                raise _bad(option, raw, f"partition keys are non-negative integers as strings; got {key!r} "
                                        f"for topic {topic!r}")
            if isinstance(value, bool) or not isinstance(value, int) or not value_ok(value):
                raise _bad(option, raw, f"{value_rule}; got {value!r} for {topic}-{int(key)}")
            out[(topic, int(key))] = value
    return out


# A stream's offsets carry each topic's id under this key, which no topic name can be ('@' is not allowed in one):
# the JVM's SeglogSourceOffset.IDS. A query's progress given back as startingOffsets or endingOffsets holds it.
TOPIC_IDS_KEY = "@topicIds"


def _check_topic_ids(option: str, raw: str, root: str, ids: object) -> None:
    """The topic ids given with offsets against each topic's id now (the JVM's ReadOptions.checkTopicIds, the same
    rule): offsets taken from a topic deleted and created again under its name are another topic's, refused naming
    both ids, never applied to the new one. A topic with no id recorded (or not there) is not checked."""
    from seglog.indexer.topics import TOPIC_ID, load_topic

    if not isinstance(ids, dict):
        raise _bad(option, raw, f"{TOPIC_IDS_KEY} is an object of topic -> topic id")
    for topic, given in ids.items():
        if not isinstance(given, str) or not TOPIC_ID.fullmatch(given):
            # shown as JSON, as the JVM shows it (tests/conformance/topic_ids.json)
            shown = json.dumps(given, separators=(",", ":"))
            raise _bad(option, raw, f"the topic id of {topic!r} in {TOPIC_IDS_KEY} is {shown}, not a UUID")
        meta = load_topic(root, topic)
        now = meta.topic_id if meta is not None else None
        if now is not None and now != given:
            raise ConfigError(
                f"seglog source: option {option!r} holds offsets of topic {topic!r} with topic id {given}, but the "
                f"topic's id is now {now}: it was deleted and created again since those offsets were taken, so they "
                f"are another topic's. Remove {TOPIC_IDS_KEY!r} to apply them to the new topic anyway")


def _parse_start_offsets(raw: str | None, topics: TopicSelection, root: str | None = None) -> Bound:
    option = "startingOffsets"
    if raw is None or str(raw).strip().lower() == "earliest":
        return Bound("earliest", option)
    text = str(raw).strip()
    if text.lower() == "latest":
        raise _bad(option, raw, "'earliest' or a JSON object of offsets ('latest' is not allowed for a batch "
                                "read, as in Spark's Kafka source)")
    values = _parse_partition_json(
        option, text, topics, what="offset", value_ok=lambda v: v >= 0 or v == EARLIEST,
        value_rule="an offset >= 0, or -2 for earliest (-1, latest, is not allowed for a batch read)", root=root)
    return Bound("offsets", option, values=values)


def _parse_end_offsets(raw: str | None, topics: TopicSelection, root: str | None = None) -> Bound:
    option = "endingOffsets"
    if raw is None or str(raw).strip().lower() == "latest":
        return Bound("latest", option)
    text = str(raw).strip()
    if text.lower() == "earliest":
        raise _bad(option, raw, "'latest' or a JSON object of offsets ('earliest' is not allowed for "
                                "endingOffsets, as in Spark's Kafka source)")
    values = _parse_partition_json(
        option, text, topics, what="offset", value_ok=lambda v: v >= 0 or v == LATEST,
        value_rule="an offset >= 0, or -1 for latest (-2, earliest, is not allowed for endingOffsets)", root=root)
    return Bound("offsets", option, values=values)


def _parse_timestamp(option: str, raw: str) -> int:
    return _parse_int(option, raw, minimum=0, what="a timestamp in milliseconds since the epoch (an integer >= 0)")


def _parse_timestamps_json(option: str, raw: str, topics: TopicSelection) -> dict[tuple[str, int], int]:
    """Per partition a timestamp, or Kafka's ListOffsets sentinels as Spark hands them to the broker:
    -1 the latest offset, -2 the earliest."""
    return _parse_partition_json(option, str(raw).strip(), topics, what="timestamp",
                                 value_ok=lambda v: v >= 0 or v in (LATEST, EARLIEST),
                                 value_rule="a timestamp in milliseconds since the epoch (an integer >= 0), -1 for "
                                            "the latest offset or -2 for the earliest")


def _check_known(options: Mapping[str, str]) -> None:
    for key in options:
        if key not in KNOWN_OPTIONS and (key.startswith("kafka.") or key in BROKER_ONLY_OPTIONS):
            near = difflib.get_close_matches(key, list(KNOWN_OPTIONS), n=1)
            hint = f" (did you mean {KNOWN_OPTIONS[near[0]]!r}?)" if near else ""
            raise BrokerOptionError(
                f"seglog source: option {BROKER_ONLY_OPTIONS.get(key, key)!r} configures Spark's Kafka source's use "
                f"of a broker, and seglog has none: it reads the segment files of the log root (path) directly; "
                f"drop the option{hint}")
        if key not in KNOWN_OPTIONS:
            near = difflib.get_close_matches(key, list(KNOWN_OPTIONS), n=1)
            hint = f"; did you mean {KNOWN_OPTIONS[near[0]]!r}?" if near else ""
            raise ConfigError(f"seglog source: unknown option {key!r}{hint} (known options: "
                              f"{', '.join(sorted(KNOWN_OPTIONS.values()))})")


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    """Validate and type the reader's options. Raises ConfigError naming the option and what is allowed."""
    opts = {str(k).lower(): v for k, v in dict(options).items()}
    _check_known(opts)
    root = opts.get("path")
    if root is None or not str(root).strip():
        raise ConfigError("seglog source: no path given: pass the log root as .load('/data/log') "
                          "or OPTIONS (path '/data/log')")
    root = local_root(str(root), "seglog source: option 'path'")   # file:///data/log is /data/log
    topics = _parse_selection(opts)

    if "startingtimestamp" in opts:
        starting = Bound("timestamp", "startingTimestamp",
                         timestamp=_parse_timestamp("startingTimestamp", opts["startingtimestamp"]))
    elif "startingoffsetsbytimestamp" in opts:
        starting = Bound("timestamps", "startingOffsetsByTimestamp",
                         values=_parse_timestamps_json("startingOffsetsByTimestamp",
                                                       opts["startingoffsetsbytimestamp"], topics))
    else:
        starting = _parse_start_offsets(opts.get("startingoffsets"), topics, root)
    # The other start options are still checked, so a typo is never silently ignored.
    if "startingoffsets" in opts and starting.kind in ("timestamp", "timestamps"):
        _parse_start_offsets(opts["startingoffsets"], topics, root)

    if "endingtimestamp" in opts:
        ending = Bound("timestamp", "endingTimestamp",
                       timestamp=_parse_timestamp("endingTimestamp", opts["endingtimestamp"]))
    elif "endingoffsetsbytimestamp" in opts:
        ending = Bound("timestamps", "endingOffsetsByTimestamp",
                       values=_parse_timestamps_json("endingOffsetsByTimestamp",
                                                     opts["endingoffsetsbytimestamp"], topics))
    else:
        ending = _parse_end_offsets(opts.get("endingoffsets"), topics, root)
    if "endingoffsets" in opts and ending.kind in ("timestamp", "timestamps"):
        _parse_end_offsets(opts["endingoffsets"], topics, root)

    strategy = str(opts.get("startingoffsetsbytimestampstrategy", "error")).strip().lower()
    if strategy not in ("error", "latest"):
        raise _bad("startingOffsetsByTimestampStrategy", opts["startingoffsetsbytimestampstrategy"],
                   "'error' or 'latest'")

    min_partitions = None
    if "minpartitions" in opts:
        min_partitions = _parse_int("minPartitions", opts["minpartitions"], minimum=1, what="an integer >= 1")
    max_bytes = DEFAULT_MAX_BYTES_PER_TASK
    if "maxbytespertask" in opts:
        max_bytes = _parse_int("maxBytesPerTask", opts["maxbytespertask"], minimum=1,
                               what="a number of bytes >= 1")
    max_rows = DEFAULT_MAX_ROWS_PER_BATCH
    if "maxrowsperbatch" in opts:
        max_rows = _parse_int("maxRowsPerBatch", opts["maxrowsperbatch"], minimum=1, what="an integer >= 1")

    max_records = None
    if "maxrecordsperpartition" in opts:
        max_records = _parse_int("maxRecordsPerPartition", opts["maxrecordsperpartition"], minimum=1,
                                 what="an integer >= 1")
    isolation = _parse_isolation(opts)

    return SourceOptions(
        root=str(root),
        selection=topics,
        starting=starting,
        ending=ending,
        strategy=strategy,
        fail_on_data_loss=_parse_bool("failOnDataLoss", opts.get("failondataloss"), True),
        include_headers=_parse_bool("includeHeaders", opts.get("includeheaders"), False),
        min_partitions=min_partitions,
        max_bytes_per_task=max_bytes,
        max_rows_per_batch=max_rows,
        filter_pushdown=_parse_bool("filterPushdown", opts.get("filterpushdown"), True),
        isolation_level=isolation,
        max_records_per_partition=max_records,
        check_crcs=_parse_bool("checkCrcs", opts.get("checkcrcs"), True),
        columnar_reads=_parse_bool("columnarReads", opts.get("columnarreads"), True),
    )


def _parse_isolation(opts: Mapping[str, str]) -> str:
    """`kafka.isolation.level` (Spark's Kafka source spelling) or `isolation.level`; both must agree."""
    given = {KNOWN_OPTIONS[k]: str(opts[k]).strip().lower() for k in ("kafka.isolation.level", "isolation.level")
             if k in opts}
    for option, value in given.items():
        if value not in ISOLATION_LEVELS:
            raise _bad(option, opts[option.lower()], " or ".join(repr(v) for v in ISOLATION_LEVELS))
    if len(set(given.values())) > 1:
        raise ConfigError(f"seglog source: 'kafka.isolation.level' and 'isolation.level' disagree "
                          f"({given['kafka.isolation.level']!r} vs {given['isolation.level']!r}); give one")
    return next(iter(given.values()), DEFAULT_ISOLATION_LEVEL)
