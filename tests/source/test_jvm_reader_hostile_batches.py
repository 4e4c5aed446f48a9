"""The JVM reader (format("seglog")) on hostile batches under a valid CRC (issue 37 items 1, 2, 7): a 16 KB zstd
batch inflating to 512 MiB, and a zstd batch claiming 2^31-1 records. A read and a pushed count each fail with a
CorruptLogException naming the file and the position, and the driver lives on (before: "OutOfMemoryError:
Requested array size exceeds VM limit" in Kafka's DefaultRecordBatch.iterator, then Spark's uncaught-exception
handler ended the JVM; the pushed count of the 2^31-1 file summed its claimed count)."""
from __future__ import annotations

import pytest

from tests.indexer.bombs import bomb, huge_count
from tests.indexer.test_decompression_bombs import topic

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("kind", ["bomb", "count"])
def test_a_hostile_batch_fails_the_read_not_the_driver(spark, tmp_path, kind):
    batch = bomb(12) if kind == "bomb" else huge_count(12)
    topic(tmp_path, "t", batch, sealed=kind == "bomb")
    # the bomb follows the first segment's 12 records; the count opens the active segment at offset 12
    where = f"{0:020d}.log: a corrupt batch at position 195" if kind == "bomb" else f"{12:020d}.log"
    says = "more than 67108864 bytes" if kind == "bomb" else "record count 2147483647 cannot fit"
    df = spark.read.format("seglog").option("topic", "t").load(str(tmp_path))
    for action in (lambda: df.select("offset", "value").collect(), df.count):
        with pytest.raises(Exception, match="CorruptLogException") as caught:
            action()
        assert where in str(caught.value) and says in str(caught.value), str(caught.value)[:3000]
    assert spark.range(3).count() == 3                      # the driver lives on
