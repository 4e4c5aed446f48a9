"""The `format("seglog")` write's refusals as seglog's typed errors (seglog/errors.py), by the Java exception's class.

Each refusal of the connector jar is an exception of its own class (`io.seglog.spark.write.RecordTooLargeException`,
...: `JAVA_CLASSES` is the table), so the class crosses to Python, never the wording of a message: rewording
one cannot turn a typed error into a generic one. The class reaches Python inside Spark's job failure, as a
cause: in classic PySpark as py4j's `java_exception` (its `getCause()` chain, each link's
`getClass().getName()`); under Spark Connect as the server-side cause chain pyspark's client keeps in
`SparkConnectGrpcException.getStackTrace()` (one `Caused by: <class>: <message>` line per cause, rendered from
the error details' `error_type_hierarchy`, not from seglog's text; pyspark 3.5's client appends the same lines to
the message after `JVM stacktrace:`). The outermost seglog class in the chain is
the refusal; its message is the error's message. tests/sink/test_write_error_classes.py writes each.
"""
from __future__ import annotations

import re

from seglog.errors import (ConfigError, ConnectorJarError, InvalidRecordError, InvalidTopicError, MissingKeyError,
                           OffsetOutOfRangeError, PartitionLockedError, RecordTooLargeError, RemotePrefixOwnedError,
                           SeglogError, SegmentNameError, StorageError, SymlinkInRootError, TimestampOutOfRangeError,
                           UnsupportedFormatVersionError)
from seglog.sink.input_schema import SinkInputError, SinkSchemaError

_W = "io.seglog.spark.write."
_F = "io.seglog.spark.format."
# The connector's exception class -> the typed error. Subclasses first: the chain's classes are matched exactly.
JAVA_CLASSES: dict[str, type[SeglogError]] = {
    _W + "RecordTooLargeException": RecordTooLargeError,
    _W + "TimestampOutOfRangeException": TimestampOutOfRangeError,
    _W + "MissingKeyException": MissingKeyError,
    _W + "InvalidRecordException": InvalidRecordError,
    _W + "TopicRefusedException": InvalidTopicError,
    _W + "OffsetOutOfRangeException": OffsetOutOfRangeError,   # a roll back below the remote end
    _W + "InputColumnsException": SinkSchemaError,
    _W + "SeglogWriteException": SinkInputError,               # any other refusal of a row or request
    _F + "LockedException": PartitionLockedError,
    # what a write meets in the root itself (the storage core's errors under the same names)
    _F + "UnsupportedFormatVersionException": UnsupportedFormatVersionError,   # a newer seglog's file
    _F + "SymlinkInRootException": SymlinkInRootError,
    _F + "SegmentNameException": SegmentNameError,
    _F + "InvalidTopicException": InvalidTopicError,
    _F + "TopicConfigException": ConfigError,
    _F + "RemotePrefixOwnedException": RemotePrefixOwnedError,
    _F + "StorageException": StorageError,      # the filesystem refused (no space, no locks, no hard links)
}
MAX_CAUSES = 32   # a cause chain is a few links; a cycle or a hostile depth stops here
_CAUSED_BY = re.compile(r"^Caused by: ([\w.$]+)(?:: (.*))?$", re.M)
_JVM_STACK = "JVM stacktrace:\n"
_ROOT = re.compile(r"^([\w.$]+)(?:: (.*))?$")
_KIND_PREFIX = re.compile(r"^seglog (?:[A-Za-z]+Error|write): ")   # the jar's messages name the kind for Java readers


def _classic_chain(java_exception) -> list[tuple[str, str]]:
    chain, seen = [], 0
    while java_exception is not None and seen < MAX_CAUSES:
        chain.append((java_exception.getClass().getName(), java_exception.getMessage() or ""))
        java_exception = java_exception.getCause()
        seen += 1
    return chain


def java_chain(exc: BaseException) -> list[tuple[str, str]]:
    """(class name, message) of the server-side exception and its causes, outermost first; [] when none is known."""
    java_exception = getattr(exc, "java_exception", None)   # py4j's Py4JJavaError (classic)
    if java_exception is None:
        java_exception = getattr(exc, "_origin", None)        # pyspark's captured exceptions (classic)
    if java_exception is not None:
        try:
            return _classic_chain(java_exception)
        except Exception:   # the gateway is gone: no chain to read
            return []
    get_stack = getattr(exc, "getStackTrace", None)           # Spark Connect's SparkConnectGrpcException
    stack = get_stack() if callable(get_stack) else None
    if not stack and _JVM_STACK in str(exc):                  # pyspark 3.5's Connect client: the same lines, in the text
        stack = str(exc).split(_JVM_STACK, 1)[1]
    if not stack:
        return []
    chain = []
    root = _ROOT.match(stack.split("\n", 1)[0])   # the error itself: its class (and message, if the server gave one)
    if root is not None:
        chain.append((root.group(1), root.group(2) or getattr(exc, "_message", None) or str(exc)))
    chain += [(m.group(1), m.group(2) or "") for m in _CAUSED_BY.finditer(stack)]
    return chain[:MAX_CAUSES]


def _condition(exc: BaseException) -> str | None:
    for name in ("getCondition", "getErrorClass"):
        get = getattr(exc, name, None)
        if callable(get):
            try:
                value = get()
            except Exception:
                value = None
            if value:
                return value
    return None


def typed_error(exc: BaseException) -> SeglogError | None:
    """The typed error a failed write means, or None when it is no refusal of the write (re-raise as is)."""
    for cls, message in java_chain(exc):
        kind = JAVA_CLASSES.get(cls)
        if kind is not None:
            return kind(_KIND_PREFIX.sub("", message.strip()))
    # Spark's own error condition: the session has no `seglog` data source (classic and Connect alike).
    if _condition(exc) == "DATA_SOURCE_NOT_FOUND" or ("DATA_SOURCE_NOT_FOUND" in str(exc) and "seglog" in str(exc)):
        from seglog.jvm import jar_path

        return ConnectorJarError(f"this Spark session has no seglog connector (format(\"seglog\") is unknown): start "
                                 f"it with spark.jars={jar_path()} (seglog.jvm.with_jar)")
    return None
