"""The errors seglog raises. Callers catch what they can handle; users read what went wrong.

Every message names what was wrong, where (file, offset, key, column) and, where it helps,
what is allowed.
"""
from __future__ import annotations


class SeglogError(Exception):
    """Base of every error seglog raises on purpose."""


class ConfigError(SeglogError, ValueError):
    """A configuration key is unknown, or its value has the wrong type or is out of range."""


class BrokerOptionError(ConfigError):
    """An option of Spark's Kafka source that only means something with a broker (`kafka.bootstrap.servers`,
    any other `kafka.*` consumer setting but `kafka.isolation.level`, `groupIdPrefix`, ...): seglog reads the
    log root's files, so it is refused rather than silently ignored."""


class InvalidTopicError(SeglogError, ValueError):
    """A topic name breaks Kafka's naming rule, or a partition is out of range."""


class InvalidRecordError(SeglogError, ValueError):
    """A record cannot be appended (wrong type of key/value/header, bad timestamp)."""


class MissingKeyError(InvalidRecordError):
    """A record without a key for a compacted topic (cleanup.policy holds `compact`): Kafka refuses
    these, since the cleaner keeps the latest record per key and a record without one has none."""


class RecordTooLargeError(InvalidRecordError):
    """A record batch would exceed max.message.bytes."""


class TimestampOutOfRangeError(InvalidRecordError):
    """A CreateTime timestamp is further in the past than message.timestamp.before.max.ms, or further in
    the future than message.timestamp.after.max.ms (or their alias max.message.time.difference.ms)."""


class CorruptRecordError(SeglogError):
    """A record batch on disk fails its CRC or structural checks."""


class CorruptIndexError(SeglogError):
    """An index file is inconsistent with its rules (order, size, bounds)."""


class UnsupportedFormatVersionError(SeglogError):
    """A seglog JSON file (a commit file, topic metadata) carries a format version newer than this seglog reads:
    a newer seglog wrote it. Refused, never read in part (docs/format.md, "Format versions")."""


class OffsetOutOfRangeError(SeglogError, IndexError):
    """A read asked for an offset below the log start offset or past the end."""


class SegmentDeletedError(OffsetOutOfRangeError):
    """A segment a reader had listed was deleted (retention, truncation) before the reader used it:
    reading again from the new log start is the remedy, or a data-loss report if it was asked for."""


class CompactionError(SeglogError):
    """A clean cannot run: the dedupe buffer cannot hold the keys of even one dirty segment, or the
    partition is not compacted."""


class UnknownTopicOrPartitionError(SeglogError):
    """Kafka's UNKNOWN_TOPIC_OR_PARTITION: a writable open of a partition whose folder is missing, where no folder
    may be made: its topic no longer exists (DROP TABLE ... PURGE took its metadata and folders) or was never
    recorded in a root that records its topics, or the caller (the sidecar) only works on partitions that exist.
    Nothing was created."""


class PartitionLockedError(SeglogError):
    """Another writer holds the partition's lock."""


class MaintenanceLockedError(PartitionLockedError):
    """Another cleaner or merger works on the partition (its maintenance lock, indexer/locks.py): this
    one skips it; nothing was changed."""


class CommittedTopicError(SeglogError):
    """A storage-API append (`Log.append`, `Log.append_columns`) to a partition of a topic whose writes go
    through the sink's commit log: readers never read past its committed end offsets, and the next
    `format("seglog")` write or `SegmentLogSink` commit rolls the partition back to them, so the records
    would be invisible, then cut. Write such a topic with the sink or `df.write.format("seglog")`."""


class LogClosedError(SeglogError):
    """The Log was used after close()."""


class ReadOnlyLogError(SeglogError):
    """A write was attempted on a Log opened read-only."""


class StorageError(SeglogError, OSError):
    """The filesystem refused what seglog needs (no space to reserve, no locks, no hard links)."""


class RemoteTierUnavailableError(StorageError):
    """The remote tier's scheme is supported, but this process cannot reach it: pyarrow here lacks that
    filesystem, or its native client is missing (for hdfs://: a JVM, Hadoop's libhdfs, its CLASSPATH)."""


class SymlinkInRootError(SeglogError):
    """A symbolic link inside a log root (a segment or index file, a partition folder): seglog never
    follows one, since it could lead outside the root (docs/spec.md §2.1); nothing is read, written or
    deleted through it. `path` names the link."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.path = path


class SegmentNameError(SeglogError, ValueError):
    """A file named like a segment file (digits, then .log/.index/.timeindex) whose name is not exactly 20
    digits holding a base offset of at most 2^63-1: Kafka refuses to load such a log, and so does seglog."""


class RemotePrefixOwnedError(ConfigError):
    """A remote tier's prefix is owned by another root (its owner object names another root id), or holds
    objects this root never recorded: two roots sharing one prefix would overwrite and delete each other's
    segments (docs/tiered-storage.md §2). Nothing was written or deleted."""


class ConnectorJarError(SeglogError):
    """seglog's Spark connector jar (seglog/jars/seglog-spark-*.jar) is missing, or a Spark session runs
    another version of it than the installed seglog."""


_SHOWN_CHARS = 80   # a message shows at most this much of a bad value


def shown(value: object, limit: int = _SHOWN_CHARS) -> str:
    """`repr(value)` for an error message, bounded: at most `limit` characters, built without ever
    making the whole repr (a value from an untrusted file may be huge, deeply nested or shared many
    times over; Python refuses str() of an int past 4300 digits). The one home of this rule."""
    import reprlib

    class _Bounded(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            if x.bit_length() > 128:
                return f"<an integer of {x.bit_length()} bits>"
            return repr(x)

    r = _Bounded()
    r.maxlevel, r.maxdict, r.maxlist, r.maxtuple, r.maxset = 2, 4, 4, 4, 4
    r.maxstring = r.maxother = limit
    try:
        text = r.repr(value)
    except Exception:   # a value whose repr fails is still named, by its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


class UnsupportedSparkError(ConnectorJarError):
    """The running (or named) Spark is a line, or a Scala build, that seglog ships no connector jar for;
    the message names the ones it supports (seglog.jvm.JARS)."""
