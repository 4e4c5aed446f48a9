"""Topics as SQL tables (issue 40): `io.seglog.spark.SeglogCatalog` over a real root, driven through SQL on the
session's real local Spark. Each statement's effect is checked in the root's files (topic metadata, commit log,
records read back by the Python core), and each refused statement leaves every file as it was."""
from __future__ import annotations

import hashlib
import itertools
import json
from datetime import datetime, timezone

import pyspark
import pytest

from seglog.indexer.compaction.cleaner import clean_partition
from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset
from seglog.indexer.consumer_positions import consumers_dir, read_consumer_positions
from seglog.indexer.root import LogRoot
from seglog.indexer.topics import load_topic
from tests.committed import committed_keys
from tests.sql.roots import files

pytestmark = pytest.mark.spark

_NAMES = itertools.count()
T0 = 1_700_000_000_000   # ms: the records' timestamps start here


@pytest.fixture
def cat(spark, tmp_path):
    """A catalog of its own over a fresh root (catalogs are cached by name once loaded, so one name per root)."""
    name = f"logs{next(_NAMES)}"
    root = tmp_path / "log"
    root.mkdir()
    spark.conf.set(f"spark.sql.catalog.{name}", "io.seglog.spark.SeglogCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.root", str(root))
    return name, root


def write(spark, root, topic, n, partitions=2, start=0, **config):
    df = spark.range(start, start + n).selectExpr(
        "CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST('v' AS BINARY) AS value",
        f"timestamp_millis({T0} + id * 1000) AS timestamp")
    w = df.write.format("seglog").mode("append").option("topic", topic).option("partitions", str(partitions))
    for k, v in config.items():
        w = w.option(k.replace("_", "."), str(v))
    w.save(str(root))


def props(spark, table) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def refused(spark, root, statement, *needles):
    before = files(root)
    with pytest.raises(Exception) as info:
        spark.sql(statement).collect()
    for needle in needles:
        assert needle in str(info.value), (statement, str(info.value)[:2000])
    assert files(root) == before, statement
    return info.value


@pytest.mark.smoke
def test_show_tables_and_describe_say_what_kafka_describes(spark, cat):
    name, root = cat
    write(spark, root, "events", 10, partitions=2, retention_ms=86_400_000)
    write(spark, root, "other", 1, partitions=1)
    assert sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {name}").collect()) == ["events", "other"]
    p = props(spark, f"{name}.events")
    assert p["partitions"] == "2"
    ends = json.loads(p["endOffsets"])["events"]
    assert json.loads(p["startOffsets"]) == {"events": {"0": 0, "1": 0}}
    assert sum(ends.values()) == 10 and set(ends) == {"0", "1"}
    assert p["records"] == "10"
    sizes = sum(f.stat().st_size for f in root.glob("events-*/*.log"))
    assert int(p["sizeBytes"]) == sizes > 0
    iso = lambda ms: datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    assert p["oldestTimestamp"] == iso(T0) and p["newestTimestamp"] == iso(T0 + 9000)
    assert (p["retention.ms"], p["retention.ms.source"]) == ("86400000", "set")
    assert (p["segment.bytes"], p["segment.bytes.source"]) == ("1073741824", "default")
    # every key of the Python core's rules, with its source
    from seglog.conf.topic_config import RULES
    assert {k for k in p if k.endswith(".source")} == {f"{k}.source" for k in RULES}
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}.events").collect()
    assert [r.col_name for r in rows[:8]] == ["key", "value", "topic", "partition", "offset", "timestamp",
                                              "timestampType", "headers"]
    table_props = next(r.data_type for r in rows if r.col_name == "Table Properties")
    assert "retention.ms.source=set" in table_props and "partitions=2" in table_props
    # no such table, and a name that is no topic name
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {name}.nothing").collect()


