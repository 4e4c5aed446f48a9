"""Batch headers that claim what cannot be (issue 37 items 3 and 8): a last offset past 2^63 - 1, a record
count of 2^31 - 1 in a compressed batch. Each is a typed fault naming the file and the position, found
before anything computes with the claim or sizes an array by it, through every command a user runs
(verify, describe, recover, dump --print-data, compact) and the sidecar, whose pass goes on with the
other partitions."""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import crc32c
import pytest

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.indexer import Log, Record
from seglog.indexer.topics import create_topic
from tests.cli.helpers import seglog

INT64_MAX = (1 << 63) - 1
OVERFLOW = r"corrupt batch header at position 0: baseOffset 9223372036854775803 \+ lastOffsetDelta 100 is beyond"


def rewrite_first_batch(log_file: Path, *, base=None, last_offset_delta=None, count=None) -> None:
    """Header fields of the batch at position 0 changed, its CRC made right again (the CRC does not
    cover baseOffset; it covers the others): only the claim is wrong."""
    b = bytearray(log_file.read_bytes())
    if base is not None:
        struct.pack_into(">q", b, 0, base)
    if last_offset_delta is not None:
        struct.pack_into(">i", b, 23, last_offset_delta)
    if count is not None:
        struct.pack_into(">i", b, 57, count)
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    log_file.write_bytes(bytes(b))


def overflowing_partition(root: Path, where: str) -> Path:
    """t-0 whose first batch (in the active segment, or in a sealed one) ends past offset 2^63 - 1."""
    with Log.open(root / "t-0") as log:
        log.append([Record(value=b"a" * 10), Record(value=b"b" * 10)])
        if where == "sealed":
            log.roll()
            log.append([Record(value=b"c" * 10)])
    seg = root / "t-0" / f"{0:020d}.log"
    rewrite_first_batch(seg, base=INT64_MAX - 4, last_offset_delta=100)
    return seg


@pytest.mark.parametrize("where", ["active", "sealed"])
def test_last_offset_past_int64_is_a_typed_fault_in_every_command(tmp_path, where):
    seg = overflowing_partition(tmp_path, where)
    verified = seglog("verify", tmp_path)                  # helpers.seglog: never a traceback
    assert verified.returncode == 1
    assert "FAULT t-0" in verified.stdout and str(seg) in verified.stdout
    assert re.search(OVERFLOW, verified.stdout), verified.stdout
    described = seglog("describe", tmp_path)
    if where == "active":          # the open reads the active segment's batches
        assert described.returncode == 1 and str(seg) in described.stdout and "lastOffsetDelta 100" in described.stdout
    else:                          # a sealed segment is described from its files' sizes and indexes
        assert described.returncode == 0, described.stdout + described.stderr
    dumped = seglog("dump", "--print-data", seg)
    assert dumped.returncode == 1 and "position 0: baseOffset 9223372036854775803" in dumped.stdout
    assert "offset: 9223372036854775803" not in dumped.stdout     # no record printed from the bad batch
    recovered = seglog("recover", tmp_path)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    if where == "active":          # recovery drops the bad tail, as Kafka's does, and says where
        assert f"{seg}: dropped a torn or corrupt tail of" in recovered.stdout and "lastOffsetDelta 100" in recovered.stdout
        assert seglog("verify", tmp_path).returncode == 0
    else:                          # below the recovery point: trusted, not scanned; verify still reports it
        assert seglog("verify", tmp_path).returncode == 1


def make_jobs(root: Path) -> Jobs:
    raw = {"root": str(root), "schedule": {"partition.lock.timeout.ms": 100}}
    return Jobs(parse_config(raw, source="test"), Metrics())


def test_sidecar_reports_the_overflowing_batch_and_goes_on(tmp_path):
    """Before: an OverflowError traceback in every pass (the writable open's recovery computed the last
    offset), the partition failed forever. Now recovery names the batch and drops it; the other
    partition's retention runs in the same pass; the next pass is clean."""
    cfg = {"retention.ms": 3_600_000, "segment.bytes": 1024, "segment.ms": 1 << 62}
    create_topic(tmp_path, "t", 2, cfg)
    seg = overflowing_partition(tmp_path, "active")
    old = int(time.time() * 1000) - 7_200_000
    with Log.open(tmp_path / "t-1", cfg) as log:
        for i in range(3):
            log.append([Record(value=bytes(700), timestamp=old + i)])
    jobs = make_jobs(tmp_path)
    first = jobs.full_pass()
    assert first.ok, first.failed
    report = " ".join(map(str, first.done["t-0"]["recovered"]))
    assert str(seg) in report and "position 0" in report and "lastOffsetDelta 100" in report
    assert first.done["t-1"]["deleted"]
    second = jobs.full_pass()
    assert second.ok and "t-0" not in second.done


_BOUNDED = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
jobs = Jobs(parse_config({"root": sys.argv[1], "schedule": {"partition.lock.timeout.ms": 100}}, source="t"), Metrics())
print(json.dumps(jobs.full_pass().summary()))
"""


def compacted_with_impossible_count(root: Path) -> Path:
    """t-0 and t-1 of a compacted gzip topic; t-0's first (sealed) batch claims 2^31 - 1 records."""
    cfg = {"compression.type": "gzip", "cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01,
           "retention.ms": -1, "segment.ms": 1 << 62}
    create_topic(root, "t", 2, cfg)
    for p in (0, 1):
        with Log.open(root / f"t-{p}", cfg) as log:
            for _ in range(3):
                log.append([Record(key=b"k%d" % (i % 10), value=os.urandom(100)) for i in range(100)])
                log.roll()
            log.append([Record(key=b"x", value=b"c")])
    seg = root / "t-0" / f"{0:020d}.log"
    rewrite_first_batch(seg, count=(1 << 31) - 1, last_offset_delta=(1 << 31) - 2)
    return seg


def test_impossible_record_count_is_reported_in_bounded_memory(tmp_path):
    """A compressed batch's count is not bounded by its compressed length: the clean sized its record
    arrays by it (8 arrays of 2^31 entries: numpy's _ArrayMemoryError under a 2 GiB address space).
    Now `seglog compact` and the sidecar name the file; the sidecar cleans the other partition in the
    same pass, and `verify` reports the batch, all within 2 GiB."""
    seg = compacted_with_impossible_count(tmp_path)
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); import runpy, sys; "
    for args in (["verify", str(tmp_path)], ["compact", str(tmp_path), "--topic", "t"]):
        proc = subprocess.run([sys.executable, "-c", limit + f"sys.argv = ['seglog'] + {args!r}; "
                               "runpy.run_module('seglog', run_name='__main__')"],
                              capture_output=True, text=True, timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1 and "Traceback" not in out and "MemoryError" not in out, out
        assert str(seg) in out and "record count 2147483647 cannot fit" in out, out
    proc = subprocess.run([sys.executable, "-c", _BOUNDED, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [f.split(":")[0] for f in summary["failed"]] == ["t-0"], summary
    assert summary["failed"][0].startswith(("t-0: CorruptRecordError", "t-0: CompactionError")), summary
    assert str(seg) in summary["failed"][0], summary
    assert summary["changed"] >= 1                     # t-1 cleaned in the same pass
