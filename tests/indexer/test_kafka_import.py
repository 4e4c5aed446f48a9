"""`seglog import` (indexer/kafka_import.py): a real Kafka broker's partition folders become a seglog
topic without being rewritten, and seglog's readers (API, CLI, Spark's seglog source) return what a
Kafka consumer returns. A refused import changes nothing; appends to an imported partition continue
the broker's leader epoch. A broker folder missing an index is imported with the index rebuilt; one
with a transaction left open is refused unless `--abort-open-transactions`, whose ABORT marker is the
one the broker writes (issue 23)."""
from __future__ import annotations

import filecmp
import random
import shutil
import subprocess
import sys
import time

import pytest

from seglog.indexer import LogRoot
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.codec.batch_layout import CONTROL_FLAG_MASK, TRANSACTIONAL_FLAG_MASK
from seglog.indexer.codec.records import Record, decode_batch, scan_batches
from seglog.indexer.topics import load_topic
from tests.indexer.test_kafka_broker_read import broker_records, write_transactions
from tests.kafka_clients import consume_all, create_topic, produce, producer

pytestmark = pytest.mark.kafka


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seglog", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def snapshot(root) -> dict[str, bytes]:
    """Every file under `root`, by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _rows(records):
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in records]


@pytest.fixture(scope="module")
def broker_data(kafka_broker):
    rng = random.Random(5)
    create_topic(kafka_broker, "imp-a", partitions=2)
    for p, codec in ((0, "zstd"), (1, "none")):
        produce(kafka_broker, "imp-a", broker_records(rng, 200), partition=p, compression=codec)
    kafka_broker.restart()                       # epochs go up: appends after the import must continue them
    produce(kafka_broker, "imp-a", broker_records(rng, 50), partition=0, compression="snappy")
    create_topic(kafka_broker, "imp-txn")
    write_transactions(kafka_broker, "imp-txn", rng)
    return kafka_broker


def test_import_a_broker_log_dir_topic(broker_data, tmp_path):
    root = tmp_path / "root"
    res = _cli("import", broker_data.log_dir, root, "--topic", "imp-a")
    assert res.returncode == 0, res.stderr
    assert [line.split(":")[:2] for line in res.stdout.splitlines()] == [["imp-a", "0"], ["imp-a", "1"]]
    meta = load_topic(root, "imp-a")
    assert meta.partitions == 2 and meta.config["retention.ms"] == -1
    ends = CommitLog(root, "imp-a").end_offsets()
    for p in (0, 1):
        expected = _rows(consume_all(broker_data, "imp-a", partition=p))
        with LogRoot(root).open_log("imp-a", p, readonly=True) as log:
            assert _rows(log.read()) == expected
            assert ends[p] == log.log_end_offset
        # byte for byte: every file of the broker's folder, nothing rewritten
        src, dest = broker_data.partition_dir("imp-a", p), root / f"imp-a-{p}"
        logs = sorted(f.name for f in src.glob("*.log"))
        assert logs and filecmp.cmpfiles(src, dest, logs, shallow=False)[0] == logs
    res = _cli("offsets-for-times", root, "--topic", "imp-a", "--time", "earliest")
    assert res.stdout.split() == ["imp-a:0:0", "imp-a:1:0"]


def test_import_one_partition_folder_under_a_new_name_reads_committed(broker_data, tmp_path):
    root = tmp_path / "root"
    res = _cli("import", broker_data.partition_dir("imp-txn"), root, "--topic", "replay")
    assert res.returncode == 0, res.stderr
    for isolation in ("read_committed", "read_uncommitted"):
        expected = _rows(consume_all(broker_data, "imp-txn", isolation=isolation))
        with LogRoot(root).open_log("replay", 0, readonly=True) as log:
            assert _rows(log.read(isolation_level=isolation)) == expected


def test_a_refused_import_changes_nothing(broker_data, tmp_path):
    root = tmp_path / "root"
    assert _cli("import", broker_data.partition_dir("imp-a", 1), root, "--topic", "x").returncode == 0
    before = snapshot(root)
    again = _cli("import", broker_data.partition_dir("imp-a", 1), root, "--topic", "x")
    assert again.returncode == 1 and "already exists" in again.stderr
    # a damaged copy of a broker folder: one flipped byte inside a record
    bad = tmp_path / "copy" / "y-0"
    bad.mkdir(parents=True)
    for f in broker_data.partition_dir("imp-a", 1).iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    log_file = next(bad.glob("*.log"))
    data = bytearray(log_file.read_bytes())
    data[200] ^= 0x40
    log_file.write_bytes(bytes(data))
    res = _cli("import", bad, root)
    assert res.returncode == 1 and "CRC mismatch" in res.stderr and "nothing was imported" in res.stderr
    assert snapshot(root) == before


def test_appends_after_an_import_continue_the_leader_epoch(broker_data, tmp_path):
    root = tmp_path / "root"
    assert _cli("import", broker_data.partition_dir("imp-a", 0), root, "--topic", "grow").returncode == 0
    expected = _rows(consume_all(broker_data, "imp-a", partition=0))
    with LogRoot(root).open_log("grow", 0, outside_commit_log=True) as log:
        end = log.log_end_offset
        log.append([Record(b"k", b"after the import", 1_700_000_000_000)])
        log.flush()
    with LogRoot(root).open_log("grow", 0, readonly=True) as log:
        got = _rows(log.read())
    assert got[:-1] == expected and got[-1][0] == end and got[-1][3] == b"after the import"
    data = b"".join(f.read_bytes() for f in sorted((root / "grow-0").glob("*.log")))
    epochs = [h.partition_leader_epoch for h in scan_batches(data, 0).headers]
    assert epochs == sorted(epochs) and epochs[-1] == max(epochs) > 0


@pytest.mark.spark
def test_spark_replays_an_imported_topic(broker_data, tmp_path, spark):
    root = tmp_path / "root"
    assert _cli("import", broker_data.partition_dir("imp-txn"), root, "--topic", "txn").returncode == 0
    for isolation in ("read_committed", "read_uncommitted"):
        expected = consume_all(broker_data, "imp-txn", isolation=isolation)
        rows = (spark.read.format("seglog").option("topic", "txn").option("kafka.isolation.level", isolation)
                .load(str(root)).select("offset", "key", "value").orderBy("offset").collect())
        assert [(r["offset"], r["key"], r["value"]) for r in rows] == \
            [(r.offset, r.key, r.value) for r in expected]


def test_a_broker_folder_missing_an_index_is_imported_with_the_index_rebuilt(broker_data, tmp_path):
    """As the broker itself rebuilds an index it does not find when it loads a segment (issue 23)."""
    src = tmp_path / "copy" / "imp-a-0"
    shutil.copytree(broker_data.partition_dir("imp-a", 0), src)
    first = min(src.glob("*.log"))
    gone = first.with_suffix(".index")
    gone.unlink()
    root = tmp_path / "root"
    res = _cli("import", src, root, "--topic", "idx")
    assert res.returncode == 0, res.stderr
    assert f"{gone} was missing" in res.stdout
    assert not gone.exists()                                   # the source is left as it was
    with LogRoot(root).open_log("idx", 0, readonly=True) as log:
        assert _rows(log.read()) == _rows(consume_all(broker_data, "imp-a", partition=0))
    assert _cli("verify", root).returncode == 0


def _control_batches(folder):
    out = []
    for f in sorted(folder.glob("*.log")):
        data = f.read_bytes()
        scan = scan_batches(data, 0)
        out += [(h, decode_batch(data, pos)[0]) for pos, h in zip(scan.positions.tolist(), scan.headers)
                if h.attributes & CONTROL_FLAG_MASK]
    return out


def test_a_transaction_the_broker_left_open_is_refused_then_aborted_as_the_broker_aborts_it(broker_data, tmp_path):
    """A producer's transaction with batches on disk and no marker (the broker's coordinator would abort it
    after transaction.timeout.ms): `seglog import` names it and refuses; with --abort-open-transactions the
    import appends the ABORT marker, which is the control batch the broker writes when the transaction is
    aborted, and read_committed readers then read what a Kafka consumer reads, and what is appended later."""
    broker, topic = broker_data, "imp-open"
    rng = random.Random(17)
    create_topic(broker, topic)
    produce(broker, topic, broker_records(rng, 20))
    tx = producer(broker, transactional_id=f"{topic}-tx", **{"transaction.timeout.ms": 900_000})
    tx.init_transactions(60)
    tx.begin_transaction()
    try:
        for r in broker_records(rng, 15):
            tx.produce(topic, partition=0, key=r["key"], value=r["value"], timestamp=r["timestamp"])
        assert tx.flush(30) == 0
        folder = broker.partition_dir(topic)
        batches = [h for f in sorted(folder.glob("*.log")) for h in scan_batches(f.read_bytes(), 0).headers]
        open_batches = [h for h in batches if h.attributes & TRANSACTIONAL_FLAG_MASK]
        pid, epoch, first = open_batches[0].producer_id, open_batches[0].producer_epoch, open_batches[0].base_offset
        end = batches[-1].last_offset + 1

        root = tmp_path / "root"
        res = _cli("import", folder, root, "--topic", "open")
        assert res.returncode == 1, res.stdout
        assert f"producer id {pid} epoch {epoch} (open since offset {first}" in res.stderr, res.stderr
        assert not root.exists() or snapshot(root) == {}
        res = _cli("import", folder, root, "--topic", "open", "--abort-open-transactions")
        assert res.returncode == 0, res.stderr
        assert f"ABORT marker at offset {end}" in res.stdout, res.stdout
    finally:
        tx.abort_transaction(60)                              # the broker ends it too, for the comparison

    deadline = time.monotonic() + 60          # the coordinator writes the marker after EndTxn returns
    while not _control_batches(broker.partition_dir(topic)) and time.monotonic() < deadline:
        time.sleep(0.2)
    ((broker_marker, broker_rec),) = _control_batches(broker.partition_dir(topic))
    ((ours, our_rec),) = _control_batches(root / "open-0")
    assert ours.base_offset == broker_marker.base_offset == end
    for field in ("attributes", "producer_id", "base_sequence", "record_count", "last_offset_delta",
                  "partition_leader_epoch", "magic"):
        assert getattr(ours, field) == getattr(broker_marker, field), field
    assert ours.producer_epoch == epoch <= broker_marker.producer_epoch   # a v2 coordinator bumps the epoch
    assert our_rec.key == broker_rec.key                     # control record key: version 0, ABORT
    assert our_rec.value[:2] == broker_rec.value[:2]         # EndTransactionMarker version
    for isolation in ("read_committed", "read_uncommitted"):
        expected = _rows(consume_all(broker, topic, isolation=isolation))
        with LogRoot(root).open_log("open", 0, readonly=True) as log:
            assert _rows(log.read(isolation_level=isolation)) == expected
    with LogRoot(root).open_log("open", 0, outside_commit_log=True) as log:           # what the sink appends afterwards
        log.append([Record(b"k", b"after the abort", 1_700_000_000_000)])
        log.flush()
        new_end = log.log_end_offset
    CommitLog(root, "open").commit("query", 0, {0: new_end})
    with LogRoot(root).open_log("open", 0, readonly=True) as log:
        got = _rows(log.read(0, new_end, isolation_level="read_committed"))
    assert got[-1][3] == b"after the abort" and got[:-1] == _rows(consume_all(broker, topic))
    assert _cli("verify", root).returncode == 0