@pytest.mark.smoke
def test_create_table_is_create_topics_with_the_same_rules(spark, cat):
    name, root = cat
    spark.sql(f"CREATE TABLE {name}.events TBLPROPERTIES ('partitions' = '3', 'retention.ms' = '3600000', "
              f"'cleanup.policy' = 'compact,delete')")
    meta = load_topic(root, "events")
    assert meta.partitions == 3
    assert meta.config == {"retention.ms": 3_600_000, "cleanup.policy": "compact,delete"}
    spark.sql(f"CREATE TABLE {name}.plain")
    assert load_topic(root, "plain").partitions == 1 and load_topic(root, "plain").config == {}
    # refused, naming what is wrong, with nothing created
    refused(spark, root, f"CREATE TABLE {name}.bad TBLPROPERTIES ('retention.mss' = '1')",
            "unknown configuration key 'retention.mss'", "did you mean 'retention.ms'?")
    refused(spark, root, f"CREATE TABLE {name}.bad TBLPROPERTIES ('retention.ms' = 'soon')",
            "'retention.ms' = 'soon' is not an integer")
    refused(spark, root, f"CREATE TABLE {name}.bad TBLPROPERTIES ('partitions' = '0')", "'partitions' = '0'")
    refused(spark, root, f"CREATE TABLE {name}.bad TBLPROPERTIES ('colour' = 'blue')", "unknown configuration key 'colour'")
    refused(spark, root, f"CREATE TABLE {name}.bad TBLPROPERTIES ('local.retention.ms' = '10', 'retention.ms' = '5', "
            f"'remote.storage.enable' = 'true')", "'local.retention.ms' = 10 is above 'retention.ms' = 5")
    refused(spark, root, f"CREATE TABLE {name}.bad (x INT)", "give none")
    refused(spark, root, f"CREATE TABLE {name}.`bad/../x`", "not a topic name")
    refused(spark, root, f"CREATE TABLE {name}.events", "already exists")
    assert load_topic(root, "bad") is None


@pytest.mark.smoke
def test_alter_table_is_incremental_alter_configs_and_create_partitions(spark, cat):
    name, root = cat
    write(spark, root, "events", 4, partitions=2, retention_ms=1000, segment_bytes=1048576)
    table = f"{name}.events"
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('retention.ms' = '5000', 'retention.bytes' = '1048576')")
    meta = load_topic(root, "events")
    assert meta.config == {"retention.ms": 5000, "retention.bytes": 1048576, "segment.bytes": 1048576}  # others kept
    # the sidecar's view (it reads the metadata on each pass)
    assert LogRoot(root).topic_config("events")["retention.ms"] == 5000
    spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES ('retention.ms')")
    assert load_topic(root, "events").config == {"retention.bytes": 1048576, "segment.bytes": 1048576}
    assert props(spark, table)["retention.ms.source"] == "default"
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('partitions' = '4')")
    assert load_topic(root, "events").partitions == 4
    assert load_topic(root, "events").created_ms == meta.created_ms
    assert load_topic(root, "events").topic_id == meta.topic_id is not None    # ALTER keeps the topic's id
    refused(spark, root, f"ALTER TABLE {table} SET TBLPROPERTIES ('partitions' = '3')", "never removed")
    refused(spark, root, f"ALTER TABLE {table} UNSET TBLPROPERTIES ('partitions')", "can only grow")
    refused(spark, root, f"ALTER TABLE {table} SET TBLPROPERTIES ('retention.ms' = '-7')", "'retention.ms' = -7 is out of range")
    refused(spark, root, f"ALTER TABLE {table} SET TBLPROPERTIES ('segmnt.bytes' = '1')", "unknown configuration key 'segmnt.bytes'")
    refused(spark, root, f"ALTER TABLE {table} SET TBLPROPERTIES ('message.timestamp.out.of.range.policy' = 'quarantine')",
            "needs 'quarantine.topic'")
    refused(spark, root, f"ALTER TABLE {table} ADD COLUMNS (x INT)", "columns are fixed")
    # the records written before are all there, and a write after the growth reaches the new partitions
    write(spark, root, "events", 40, partitions=4, start=100)
    assert len(committed_keys(root, "events")) == 44


@pytest.mark.smoke
def test_drop_table_needs_purge_and_deletes_through_deleted(spark, cat):
    name, root = cat
    write(spark, root, "events", 6, partitions=2, retention_ms=1000)
    write(spark, root, "kept", 3, partitions=1)
    refused(spark, root, f"DROP TABLE {name}.events", "PURGE")
    spark.sql(f"DROP TABLE {name}.events PURGE")
    assert not list(root.glob("events-*"))
    assert load_topic(root, "events") is None
    assert not (root / "_seglog" / "commits" / "events").exists()
    assert not list((root / "_seglog" / "deleted").iterdir())
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {name}").collect()] == ["kept"]
    assert committed_keys(root, "kept") == [b"0", b"1", b"2"]
    # the name is free again, with nothing of the old topic (commit log, log starts) left to it
    spark.sql(f"CREATE TABLE {name}.events TBLPROPERTIES ('partitions' = '1')")
    spark.sql(f"INSERT INTO {name}.events SELECT CAST('k' AS BINARY) AS key, CAST('v' AS BINARY) AS value")
    assert committed_keys(root, "events") == [b"k"]
    assert spark.sql(f"SELECT offset FROM {name}.events").collect()[0].offset == 0


