"""`df.write.format("seglog")` from Spark Connect (issue 25): the write's commit runs on the server's
driver JVM, so a Connect client (no sparkContext, no py4j) writes exactly once with txnAppId/txnVersion,
and a bad option comes back to the client named, with nothing written."""
from __future__ import annotations

import pytest

from tests.committed import committed_keys
from seglog.indexer.commit_log import CommitLog

pytestmark = pytest.mark.spark


@pytest.mark.smoke
def test_idempotent_batch_writes_from_a_connect_client(remote, tmp_path):
    root = tmp_path / "log"
    df = remote.range(60).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS key", "CAST('v' AS BINARY) AS value")

    def write(version, frame=df):
        (frame.write.format("seglog").mode("append").option("topic", "ev").option("partitions", "2")
         .option("txnAppId", "connect-app").option("txnVersion", str(version)).save(str(root)))

    write(0)
    write(0)                                                   # a re-run: skipped
    write(1, df.selectExpr("CAST(CONCAT('b', CAST(key AS STRING)) AS BINARY) AS key", "value"))
    assert committed_keys(root, "ev") == sorted([str(i).encode() for i in range(60)] + [f"b{i}".encode() for i in range(60)])
    assert CommitLog(root, "ev").last_batch("connect-app") == 1
    read = remote.read.format("seglog").option("topic", "ev").load(str(root))
    assert read.count() == 120
    with pytest.raises(Exception, match="option 'txnVersion' needs option 'txnAppId'"):
        df.write.format("seglog").mode("append").option("topic", "ev").option("txnVersion", "3").save(str(root))
    assert CommitLog(root, "ev").last_batch("connect-app") == 1


@pytest.mark.smoke
def test_foreach_batch_writes_each_micro_batch_once_from_a_connect_client(remote, tmp_path):
    import json
    import os

    src, root, ckpt = tmp_path / "src", tmp_path / "log", tmp_path / "ckpt"
    src.mkdir()
    for f in range(3):
        path = src / f"part-{f}.json"
        path.write_text("".join(json.dumps({"k": f"f{f}-{j}"}) + "\n" for j in range(10)))
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))
    target = str(root)

    def write_batch(batch_df, batch_id):
        # a foreachBatch function as a Connect user writes it (nested: the server's worker gets it by value)
        (batch_df.write.format("seglog").mode("append").option("topic", "fb").option("partitions", "2")
         .option("txnAppId", "fb-app").option("txnVersion", str(batch_id)).save(target))

    q = (remote.readStream.schema("k string").option("maxFilesPerTrigger", 1).json(str(src))
         .selectExpr("CAST(k AS BINARY) AS key", "CAST('v' AS BINARY) AS value")
         .writeStream.foreachBatch(write_batch).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert committed_keys(root, "fb") == sorted(f"f{f}-{j}".encode() for f in range(3) for j in range(10))
    assert CommitLog(root, "fb").last_batch("fb-app") == 2
