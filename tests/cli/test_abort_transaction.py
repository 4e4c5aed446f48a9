"""Transactions left open (issue 23, item 16), on constructed partition folders: `seglog import` refuses a
folder with an open transaction (naming producer id, epoch and first offset) unless
`--abort-open-transactions`; `seglog abort-transaction` appends the ABORT control batch Kafka's
coordinator writes, under the partition's lock, and commits it; read_committed readers then see what is
appended after it. Refusals change no file. The real broker's case is in tests/indexer/test_kafka_import.py."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import crc32c
import numpy as np
import pytest

from seglog.indexer import Log, LogRoot, Record
from seglog.indexer.codec.batch_layout import (ATTRIBUTES_OFFSET, CONTROL_FLAG_MASK, CRC_OFFSET, PRODUCER_ID_OFFSET,
                                         TRANSACTIONAL_FLAG_MASK)
from seglog.indexer.codec.columns import EncodedBatches
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.codec.records import CREATE_TIME, decode_batch, encode_batch, scan_batches
from seglog.indexer.topics import create_topic
from tests.cli.helpers import seglog, digest

T0 = 1_700_000_000_000


def txn_batch(base: int, values: list[bytes], pid: int, epoch: int) -> bytes:
    """A transactional data batch of producer `pid`/`epoch`, as a transactional producer sends it."""
    b = bytearray(encode_batch(base, [Record(key=b"k", value=v, timestamp=T0 + i) for i, v in enumerate(values)]))
    struct.pack_into(">h", b, ATTRIBUTES_OFFSET, struct.unpack_from(">h", b, ATTRIBUTES_OFFSET)[0]
                     | TRANSACTIONAL_FLAG_MASK)
    struct.pack_into(">qhi", b, PRODUCER_ID_OFFSET, pid, epoch, 0)
    struct.pack_into(">I", b, CRC_OFFSET, crc32c.crc32c(bytes(b[ATTRIBUTES_OFFSET:])))
    return bytes(b)


def append_raw(log: Log, data: bytes) -> None:
    """Batches encoded here appended through the Log's own path (indexes, roll rule)."""
    scan = scan_batches(data, 0)
    assert scan.error is None, scan.error
    enc = EncodedBatches(memoryview(data), np.append(scan.positions, len(data)).astype(np.int64), scan.base_offsets,
                         scan.last_offsets, np.array([h.base_timestamp for h in scan.headers], dtype=np.int64),
                         scan.max_timestamps, scan.record_counts, int(scan.record_counts.sum()), CREATE_TIME, data)
    log.append_encoded(enc)


def write_partition(path: Path, steps) -> int:
    """`steps`: ("plain", [values]) or ("txn", [values], pid, epoch); returns the log end."""
    with Log.open(path, outside_commit_log=True) as log:
        for step in steps:
            if step[0] == "plain":
                log.append([Record(key=b"p", value=v, timestamp=T0) for v in step[1]])
            else:
                append_raw(log, txn_batch(log.log_end_offset, step[1], step[2], step[3]))
        log.flush()
        return log.log_end_offset


STEPS = [("plain", [b"p0", b"p1"]), ("txn", [b"a0", b"a1"], 7, 3), ("plain", [b"p2"]),
         ("txn", [b"b0"], 9, 0), ("txn", [b"a2"], 7, 3), ("plain", [b"p3"])]
# offsets: p0 0, p1 1, a0 2, a1 3, p2 4, b0 5, a2 6, p3 7


@pytest.fixture
def root(tmp_path) -> Path:
    """A seglog root whose partition holds two open transactions (producer 7 from offset 2, producer 9
    from offset 5), everything committed."""
    root = tmp_path / "root"
    create_topic(root, "events", 1, {})
    end = write_partition(root / "events-0", STEPS)
    CommitLog(root, "events").commit("w", 0, {0: end})
    return root


def committed_values(root: Path, topic: str = "events", isolation: str = "read_committed") -> list[bytes]:
    end = CommitLog(root, topic).end_offsets()[0]
    with LogRoot(root).open_log(topic, 0, readonly=True) as log:
        return [r.value for r in log.read(0, end, isolation_level=isolation)]


def sink_like_append(root: Path, topic: str, values: list[bytes]) -> None:
    """What the sink does for a batch: append under the lock, fsync, then commit the new end."""
    with LogRoot(root).open_log(topic, 0, outside_commit_log=True) as log:
        log.append([Record(key=b"s", value=v, timestamp=T0) for v in values])
        log.flush()
        end = log.log_end_offset
    CommitLog(root, topic).commit("query", 1, {0: end})