@pytest.mark.smoke
def test_insert_into_appends_once_and_changes_in_place_are_refused(spark, cat):
    name, root = cat
    spark.sql(f"CREATE TABLE {name}.events TBLPROPERTIES ('partitions' = '2')")
    insert = (f"INSERT INTO {name}.events SELECT CAST(CAST(id AS STRING) AS BINARY) AS key, "
              f"CAST('v' AS BINARY) AS value FROM range(10)")
    spark.sql(insert)
    assert committed_keys(root, "events") == sorted(str(i).encode() for i in range(10))
    spark.sql(insert)
    assert len(committed_keys(root, "events")) == 20
    assert spark.sql(f"SELECT count(*) AS n FROM {name}.events").collect()[0].n == 20
    append_only = "a log is append-only"
    refused(spark, root, f"INSERT OVERWRITE {name}.events SELECT CAST('v' AS BINARY) AS value", append_only)
    refused(spark, root, f"DELETE FROM {name}.events WHERE offset < 3", append_only)
    refused(spark, root, f"DELETE FROM {name}.events", append_only)
    # Spark 4 and 3.5.3+ say which rows a statement writes when they load the table, so the catalog refuses those;
    # 3.5.0 to 3.5.2 do not, and refuse UPDATE and MERGE themselves (README, docs/spec.md §8.1)
    privileges = tuple(int(x) for x in pyspark.__version__.split(".")[:3] if x.isdigit()) >= (3, 5, 3)
    refused(spark, root, f"UPDATE {name}.events SET value = CAST('x' AS BINARY) WHERE offset < 3",
            append_only if privileges else "UPDATE")
    refused(spark, root, f"MERGE INTO {name}.events t USING (SELECT CAST('1' AS BINARY) AS k) s ON t.key = s.k "
            f"WHEN MATCHED THEN DELETE", *([append_only] if privileges else []))
    assert len(committed_keys(root, "events")) == 20


def test_reads_take_the_source_options_and_streams_use_the_table(spark, cat, tmp_path):
    name, root = cat
    write(spark, root, "events", 10, partitions=1)
    table = f"{name}.events"
    rows = spark.sql(f"SELECT offset FROM {table} WITH ('startingOffsets' = '{{\"events\":{{\"0\":7}}}}')").collect()
    assert [r.offset for r in rows] == [7, 8, 9]
    start = datetime.fromtimestamp((T0 + 5000) / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert spark.read.option("startingTimestamp", str(T0 + 5000)).table(table).count() == 5, start
    with pytest.raises(Exception, match="option 'path' is the table's own"):
        spark.read.option("path", "/elsewhere").table(table).collect()
    # a stream from the table into another table of the catalog
    spark.sql(f"CREATE TABLE {name}.copy TBLPROPERTIES ('partitions' = '1')")
    q = (spark.readStream.option("startingOffsets", "earliest").table(table)
         .selectExpr("key", "value").writeStream.option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(availableNow=True).toTable(f"{name}.copy"))
    q.awaitTermination()
    assert committed_keys(root, "copy") == committed_keys(root, "events")


def _of_topic(root, topic) -> list[str]:
    """What under the root belongs to `topic` by name: its folders and files, its staging (by the topic's key), and
    lock files aside (kept on purpose: TopicAdmin.delete), plus the root-level checkpoints' entries for it."""
    key = hashlib.sha1(topic.encode()).hexdigest()[:16] + "-jvm"
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[:2] == ("_seglog", "locks"):
            continue
        if any(part == key or part == f"{topic}.json" or part.startswith(f"{topic}-") or part == topic
               for part in rel.parts):
            out.append(str(rel))
    for name in ("cleaner-offset-checkpoint", "log-start-offset-checkpoint"):
        if (root / name).exists():
            out += [f"{name}: {line}" for line in (root / name).read_text().splitlines() if line.startswith(f"{topic} ")]
    return out


def test_drop_purge_leaves_nothing_of_the_topic_and_the_name_starts_clean(spark, cat, tmp_path):
    """DROP TABLE ... PURGE takes every per-topic thing of the root with it: the cleaner checkpoint's entries (a
    stale one would claim the new topic's offsets as cleaned), consumer positions, crashed staging runs; a topic
    created again under the name sees only its own data."""
    name, root = cat
    table = f"{name}.events"
    spark.sql(f"CREATE TABLE {table} TBLPROPERTIES ('partitions' = '1', 'cleanup.policy' = 'compact', "
              f"'segment.bytes' = '1024')")
    rows = (f"INSERT INTO {table} SELECT CAST(CAST(id % 5 AS STRING) AS BINARY) AS key, "
            f"CAST(repeat('v', 60) AS BINARY) AS value FROM range(60)")
    spark.sql(rows)
    spark.sql(rows)
    write(spark, root, "kept", 3, partitions=1)
    cfg = LogRoot(root).topic_config("events")
    assert clean_partition(root / "events-0", cfg, force=True).cleaned
    assert cleaner_offset(root / "events-0") is not None
    # a stream over each topic: each query leaves its consumer position
    for topic in ("events", "kept"):
        q = (spark.readStream.option("startingOffsets", "earliest").table(f"{name}.{topic}")
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / f"ckpt-{topic}"))
             .trigger(availableNow=True).start())
        q.awaitTermination()
    positions = {next(iter(c.offsets))[0]: c for c in read_consumer_positions(root)}
    assert positions["events"].offsets[("events", 0)] == 120
    # a killed write's run of this topic (its lock free: over), as test_sink's crashed-run case makes one
    crashed = root / "_seglog" / "staging" / "@append" / (hashlib.sha1(b"events").hexdigest()[:16] + "-jvm") / "r1"
    (crashed / "t0-1").mkdir(parents=True)
    (crashed / "t0-1" / "00000000000000000000.log").write_bytes(b"staged")
    kept_position = (consumers_dir(root) / f"{positions['kept'].query_id}.json").read_bytes()
    assert _of_topic(root, "events")

    spark.sql(f"DROP TABLE {table} PURGE")
    assert _of_topic(root, "events") == []
    assert [c.query_id for c in read_consumer_positions(root)] == [positions["kept"].query_id]
    assert (consumers_dir(root) / f"{positions['kept'].query_id}.json").read_bytes() == kept_position
    assert committed_keys(root, "kept") == [b"0", b"1", b"2"]

    # the name again: its reads, cleaner and positions see only the new topic
    spark.sql(f"CREATE TABLE {table} TBLPROPERTIES ('partitions' = '1', 'cleanup.policy' = 'compact')")
    spark.sql(f"INSERT INTO {table} SELECT CAST('new' AS BINARY) AS key, CAST('x' AS BINARY) AS value")
    assert cleaner_offset(root / "events-0") is None
    assert [(r.key, r.offset) for r in spark.sql(f"SELECT key, offset FROM {table}").collect()] == [(b"new", 0)]
    assert read_consumer_positions(root)[0].offsets == {("kept", 0): 3}
    assert not crashed.exists()
    q = (spark.readStream.option("startingOffsets", "earliest").table(table).writeStream.format("noop")
         .option("checkpointLocation", str(tmp_path / "ckpt-new")).trigger(availableNow=True).start())
    q.awaitTermination()
    assert {c.query_id: c.offsets for c in read_consumer_positions(root)}[q.id] == {("events", 0): 1}


