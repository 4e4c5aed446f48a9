"""A streaming query restarted from its checkpoint after its topic was deleted (DROP TABLE ... PURGE) and created
again under the name (docs/spec.md §8, §9.1). The checkpoint's offsets are the old topic's: as Kafka (topic IDs: a
consumer's offsets of another topic id are not applied) and Spark's Kafka source (failOnDataLoss), the query fails
naming the topic, the partition, the checkpointed offset and the new topic's range, or, with failOnDataLoss=false,
reads the new topic from its earliest offset. Before topic ids it read the new topic on from the old offset,
silently skipping the new topic's first records, and recorded the old offsets as its position in the new topic."""
from __future__ import annotations

import pytest

from seglog.indexer.consumer_positions import read_consumer_positions

pytestmark = pytest.mark.spark


def _write(spark, root, n: int, tag: str) -> None:
    (spark.range(n).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key", f"CAST('{tag}' AS BINARY) AS value")
     .write.format("seglog").mode("append").option("topic", "t").option("partitions", "1").save(str(root)))


def _stream_of_t(session, root, **options):
    """Topic t's stream from its earliest offset, with `options` (a classic or a Connect session)."""
    reader = session.readStream.format("seglog").option("subscribe", "t").option("startingOffsets", "earliest")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(root))