def markers(path: Path) -> list[tuple]:
    """(offset, attributes, producer id, epoch, base sequence, records, control key, value) of every
    control batch of the partition."""
    out = []
    for f in sorted(path.glob("*.log")):
        data = f.read_bytes()
        scan = scan_batches(data, 0)
        for pos, h in zip(scan.positions.tolist(), scan.headers):
            if h.attributes & CONTROL_FLAG_MASK:
                (rec,) = decode_batch(data, pos)
                out.append((h.base_offset, h.attributes, h.producer_id, h.producer_epoch, h.base_sequence,
                            h.record_count, rec.key, rec.value))
    return out


# ----------------------------------------------------------------------------- the problem

def test_an_open_transaction_hides_everything_after_it_from_read_committed(root):
    sink_like_append(root, "events", [b"s0"])
    assert committed_values(root) == [b"p0", b"p1"]            # stops at offset 2 for good
    assert b"s0" in committed_values(root, isolation="read_uncommitted")


# ----------------------------------------------------------------------------- seglog import

def _broker_copy(root: Path, tmp_path: Path) -> Path:
    src = tmp_path / "broker" / "events-0"
    shutil.copytree(root / "events-0", src)
    return src


def test_import_refuses_a_folder_with_an_open_transaction(root, tmp_path):
    src = _broker_copy(root, tmp_path)
    dest = tmp_path / "dest"
    dest.mkdir()
    before, src_before = digest(dest), digest(src)
    res = seglog("import", src, dest, "--topic", "t")
    assert res.returncode == 1, res.stdout
    for needle in ("producer id 7 epoch 3", "open since offset 2", "producer id 9 epoch 0", "open since offset 5",
                   "nothing was imported", "--abort-open-transactions"):
        assert needle in res.stderr, res.stderr
    assert digest(dest) == before and digest(src) == src_before


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_import_with_abort_open_transactions_ends_them(root, tmp_path, link):
    src = _broker_copy(root, tmp_path)
    src_before = digest(src)
    dest = tmp_path / "dest"
    res = seglog("import", src, dest, "--topic", "t", "--abort-open-transactions", *(["--link"] if link else []))
    assert res.returncode == 0, res.stderr
    assert "aborted the transaction of producer id 7 epoch 3 (open since offset 2" in res.stdout
    assert "ABORT marker at offset 8" in res.stdout and "ABORT marker at offset 9" in res.stdout, res.stdout
    assert digest(src) == src_before                              # the broker's files untouched, linked or not
    assert CommitLog(dest, "t").end_offsets() == {0: 10}
    assert committed_values(dest, "t") == [b"p0", b"p1", b"p2", b"p3"]
    sink_like_append(dest, "t", [b"s0", b"s1"])
    assert committed_values(dest, "t") == [b"p0", b"p1", b"p2", b"p3", b"s0", b"s1"]
    from seglog.indexer.transactions import open_transactions
    with LogRoot(dest).open_log("t", 0, readonly=True) as log:
        assert open_transactions(log) == []
    assert seglog("verify", dest).returncode == 0


def test_an_import_without_open_transactions_is_unchanged(tmp_path):
    src = tmp_path / "broker" / "events-0"
    end = write_partition(src, [("plain", [b"p0"]), ("txn", [b"a0"], 7, 3)] + [("plain", [b"p1"])])
    with Log.open(src, outside_commit_log=True) as log:                        # the producer's own ABORT: the transaction ended
        from seglog.indexer.transactions import abort_transactions, open_transactions
        abort_transactions(log, open_transactions(log))
        log.flush()
        end = log.log_end_offset
    dest = tmp_path / "dest"
    res = seglog("import", src, dest, "--topic", "t")
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 1, res.stdout
    assert CommitLog(dest, "t").end_offsets() == {0: end}


# ----------------------------------------------------------------------------- seglog abort-transaction

def test_abort_transaction_appends_kafkas_abort_marker_and_commits_it(root):
    res = seglog("abort-transaction", root, "--topic", "events", "--partition", "0", "--producer-id", "7")
    assert res.returncode == 0, res.stderr
    assert "ABORT marker at offset 8" in res.stdout and "committed end now 9" in res.stdout, res.stdout
    # MemoryRecords.withEndTransactionMarker: transactional + control, uncompressed, CreateTime, the
    # transaction's producer id and epoch, no sequence, one record: key (0, ABORT=0), value (0, epoch 0)
    assert markers(root / "events-0") == [(8, TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK, 7, 3, -1, 1,
                                           struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 0))]
    assert CommitLog(root, "events").end_offsets() == {0: 9}
    assert committed_values(root) == [b"p0", b"p1", b"p2"]           # producer 9 still open, from offset 5
    res = seglog("abort-transaction", root, "--topic", "events", "--partition", "0", "--start-offset", "5")
    assert res.returncode == 0 and "producer id 9 epoch 0" in res.stdout, res.stderr
    sink_like_append(root, "events", [b"s0"])
    assert committed_values(root) == [b"p0", b"p1", b"p2", b"p3", b"s0"]
    assert "endTxnMarker: ABORT coordinatorEpoch: 0" in seglog("dump", *sorted((root / "events-0").glob("*.log")),
                                                             "--deep-iteration").stdout
    assert seglog("verify", root).returncode == 0


