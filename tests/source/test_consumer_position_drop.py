"""A streaming query's consumer position and DROP TABLE ... PURGE (docs/spec.md §9.1): the delete takes the topic's
entry out of every position, and a query still reading the topic never writes it back, so a topic created again
under the name shows no position of the old one. As Kafka's coordinator, which drops a deleted partition's offsets
and refuses an OffsetCommit for it (UNKNOWN_TOPIC_OR_PARTITION), while the query's reader reports the partition
gone as data loss (failOnDataLoss), never a silent skip. Through a real readStream.format("seglog") query whose
foreachBatch runs the DROP between the batch's read and Spark's commit of it."""
from __future__ import annotations

import pytest

from seglog.indexer.consumer_positions import consumers_dir, read_consumer_positions

pytestmark = pytest.mark.spark


def _write(spark, root, topic: str, n: int) -> None:
    (spark.range(n).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST('v' AS BINARY) AS value")
     .write.format("seglog").mode("append").option("topic", topic).option("partitions", "1").save(str(root)))


def _query(spark, root, cp, batch):
    return (spark.readStream.format("seglog").option("subscribe", "t,kept").option("startingOffsets", "earliest")
            .load(str(root)).writeStream.foreachBatch(batch).option("checkpointLocation", str(cp))
            .trigger(availableNow=True).start())


def test_a_query_never_writes_back_the_position_of_a_topic_dropped_under_it(spark, tmp_path):
    root, cp = tmp_path / "log", tmp_path / "cp"
    _write(spark, root, "t", 5)
    _write(spark, root, "kept", 3)
    spark.conf.set("spark.sql.catalog.poscat", "io.seglog.spark.SeglogCatalog")
    spark.conf.set("spark.sql.catalog.poscat.root", str(root))
    seen = []

    def batch(df, batch_id):
        seen.append(sorted((r.topic, r.offset) for r in df.select("topic", "offset").collect()))
        df.sparkSession.sql("DROP TABLE poscat.t PURGE")    # the batch is read; Spark commits it after this

    q = _query(spark, root, cp, batch)
    q.awaitTermination(180)
    assert seen[0] == [("kept", 0), ("kept", 1), ("kept", 2)] + [("t", i) for i in range(5)]
    # the batch's position is recorded for the topic that exists, never for the one deleted under it
    assert {c.query_id: dict(c.offsets) for c in read_consumer_positions(root)} == {q.id: {("kept", 0): 3}}
    # the query restarted from its checkpoint while the topic is gone is told that the offsets of t it had read are
    # gone (failOnDataLoss), rather than reading on as if nothing had happened; nor does it write t back
    q2 = _query(spark, root, cp, lambda df, batch_id: df.count())
    with pytest.raises(Exception, match=r"t-0.*gone"):
        q2.awaitTermination(180)
    assert [dict(c.offsets) for c in read_consumer_positions(root)] == [{("kept", 0): 3}]
    assert sorted(p.name for p in consumers_dir(root).iterdir()) == [f"{q.id}.json"]
    # the name again: the new topic shows no position of the old query
    spark.sql("CREATE TABLE poscat.t TBLPROPERTIES ('partitions' = '1')")
    spark.sql("INSERT INTO poscat.t SELECT CAST('new' AS BINARY) AS key, CAST('x' AS BINARY) AS value")
    assert [dict(c.offsets) for c in read_consumer_positions(root)] == [{("kept", 0): 3}]