def _run(spark, root, cp, seen: list, **options) -> object:
    def batch(df, batch_id):
        seen.extend(sorted((r.offset, bytes(r.value).decode()) for r in df.select("offset", "value").collect()))

    q = (_stream_of_t(spark, root, **options).writeStream.foreachBatch(batch).option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    return q


def _drop_and_create_again(spark, root, n: int, catalog: str = "recat") -> None:
    # one catalog name per root: Spark keeps a catalog as first initialized, whatever its root setting says later
    spark.conf.set(f"spark.sql.catalog.{catalog}", "io.seglog.spark.SeglogCatalog")
    spark.conf.set(f"spark.sql.catalog.{catalog}.root", str(root))
    spark.sql(f"DROP TABLE {catalog}.t PURGE")
    _write(spark, root, n, "new")


def test_a_topic_created_again_fails_the_restarted_query_or_is_read_from_its_earliest(spark, tmp_path):
    root = tmp_path / "log"
    _write(spark, root, 5, "old")
    strict, lenient = tmp_path / "cp-strict", tmp_path / "cp-lenient"
    for cp in (strict, lenient):
        seen: list = []
        q = _run(spark, root, cp, seen)
        q.awaitTermination(180)
        assert seen == [(i, "old") for i in range(5)]
    _drop_and_create_again(spark, root, 8)

    # failOnDataLoss (the default): the query fails, naming what it found; it reads nothing of the new topic
    seen = []
    q = _run(spark, root, strict, seen)
    with pytest.raises(Exception) as failed:
        q.awaitTermination(180)
    text = str(failed.value)
    assert "topic 't' was deleted and created again" in text, text
    assert "partition t-0's checkpointed offset 5 is the old topic's" in text, text
    assert "holds offsets [0, 8)" in text and "failOnDataLoss=false" in text, text
    assert seen == []
    # nor is the old topic's offset recorded as the query's position in the new one
    assert all(("t", 0) not in c.offsets for c in read_consumer_positions(root) if c.query_id == q.id)

    # failOnDataLoss=false: the new topic is read from its earliest offset, all of it
    seen = []
    q = _run(spark, root, lenient, seen, failOnDataLoss="false")
    q.awaitTermination(180)
    assert seen == [(i, "new") for i in range(8)]
    assert {dict(c.offsets).get(("t", 0)) for c in read_consumer_positions(root) if c.query_id == q.id} == {8}


def test_a_progress_given_back_as_starting_offsets_is_checked_against_the_topic_id(spark, tmp_path):
    """A query's progress offsets (Kafka's shape plus '@topicIds') given back as startingOffsets, as Kafka users do
    to start another query where one stopped: read from those offsets while the topic is the same; refused naming
    both ids once it was deleted and created again (through format("seglog") and the Python reader's options)."""
    import json

    from seglog.errors import ConfigError
    from seglog.source.options import parse_options

    root = tmp_path / "log"
    _write(spark, root, 5, "old")
    q = _run(spark, root, tmp_path / "cp", [])
    q.awaitTermination(180)
    progress = [json.loads(p.json) for p in q.recentProgress if p.numInputRows > 0][-1]   # as a user logs it
    end = progress["sources"][0]["endOffset"]
    given = end if isinstance(end, str) else json.dumps(end)
    assert "@topicIds" in json.loads(given), given
    _write(spark, root, 3, "more")

    def read():
        return spark.read.format("seglog").option("subscribe", "t").option("startingOffsets", given).load(str(root))

    assert sorted(r.offset for r in read().select("offset").collect()) == [5, 6, 7]
    parse_options({"path": str(root), "subscribe": "t", "startingOffsets": given})   # accepted, as by the JVM

    _drop_and_create_again(spark, root, 8, catalog="recat_progress")
    with pytest.raises(Exception) as refused:
        read().count()
    text = str(refused.value)
    assert "option 'startingOffsets' holds offsets of topic 't' with topic id" in text, text
    assert "deleted and created again" in text, text
    with pytest.raises(ConfigError, match="deleted and created again"):
        parse_options({"path": str(root), "subscribe": "t", "startingOffsets": given})
    # without the ids, the offsets are the caller's word, applied to the new topic
    plain = {k: v for k, v in json.loads(given).items() if k != "@topicIds"}
    assert read_offsets(spark, root, json.dumps(plain)) == [5, 6, 7]


def read_offsets(spark, root, starting: str) -> list[int]:
    return sorted(r.offset for r in spark.read.format("seglog").option("subscribe", "t")
                  .option("startingOffsets", starting).load(str(root)).select("offset").collect())


def _drop_and_create_again_remote(remote, root, n: int, catalog: str) -> None:
    remote.conf.set(f"spark.sql.catalog.{catalog}", "io.seglog.spark.SeglogCatalog")
    remote.conf.set(f"spark.sql.catalog.{catalog}.root", str(root))
    remote.sql(f"DROP TABLE {catalog}.t PURGE").collect()
    _write(remote, root, n, "new")


def test_through_spark_connect_a_topic_created_again_fails_the_query_or_is_read_from_its_earliest(remote, tmp_path):
    """The rule as a Spark Connect client meets it: the server's seglog source decides, the client sees the failure
    naming the topic (and, with failOnDataLoss=false, the new topic's records from its earliest offset)."""
    root = tmp_path / "log"
    _write(remote, root, 5, "old")

    def run(name: str, **options):
        return (_stream_of_t(remote, root, **options).selectExpr("offset", "CAST(value AS STRING) AS value").writeStream
                .format("parquet").option("path", str(tmp_path / f"out-{name}"))
                .option("checkpointLocation", str(tmp_path / f"cp-{name}")).trigger(availableNow=True).start())

    def out(name: str) -> list:
        return sorted((r.offset, r.value) for r in remote.read.parquet(str(tmp_path / f"out-{name}")).collect())

    for name in ("strict", "lenient"):
        q = run(name)
        q.awaitTermination(180)
        assert q.exception() is None, q.exception()
        assert out(name) == [(i, "old") for i in range(5)]
    _drop_and_create_again_remote(remote, root, 8, "recat_connect")

    q = run("strict")
    with pytest.raises(Exception) as failed:
        q.awaitTermination(180)
    text = str(failed.value)
    assert "topic 't' was deleted and created again" in text, text
    assert "partition t-0's checkpointed offset 5 is the old topic's" in text, text
    assert out("strict") == [(i, "old") for i in range(5)]          # nothing of the new topic read

    q = run("lenient", failOnDataLoss="false")
    q.awaitTermination(180)
    assert q.exception() is None, q.exception()
    assert out("lenient") == sorted([(i, "old") for i in range(5)] + [(i, "new") for i in range(8)])


def test_into_the_foreach_batch_sink_a_topic_created_again_fails_the_query_or_is_read_from_its_earliest(spark, tmp_path):
    """A stream of the re-created topic copied by foreachBatch(SegmentLogSink): the restarted query fails before its
    sink writes anything of the new topic; with failOnDataLoss=false the sink receives the new topic whole, each
    record once, after the old one's."""
    from seglog.sink import SegmentLogSink

    root, copies = tmp_path / "log", tmp_path / "copies"
    _write(spark, root, 5, "old")

    def run(name: str, **options):
        return (_stream_of_t(spark, root, **options).select("key", "value").writeStream
                .foreachBatch(SegmentLogSink(str(copies), topic=name, partitions=1))
                .option("checkpointLocation", str(tmp_path / f"cp-{name}")).trigger(availableNow=True).start())

    def copied(name: str) -> list:
        return [bytes(r.value).decode() for r in spark.read.format("seglog").option("subscribe", name)
                .load(str(copies)).orderBy("offset").select("value").collect()]

    for name in ("strict", "lenient"):
        q = run(name)
        q.awaitTermination(180)
        assert q.exception() is None, q.exception()
        assert copied(name) == ["old"] * 5
    _drop_and_create_again(spark, root, 8, catalog="recat_sink")

    q = run("strict")
    with pytest.raises(Exception) as failed:
        q.awaitTermination(180)
    text = str(failed.value)
    assert "topic 't' was deleted and created again" in text, text
    assert copied("strict") == ["old"] * 5                          # the sink wrote nothing of the new topic

    q = run("lenient", failOnDataLoss="false")
    q.awaitTermination(180)
    assert q.exception() is None, q.exception()
    assert copied("lenient") == ["old"] * 5 + ["new"] * 8