@pytest.mark.smoke
def test_create_table_as_select_creates_and_appends_once_with_the_same_rules(spark, cat):
    """CTAS is CreateTopics and one Produce: the request checked as CREATE TABLE's before the query runs (a bad one
    refused by name, nothing created), then the write's commit makes the topic with its rows; a failed query leaves
    no topic, and REPLACE is refused (it would delete records)."""
    name, root = cat
    rows = "SELECT CAST(CAST(id AS STRING) AS BINARY) AS key, CAST('v' AS BINARY) AS value FROM range(10)"
    refused(spark, root, f"CREATE TABLE {name}.made TBLPROPERTIES ('partitions' = '2', 'retention.msx' = '1') AS {rows}",
            "retention.msx")
    refused(spark, root, f"CREATE TABLE {name}.made TBLPROPERTIES ('partitions' = '0') AS {rows}", "'partitions' = '0'")
    with pytest.raises(Exception, match="boom"):     # the query fails as it runs: no topic left, no staged run
        spark.sql(f"CREATE TABLE {name}.made AS SELECT CAST('k' AS BINARY) AS key, "
                  f"CAST(IF(id = 5, raise_error('boom'), 'v') AS BINARY) AS value FROM range(10)")
    assert load_topic(root, "made") is None
    assert [p.relative_to(root) for p in root.rglob("*") if p.is_file()] == []
    spark.sql(f"CREATE TABLE {name}.made TBLPROPERTIES ('partitions' = '2', 'retention.ms' = '60000') AS {rows}")
    meta = load_topic(root, "made")
    assert (meta.partitions, meta.config) == (2, {"retention.ms": 60000})
    assert committed_keys(root, "made") == sorted(str(i).encode() for i in range(10))
    assert spark.sql(f"SELECT count(*) AS n FROM {name}.made").collect()[0].n == 10
    refused(spark, root, f"CREATE TABLE {name}.made AS {rows}", "made")            # exists: nothing appended
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name}.made AS {rows}")                 # a no-op, as Spark's
    assert len(committed_keys(root, "made")) == 10
    refused(spark, root, f"CREATE OR REPLACE TABLE {name}.made AS {rows}", "append-only")
    refused(spark, root, f"REPLACE TABLE {name}.made AS {rows}", "append-only")
    # no rows: the topic is made all the same, empty
    spark.sql(f"CREATE TABLE {name}.empty AS {rows} WHERE id < 0")
    assert load_topic(root, "empty").partitions == 1
    assert committed_keys(root, "empty") == []
