"""Every Kafka codec both ways (indexer/codec/compression.py): a compressed batch decodes to exactly the
records of its uncompressed twin through every reader (the reference decoder, the numpy and compiled
Arrow paths, the lookup by timestamp), and bad compressed bytes are a CorruptRecordError, never a crash."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from seglog.errors import CorruptRecordError
from seglog.indexer.codec import compression
from seglog.indexer.codec.columns import decode_to_arrow
from seglog.indexer.codec.records import (Record, decode_batch, encode_batch, first_offset_at_or_after, parse_header,
                                    scan_batches)

CODECS = ["gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000

records_st = st.lists(
    st.builds(Record, st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=300)),
              st.integers(T0 - 10_000, T0 + 10_000),
              st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))), max_size=2)
              .map(tuple)),
    min_size=1, max_size=40)


def _rows(recs):
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs]


def _arrow_rows(batch):
    d = batch.to_pydict()
    return [(o, t, k, v, tuple((h["key"], h["value"]) for h in hs))
            for o, t, k, v, hs in zip(d["offset"], d["timestamp"], d["key"], d["value"], d["headers"])]


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=records_st, base=st.integers(0, 1000))
def test_every_reader_sees_the_uncompressed_records(codec, recs, base, monkeypatch):
    plain = encode_batch(base, recs)
    packed = compression.deflate_batch(plain, compression.CODEC_IDS[codec])
    h = parse_header(packed, 0)
    assert h.compression_codec == compression.CODEC_IDS[codec]
    scan = scan_batches(packed, 0)                 # a valid batch: its CRC holds
    assert scan.error is None and len(scan.headers) == 1
    expected = _rows(decode_batch(plain, 0))
    assert _rows(decode_batch(packed, 0)) == expected
    data = plain + packed + plain                  # mixed: plain, compressed, plain again (offsets unchecked)
    positions = np.array([0, len(plain), len(plain) + len(packed)])
    for no_numba in ("0", "1"):          # the env var is read on every call: both paths, each example
        monkeypatch.setenv("SEGLOG_NO_NUMBA", no_numba)
        got = _arrow_rows(decode_to_arrow(data, positions[1:2], start_offset=base, end_offset=base + len(recs)))
        assert got == expected
        got = _arrow_rows(decode_to_arrow(data, positions, start_offset=base, end_offset=base + len(recs)))
        assert got == expected * 3
        # lookups: every timestamp of the batch and its neighbours, against the plain twin
        for ts in {r.timestamp + d for r in recs for d in (-1, 0, 1)}:
            for lower in (base, base + len(recs) // 2):
                assert first_offset_at_or_after(packed, 0, h, ts, lower) == \
                    first_offset_at_or_after(plain, 0, parse_header(plain, 0), ts, lower)


def test_snappy_reads_raw_blocks_as_librdkafka_writes_them():
    import cramjam

    plain = encode_batch(5, [Record(b"k", b"v" * 100, T0)])
    body = bytes(cramjam.snappy.compress_raw(plain[61:]))
    raw = bytearray(plain[:61]) + body
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    struct.pack_into(">h", raw, 21, 2)
    assert _rows(decode_batch(bytes(raw), 0)) == _rows(decode_batch(plain, 0))


@pytest.mark.parametrize("codec", CODECS)
def test_mutated_compressed_bytes_are_corrupt_record_errors(codec):
    plain = encode_batch(0, [Record(b"key%d" % i, os.urandom(50), T0 + i) for i in range(30)])
    packed = bytearray(compression.deflate_batch(plain, compression.CODEC_IDS[codec]))
    rng = np.random.default_rng(7)
    for _ in range(200):
        bad = bytearray(packed)
        for i in rng.integers(61, len(bad), size=3):
            bad[i] = int(rng.integers(0, 256))
        try:
            decode_batch(bytes(bad), 0)
        except CorruptRecordError:
            pass


# ----------------------------------------------------------------------------- writing: compression.type

@pytest.mark.parametrize("codec", CODECS)
def test_compression_type_writes_batches_kafka_reads(tmp_path, codec):
    """A topic with compression.type=<codec> writes batches with that codec; seglog reads them back
    exactly, and Kafka's own DumpLogSegments decompresses every record with Kafka's codecs."""
    from seglog.indexer.log import Log
    from tests.indexer.test_kafka_format import kafka_jars, parse_dump   # noqa: F401  (the jar fixture)
    from tests.kafka_tools import dump_log_segments

    rng = np.random.default_rng(3)
    recs = [Record(None if i % 5 == 0 else b"k%d" % i, b"v" * (i % 7) + rng.bytes(i % 40), T0 + (i * 37) % 500,
                   (("h", b"x"),) if i % 3 == 0 else ()) for i in range(3000)]
    path = tmp_path / "z-0"
    with Log.open(path, {"compression.type": codec, "segment.bytes": 16 * 1024}) as log:
        for k in range(0, len(recs), 700):
            log.append(recs[k:k + 700])
        got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in log.read()]
        assert [(o, r.timestamp, r.key, r.value, r.headers) for o, r in enumerate(recs)] == got
        lookups = {t: log.offset_for_timestamp(t) for t in range(T0 - 1, T0 + 502, 7)}
    assert lookups == {t: next((o for o, r in enumerate(recs) if r.timestamp >= t), None) for t in lookups}
    logs = sorted(path.glob("*.log"))
    assert len(logs) > 3
    headers = [h for f in logs for h in scan_batches(f.read_bytes(), 0).headers]
    assert {h.compression_codec for h in headers} == {compression.CODEC_IDS[codec]}
    out = dump_log_segments(["--deep-iteration", "--print-data-log", "--files", ",".join(map(str, logs))])
    files, problems = parse_dump(out)
    assert not problems, problems[:5]
    dumped = [r for f in files.values() for b in f.batches for r in b.records]
    assert [(r["offset"], r["timestamp"], r["value_size"]) for r in dumped] == \
        [(o, r.timestamp, len(r.value)) for o, r in enumerate(recs)]
    assert all(f"compresscodec: {codec}" in line for f in files.values() for line in f.lines
               if line.startswith("baseOffset"))


@pytest.mark.parametrize("codec", CODECS)
def test_verify_flags_what_read_cannot_decode(tmp_path, codec):
    """A compressed batch with a valid CRC whose records are broken inside the compression: `verify`
    reports it (it decodes every batch), and a read refuses it; neither crashes."""
    import subprocess
    import sys

    from seglog.indexer.log import Log
    from tests.indexer.test_fuzz_kernels import damage_inside_compression

    path = tmp_path / "v-0"
    with Log.open(path, {"compression.type": codec}) as log:
        log.append([Record(b"k%d" % i, b"value %d" % i, T0 + i) for i in range(50)])
    seg = path / "00000000000000000000.log"
    ok = subprocess.run([sys.executable, "-m", "seglog", "verify", str(tmp_path)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    seg.write_bytes(damage_inside_compression(seg.read_bytes(), 0, 3, 0xFF))   # inside the compression: a record field
    assert scan_batches(seg.read_bytes(), 0).error is None                        # the CRC still holds
    bad = subprocess.run([sys.executable, "-m", "seglog", "verify", str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 1 and "decompressed" in bad.stdout, bad.stdout + bad.stderr
    with Log.open(path, readonly=True) as log:
        with pytest.raises(CorruptRecordError):
            list(log.read())
        with pytest.raises(CorruptRecordError):
            list(log.read_arrow(0))
