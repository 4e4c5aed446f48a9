"""A refused write crosses from the JVM as its exception's class (sink/write_errors.py's JAVA_CLASSES), never by
its wording: the table is complete over the jar's refusal classes, no refusal names its kind only in a message,
and each mapping holds through a real write (SegmentLogSink, or format("seglog") for what the sink checks first)."""
from __future__ import annotations

import datetime as dt
import re
import time
from pathlib import Path

import pytest

from seglog.errors import (InvalidRecordError, InvalidTopicError, MissingKeyError, PartitionLockedError,
                           RecordTooLargeError, SymlinkInRootError, TimestampOutOfRangeError,
                           UnsupportedFormatVersionError)
from seglog.indexer.locks import FileLock
from seglog.sink import SegmentLogSink
from seglog.sink.input_schema import SinkInputError, SinkSchemaError
from seglog.sink.write_errors import JAVA_CLASSES, typed_error

REPO = Path(__file__).resolve().parents[2]
JAVA = REPO / "jvm" / "src" / "main" / "java"


def _source(cls: str) -> Path:
    return JAVA / (cls.replace(".", "/") + ".java")


def test_every_class_in_the_table_exists():
    for cls in JAVA_CLASSES:
        assert _source(cls).is_file(), cls


def test_every_refusal_class_of_the_jar_is_in_the_table():
    """Every subclass of SeglogWriteException (a new refusal) is mapped: an unmapped one would come back untyped."""
    subclasses = {f"io.seglog.spark.write.{p.stem}" for p in (JAVA / "io/seglog/spark/write").glob("*.java")
                  if re.search(r"\bextends SeglogWriteException\b", p.read_text(encoding="utf-8"))}
    assert subclasses and subclasses <= set(JAVA_CLASSES), sorted(subclasses - set(JAVA_CLASSES))


def test_no_refusal_names_its_kind_only_in_its_message():
    """A kind in the wording (`seglog RecordTooLargeError: ...`) must be thrown as its class too, or Python cannot
    type it: the generic classes never carry one."""
    bad = []
    for p in (JAVA / "io/seglog/spark").rglob("*.java"):
        if p.name == "StagedWrite.java":   # the tests' py4j stager (tests/sink/jvm_stage.py), no write path
            continue
        for m in re.finditer(r"new (SeglogWriteException|IllegalArgumentException|IllegalStateException)\(\s*\"seglog "
                             r"[A-Za-z]+Error:", p.read_text(encoding="utf-8")):
            bad.append(f"{p.relative_to(REPO)}: {m.group(0)}")
    assert not bad, bad


# ------------------------------------------------------------------------------------- through real writes
def _refused(sink, df, batch_id=1):
    with pytest.raises(Exception) as info:
        sink(df, batch_id)
    return info.value


def test_record_too_large(spark, tmp_path):
    sink = SegmentLogSink(str(tmp_path), writer_id="w", topic="ev", partitions=1, config={"max.message.bytes": 2000})
    df = spark.createDataFrame([(b"k", b"x" * 5000)], "key binary, value binary")
    err = _refused(sink, df)
    assert type(err) is RecordTooLargeError and "max.message.bytes=2000" in str(err)


def test_timestamp_out_of_range(spark, tmp_path):
    sink = SegmentLogSink(str(tmp_path), writer_id="w", topic="ev", partitions=1,
                          config={"message.timestamp.after.max.ms": 3_600_000})
    late = dt.datetime.fromtimestamp(time.time() + 86_400, dt.timezone.utc)
    df = spark.createDataFrame([(b"k", b"v", late)], "key binary, value binary, timestamp timestamp")
    err = _refused(sink, df)
    assert type(err) is TimestampOutOfRangeError and "message.timestamp.after.max.ms=3600000" in str(err)


def test_missing_key(spark, tmp_path):
    sink = SegmentLogSink(str(tmp_path), writer_id="w", topic="c", partitions=1, config={"cleanup.policy": "compact"})
    df = spark.createDataFrame([(None, b"v")], "key binary, value binary")
    err = _refused(sink, df)
    assert type(err) is MissingKeyError and "compacted" in str(err)


