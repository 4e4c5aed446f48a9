"""The sink writing on after `seglog import` of a real Kafka broker's folder: staged segments go in by
rename (as in seglog's own folders), every new batch carries the partition's current leader epoch
(patched at publish, outside the CRC), and Kafka's leader-epoch-checkpoint stays as the broker left it."""
from __future__ import annotations

import random
import subprocess
import sys

import pytest

from seglog.indexer.leader_epochs import LEADER_EPOCH_CHECKPOINT, checkpoint_max_epoch
from seglog.indexer.log import Log
from seglog.indexer.codec.records import scan_batches
from seglog.indexer.topics import load_topic
from seglog.sink.segment_log_sink import SegmentLogSink
from tests.indexer.test_kafka_broker_read import broker_records
from tests.kafka_clients import consume_all, create_topic, produce

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _epochs(folder):
    data = b"".join(f.read_bytes() for f in sorted(folder.glob("*.log")))
    scan = scan_batches(data, 0)
    assert scan.error is None, scan.error
    return [(h.base_offset, h.partition_leader_epoch) for h in scan.headers]


def test_sink_renames_into_an_imported_folder_with_the_brokers_epoch(kafka_broker, spark, tmp_path):
    from tests.kafka_tools import dump_log_segments

    rng = random.Random(13)
    create_topic(kafka_broker, "sink-imp")
    produce(kafka_broker, "sink-imp", broker_records(rng, 150), compression="lz4")
    kafka_broker.restart()                           # a new leader epoch
    produce(kafka_broker, "sink-imp", broker_records(rng, 40), compression="lz4")
    expected = [(r.offset, r.key, r.value) for r in consume_all(kafka_broker, "sink-imp")]
    root = tmp_path / "root"
    res = subprocess.run([sys.executable, "-m", "seglog", "import", str(kafka_broker.partition_dir("sink-imp")),
                          str(root), "--topic", "imp"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    folder = root / "imp-0"
    checkpoint = (folder / LEADER_EPOCH_CHECKPOINT).read_bytes()
    epoch = checkpoint_max_epoch(folder)
    assert epoch > 0
    imported_end = len(expected)
    cfg = load_topic(root, "imp").config

    rows = [(b"k%d" % i, b"sink value %d" % i) for i in range(3000)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), "key binary, value binary")
    sink = SegmentLogSink(str(root), writer_id="w0", topic="imp", rename_min_bytes=1)
    segments = len(list(folder.glob("*.log")))
    sink(df, 0)
    assert len(list(folder.glob("*.log"))) >= segments + 2   # both tasks' staged segments renamed in
    # a micro-batch after it takes the copy path: the same epoch, no new segment
    segments = len(list(folder.glob("*.log")))
    small = SegmentLogSink(str(root), writer_id="w0", topic="imp")
    small(df.limit(5), 1)
    assert len(list(folder.glob("*.log"))) == segments

    epochs = _epochs(folder)
    new = [e for base, e in epochs if base >= imported_end]
    assert new and set(new) == {epoch}
    assert [e for _, e in epochs] == sorted(e for _, e in epochs)       # never decreasing
    assert (folder / LEADER_EPOCH_CHECKPOINT).read_bytes() == checkpoint
    with Log.open(folder, cfg) as log:
        assert log.verify() == []
        got = list(log.read())
        log.roll()                                   # sealed, for --verify-index-only
        log.flush()
    assert [(r.offset, r.key, r.value) for r in got[:imported_end]] == expected
    assert [(r.key, r.value) for r in got[imported_end:imported_end + 3000]] == rows   # task order = row order
    assert {(r.key, r.value) for r in got[imported_end + 3000:]} <= set(rows)
    assert [r.offset for r in got] == list(range(imported_end + 3005))
    logs = sorted(str(p) for p in folder.glob("*.log"))
    out = dump_log_segments(["--deep-iteration", "--files", ",".join(logs)])
    assert "isvalid: true" in out and "isvalid: false" not in out, out[-2000:]
    idx = sorted(str(p) for p in folder.glob("*.index")) + sorted(str(p) for p in folder.glob("*.timeindex"))
    out = dump_log_segments(["--verify-index-only", "--deep-iteration", "--files", ",".join(idx)])
    assert "mismatch" not in out.lower(), out[-2000:]
