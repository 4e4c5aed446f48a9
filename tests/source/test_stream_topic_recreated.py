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


def _run(spark, root, cp, seen: list, **options) -> object:
    reader = spark.readStream.format("seglog").option("subscribe", "t").option("startingOffsets", "earliest")
    for k, v in options.items():
        reader = reader.option(k, v)

    def batch(df, batch_id):
        seen.extend(sorted((r.offset, bytes(r.value).decode()) for r in df.select("offset", "value").collect()))

    q = (reader.load(str(root)).writeStream.foreachBatch(batch).option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    return q


def _drop_and_create_again(spark, root, n: int) -> None:
    spark.conf.set("spark.sql.catalog.recat", "io.seglog.spark.SeglogCatalog")
    spark.conf.set("spark.sql.catalog.recat.root", str(root))
    spark.sql("DROP TABLE recat.t PURGE")
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