def test_invalid_record(spark, tmp_path):
    sink = SegmentLogSink(str(tmp_path), writer_id="w", topic="ev", partitions=1)
    df = spark.createDataFrame([(b"k", b"v", [(None, b"h")])],
                               "key binary, value binary, headers array<struct<key: string, value: binary>>")
    err = _refused(sink, df)
    assert type(err) is InvalidRecordError and "null key" in str(err)


def test_topic_refused(spark, tmp_path):
    df = spark.createDataFrame([(b"k", b"v")], "key binary, value binary")
    SegmentLogSink(str(tmp_path), writer_id="w", topic="ev", partitions=2)(df, 0)
    err = _refused(SegmentLogSink(str(tmp_path), writer_id="x", topic="ev", partitions=3), df)
    assert type(err) is InvalidTopicError and "3 were asked" in str(err)


def test_a_row_refused_is_a_sink_input_error(spark, tmp_path):
    sink = SegmentLogSink(str(tmp_path), writer_id="w", topic="ev", partitions=1)
    df = spark.createDataFrame([(b"k", b"v", 5)], "key binary, value binary, partition int")
    err = _refused(sink, df)
    assert type(err) is SinkInputError and "5" in str(err)


def test_a_column_refused_by_the_jar_is_a_sink_schema_error(spark, tmp_path):
    """The sink checks columns in Python first; format("seglog") itself refuses them in the JVM, by class."""
    with pytest.raises(Exception) as info:
        (spark.range(1).selectExpr("id AS value").write.format("seglog").mode("append")
         .option("topic", "ev").option("partitions", "1").save(str(tmp_path)))
    err = typed_error(info.value)
    assert type(err) is SinkSchemaError and "column 'value' is bigint" in str(err)


def test_a_held_lock_is_partition_locked(spark, tmp_path):
    df = spark.createDataFrame([(b"k", b"v")], "key binary, value binary")
    SegmentLogSink(str(tmp_path), writer_id="w", topic="ev", partitions=1)(df, 0)
    lock = FileLock(tmp_path / "_seglog" / "locks" / "ev.writer.lock").acquire(0)
    try:
        err = _refused(SegmentLogSink(str(tmp_path), writer_id="w", topic="ev", lock_timeout=0), df)
    finally:
        lock.release()
    assert type(err) is PartitionLockedError and "locked by another writer" in str(err)


def test_a_newer_seglogs_topic_file_is_unsupported_format_version(spark, tmp_path):
    """A topic file a newer seglog wrote (format version 2) is refused by the write, typed, and left as it is."""
    import json

    df = spark.createDataFrame([(b"k", b"v")], "key binary, value binary")
    SegmentLogSink(str(tmp_path), writer_id="w", topic="ev", partitions=1)(df, 0)
    meta = tmp_path / "_seglog" / "topics" / "ev.json"
    doc = json.loads(meta.read_text())
    meta.write_text(json.dumps(doc | {"version": 2}))
    before = meta.read_bytes()
    err = _refused(SegmentLogSink(str(tmp_path), writer_id="w", topic="ev"), df)
    assert type(err) is UnsupportedFormatVersionError and "version" in str(err), err
    assert meta.read_bytes() == before


def test_a_symlinked_partition_folder_is_symlink_in_root(spark, tmp_path):
    """A partition folder that is a link (planted to reach another root) is refused by the write, typed; nothing is
    written through it."""
    df = spark.createDataFrame([(b"k", b"v")], "key binary, value binary")
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    SegmentLogSink(str(root), writer_id="w", topic="ev", partitions=1)(df, 0)
    (root / "ev-0").rename(elsewhere)
    (root / "ev-0").symlink_to(elsewhere)
    before = sorted((p.name, p.stat().st_size) for p in elsewhere.iterdir())
    err = _refused(SegmentLogSink(str(root), writer_id="w", topic="ev"), df)
    assert type(err) is SymlinkInRootError and "ev-0" in str(err), err
    assert sorted((p.name, p.stat().st_size) for p in elsewhere.iterdir()) == before