def test_abort_transaction_all_open_with_an_epoch_and_coordinator_epoch(root):
    res = seglog("abort-transaction", root, "--topic", "events", "--partition", "0", "--all-open",
                 "--coordinator-epoch", "4")
    assert res.returncode == 0, res.stderr
    got = markers(root / "events-0")
    assert [(m[0], m[2], m[3], m[7]) for m in got] == [(8, 7, 3, struct.pack(">hi", 0, 4)),
                                                        (9, 9, 0, struct.pack(">hi", 0, 4))]
    assert committed_values(root) == [b"p0", b"p1", b"p2", b"p3"]
    res = seglog("abort-transaction", root, "--topic", "events", "--partition", "0", "--all-open")
    assert res.returncode == 0 and "no open transaction" in res.stdout


def test_a_later_producer_epoch_is_taken(root):
    res = seglog("abort-transaction", root, "--topic", "events", "--partition", "0", "--producer-id", "7",
                 "--producer-epoch", "5")
    assert res.returncode == 0, res.stderr
    assert [(m[2], m[3]) for m in markers(root / "events-0")] == [(7, 5)]


REFUSED = [
    (["--producer-id", "8"], 1, "no open transaction of producer id 8"),
    (["--start-offset", "3"], 1, "starting at offset 3"),
    (["--producer-id", "7", "--producer-epoch", "2"], 1, "producer epoch 2"),
    (["--producer-id", "7", "--producer-epoch", "40000"], 2, "--producer-epoch"),
    (["--producer-id", "-7"], 2, "--producer-id"),
    (["--producer-epoch", "3", "--all-open"], 2, "--producer-epoch"),
    (["--producer-id", "7", "--all-open"], 2, "not allowed with"),
    ([], 2, "one of the arguments"),
    (["--all-open", "--coordinator-epoch", "-1"], 2, "--coordinator-epoch"),
]


@pytest.mark.parametrize("extra, rc, needle", REFUSED, ids=[" ".join(r[0]) or "none" for r in REFUSED])
def test_refusals_change_nothing(root, extra, rc, needle):
    before = digest(root)
    res = seglog("abort-transaction", root, "--topic", "events", "--partition", "0", *extra)
    assert res.returncode == rc and needle in res.stderr, (res.returncode, res.stderr)
    assert digest(root) == before


def test_records_past_the_committed_end_are_never_committed_by_an_abort(root):
    """A sink batch written but not committed (or to be rolled back): committing the marker after it
    would publish it. Refused, naming the remedy; nothing changes."""
    with LogRoot(root).open_log("events", 0, outside_commit_log=True) as log:
        log.append([Record(key=b"x", value=b"uncommitted", timestamp=T0)])
        log.flush()
    before = digest(root)
    res = seglog("abort-transaction", root, "--topic", "events", "--partition", "0", "--all-open")
    assert res.returncode == 1 and "committed end is 8" in res.stderr and "seglog truncate" in res.stderr
    assert digest(root) == before
    assert seglog("truncate", root, "--topic", "events", "--partition", "0", "--to-offset", "8", "--yes").returncode == 0
    assert seglog("abort-transaction", root, "--topic", "events", "--partition", "0", "--all-open").returncode == 0
    assert committed_values(root) == [b"p0", b"p1", b"p2", b"p3"]


def test_import_refuses_a_topic_colliding_with_one_of_the_root(tmp_path):
    """Issue 37 item 11 through the CLI: `seglog import ... --topic a_b` into a root holding 'a.b' is refused before
    anything is copied (Kafka's '.'/'_' collision), naming 'a.b'; the root is as it was."""
    src = tmp_path / "broker" / "events-0"
    write_partition(src, [("plain", [b"p0", b"p1"])])
    dest = tmp_path / "dest"
    create_topic(dest, "a.b", 1)
    before = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    res = seglog("import", src, dest, "--topic", "a_b")
    assert res.returncode != 0 and "collides with existing topic 'a.b'" in res.stderr, res.stderr
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == before
