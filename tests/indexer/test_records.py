"""The reference batch codec (indexer.codec.records): byte layout, varints, CRC, scan and decode."""
from __future__ import annotations

import mmap
import struct

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.errors import CorruptRecordError, InvalidRecordError
from seglog.indexer.codec.records import (
    BATCH_HEADER_SIZE, CREATE_TIME, LOG_APPEND_TIME, LOG_OVERHEAD, MAGIC, NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK, BatchHeader, Record, check_crc, decode_batch, encode_batch, parse_header,
    read_varint, scan_batches, varint_size, write_varint)

T0 = 1_700_000_000_000


# ----------------------------------------------------------------------------- strategies

blobs = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=100, max_size=400))
header_st = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20)))
timestamps = st.one_of(st.just(NO_TIMESTAMP), st.integers(0, 2**62),
                       st.integers(T0 - 10**6, T0 + 10**6))
record_st = st.builds(Record, key=blobs, value=blobs, timestamp=timestamps,
                      headers=st.lists(header_st, max_size=3).map(tuple))


def _expected(base_offset, records, append_time=None):
    """What reading back must give: offsets filled, timestamps as stored (or the append time)."""
    out = []
    for i, r in enumerate(records):
        ts = append_time if append_time is not None else r.timestamp
        out.append(Record(r.key, r.value, ts, tuple(r.headers), base_offset + i,
                          LOG_APPEND_TIME if append_time is not None else CREATE_TIME))
    return out


# ----------------------------------------------------------------------------- format

def test_constants():
    assert (MAGIC, BATCH_HEADER_SIZE, LOG_OVERHEAD, TIMESTAMP_TYPE_MASK) == (2, 61, 12, 0x08)


@pytest.mark.parametrize("n, encoded", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"),
    (300, b"\xd8\x04"), (-(2**31), b"\xff\xff\xff\xff\x0f"),
    (2**63 - 1, b"\xfe" + b"\xff" * 8 + b"\x01"), (-(2**63), b"\xff" * 9 + b"\x01"),
])
def test_zigzag_varints_known_bytes(n, encoded):
    out = bytearray()
    write_varint(out, n)
    assert bytes(out) == encoded
    assert varint_size(n) == len(encoded)
    assert read_varint(encoded, 0, len(encoded), 10) == (n, len(encoded))


def test_varint_too_long_or_torn_is_corrupt():
    with pytest.raises(CorruptRecordError, match="longer than 5"):
        read_varint(b"\x80" * 6, 0, 6)
    with pytest.raises(CorruptRecordError, match="past the end"):
        read_varint(b"\x80\x80", 0, 2)


def test_crc32c_is_castagnoli():
    # the standard check value of CRC-32C
    assert crc32c.crc32c(b"123456789") == 0xE3069283


def test_golden_batch_bytes_by_hand():
    """One record (key b'k', value b'v', no headers) at offset 7, laid out field by field."""
    got = encode_batch(7, [Record(b"k", b"v", T0)])
    # record: attributes 0, tsDelta 0, offsetDelta 0, key len 1 (zigzag 2) 'k', value len 1 'v', 0 headers
    body = bytes([0x00, 0x00, 0x00, 0x02]) + b"k" + bytes([0x02]) + b"v" + bytes([0x00])
    record = bytes([len(body) << 1]) + body
    tail = struct.pack(">hiqqqhii", 0, 0, T0, T0, -1, -1, -1, 1) + record
    crc = crc32c.crc32c(tail)
    want = struct.pack(">qiibI", 7, 49 + len(record), 0, 2, crc) + tail
    assert got == want
    assert len(got) == BATCH_HEADER_SIZE + len(record)


def test_golden_headers_and_nulls_by_hand():
    got = encode_batch(0, [Record(None, b"", T0, (("é", None), ("a", b"xy")))])
    body = (b"\x00\x00\x00" + b"\x01" + b"\x00" + b"\x04"        # attrs, ts, off, key null, value empty, 2 headers
            + b"\x04" + "é".encode() + b"\x01"                   # key 'é' (2 bytes), value null
            + b"\x02a" + b"\x04xy")
    assert got[BATCH_HEADER_SIZE:] == bytes([len(body) << 1]) + body


def test_header_fields_and_properties():
    recs = [Record(b"a", b"1", T0 + 5), Record(b"b", b"2", T0), Record(None, b"3", T0 + 9)]
    raw = encode_batch(100, recs)
    h = parse_header(raw, 0)
    assert isinstance(h, BatchHeader)
    assert (h.base_offset, h.magic, h.partition_leader_epoch, h.attributes) == (100, 2, 0, 0)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (-1, -1, -1)
    assert (h.record_count, h.last_offset_delta, h.last_offset, h.next_offset) == (3, 2, 102, 103)
    assert h.base_timestamp == T0 + 5          # the first record's, not the smallest
    assert h.max_timestamp == T0 + 9
    assert h.size == len(raw) == h.batch_length + 12
    assert h.timestamp_type == CREATE_TIME
    assert check_crc(raw, 0, h)


def test_no_timestamps_give_max_timestamp_minus_one():
    raw = encode_batch(0, [Record(None, b"x", -1), Record(None, b"y", -1)])
    h = parse_header(raw, 0)
    assert (h.base_timestamp, h.max_timestamp) == (-1, -1)
    assert [r.timestamp for r in decode_batch(raw, 0)] == [-1, -1]


def test_mixed_missing_timestamps_round_trip():
    recs = [Record(None, b"x", -1), Record(None, b"y", T0), Record(None, b"z", -1)]
    raw = encode_batch(0, recs)
    assert parse_header(raw, 0).max_timestamp == T0
    assert [r.timestamp for r in decode_batch(raw, 0)] == [-1, T0, -1]


def test_log_append_time():
    recs = [Record(b"k", b"v", T0 - 99), Record(b"k", b"w", None)]
    raw = encode_batch(5, recs, append_time_ms=T0)
    h = parse_header(raw, 0)
    assert h.attributes & TIMESTAMP_TYPE_MASK and h.timestamp_type == LOG_APPEND_TIME
    assert h.base_timestamp == h.max_timestamp == T0
    # every timestampDelta is 0: the records are as if their timestamps were the append time
    assert raw[BATCH_HEADER_SIZE:] == encode_batch(5, [Record(b"k", b"v", T0),
                                                       Record(b"k", b"w", T0)])[BATCH_HEADER_SIZE:]
    got = decode_batch(raw, 0)
    assert [(r.timestamp, r.timestamp_type, r.offset) for r in got] == [(T0, 1, 5), (T0, 1, 6)]


def test_log_append_time_decode_takes_max_timestamp():
    """A LogAppendTime batch whose records carry other deltas (as a broker rewrite leaves them)."""
    raw = bytearray(encode_batch(0, [Record(None, b"a", T0 - 50), Record(None, b"b", T0 - 10)]))
    struct.pack_into(">h", raw, 21, TIMESTAMP_TYPE_MASK)
    struct.pack_into(">q", raw, 35, T0)
    assert [r.timestamp for r in decode_batch(bytes(raw), 0)] == [T0, T0]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_st, min_size=1, max_size=12), st.integers(0, 2**40),
       st.one_of(st.none(), st.integers(0, 2**50)))
def test_round_trip(records, base, append_time):
    raw = encode_batch(base, records, append_time_ms=append_time)
    h = parse_header(raw, 0)
    assert h.size == len(raw) and check_crc(raw, 0, h)
    assert decode_batch(raw, 0) == _expected(base, records, append_time)
    want_max = append_time if append_time is not None else max(r.timestamp for r in records)
    assert h.max_timestamp == want_max


def test_encode_refuses_bad_records():
    with pytest.raises(InvalidRecordError, match="record 1: timestamp is None"):
        encode_batch(0, [Record(None, b"a", 1), Record(None, b"b", None)])
    with pytest.raises(InvalidRecordError, match="record 0: timestamp -2"):
        encode_batch(0, [Record(None, b"a", -2)])
    with pytest.raises(InvalidRecordError, match="record 1: value must be bytes"):
        encode_batch(0, [Record(None, b"a", 1), Record(None, "text", 1)])
    with pytest.raises(InvalidRecordError, match="record 0: key must be bytes"):
        encode_batch(0, [Record(5, b"a", 1)])
    with pytest.raises(InvalidRecordError, match="header"):
        encode_batch(0, [Record(None, b"a", 1, ((b"k", b"v"),))])
    with pytest.raises(InvalidRecordError, match="at least one record"):
        encode_batch(0, [])
    with pytest.raises(InvalidRecordError, match="base offset"):
        encode_batch(-1, [Record(None, b"a", 1)])


def test_record_is_a_slotted_value():
    r = Record(b"k", b"v", 1, (("h", None),))
    assert r == Record(b"k", b"v", 1, (("h", None),), -1, 0)
    assert r != Record(b"k", b"v", 2, (("h", None),))
    with pytest.raises(AttributeError):
        r.other = 1
    assert Record() == Record(None, None, None, (), -1, 0)


# ----------------------------------------------------------------------------- header checks

def _batch(base=0, n=2, ts=T0):
    return encode_batch(base, [Record(None, b"v%d" % i, ts + i) for i in range(n)])


@pytest.mark.parametrize("field_pos, fmt, value, message", [
    (16, ">b", 1, "magic 1"),
    (8, ">i", 48, "batchLength 48"),
    (57, ">i", -1, "negative record count"),
    (23, ">i", 0, "lastOffsetDelta 0 below"),
])
def test_parse_header_refuses_impossible_headers(field_pos, fmt, value, message):
    raw = bytearray(_batch())
    struct.pack_into(fmt, raw, field_pos, value)
    with pytest.raises(CorruptRecordError, match=f"position 0: {message}"):
        parse_header(bytes(raw), 0)


def test_parse_header_accepts_compacted_gap():
    raw = bytearray(_batch(n=2))
    struct.pack_into(">i", raw, 23, 5)      # lastOffsetDelta above recordCount - 1: compaction
    h = parse_header(bytes(raw), 0)
    assert (h.last_offset, h.next_offset) == (5, 6)


def test_parse_header_torn():
    raw = _batch()
    with pytest.raises(CorruptRecordError, match="torn batch header at position 0"):
        parse_header(raw[:60], 0)


def test_parse_header_on_every_buffer_kind(tmp_path):
    raw = b"junk" + _batch(base=9)
    path = tmp_path / "x.log"
    path.write_bytes(raw)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for buf in (raw, memoryview(raw), bytearray(raw), np.frombuffer(raw, np.uint8), mm):
            h = parse_header(buf, 4)
            assert h.base_offset == 9 and check_crc(buf, 4, h)
            assert [r.value for r in decode_batch(buf, 4)] == [b"v0", b"v1"]
            res = scan_batches(buf, 4, len(raw))
            assert res.error is None and res.valid_end == len(raw)
            del res, h, buf


# ----------------------------------------------------------------------------- scan

def _log(n_batches=5):
    parts, pos, positions = [], 0, []
    for b in range(n_batches):
        raw = _batch(base=b * 3, n=3, ts=T0 + b)
        positions.append(pos)
        parts.append(raw)
        pos += len(raw)
    return b"".join(parts), positions


def test_scan_clean_log():
    data, positions = _log()
    res = scan_batches(data, 0, len(data))
    assert res.error is None and res.valid_end == len(data)
    assert res.positions.dtype == np.int64 and res.positions.tolist() == positions
    assert res.base_offsets.tolist() == [0, 3, 6, 9, 12]
    assert res.last_offsets.tolist() == [2, 5, 8, 11, 14]
    assert res.record_counts.tolist() == [3] * 5
    assert res.max_timestamps.tolist() == [T0 + b + 2 for b in range(5)]
    assert res.sizes.sum() == len(data)
    assert res.next_offset == 15


def test_scan_stops_at_torn_tail_at_every_cut():
    data, positions = _log(3)
    for cut in range(len(data)):
        res = scan_batches(data[:cut], 0, cut)
        good = [p for p in positions[1:] + [len(data)] if p <= cut]
        want_end = good[-1] if good else 0
        assert res.valid_end == want_end, cut
        assert (res.error is None) == (cut == want_end), cut
        if res.error:
            assert f"position {want_end}" in res.error
            assert ("torn batch header" in res.error) == (cut - want_end < 61)
            assert ("past the end" in res.error) == (cut - want_end >= 61)


def test_scan_respects_end_before_buffer_end():
    data, positions = _log(3)
    res = scan_batches(data, 0, positions[2])
    assert res.error is None and res.valid_end == positions[2] and len(res.headers) == 2


def test_scan_finds_every_flipped_byte():
    data, positions = _log(2)
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x10
        res = scan_batches(bytes(bad), 0, len(bad), prev_last_offset=-1, dense=True,
                           min_leader_epoch=0, max_leader_epoch=0)
        assert res.error is not None, f"flip at byte {i} not detected"
        hit = max(p for p in positions if p <= i)
        assert res.valid_end == hit


def test_scan_crc_mismatch_message_and_opt_out():
    data, positions = _log(2)
    bad = bytearray(data)
    bad[positions[1] + 70] ^= 1                # inside the second batch's records
    res = scan_batches(bytes(bad), 0, len(bad))
    assert res.valid_end == positions[1]
    assert "CRC mismatch" in res.error and f"position {positions[1]}" in res.error
    assert scan_batches(bytes(bad), 0, len(bad), check_crc=False).error is None


def test_scan_refuses_non_increasing_offsets():
    a, b = _batch(base=10, n=3), _batch(base=12, n=1)
    res = scan_batches(a + b, 0, len(a + b))
    assert res.valid_end == len(a) and "does not increase" in res.error
    res = scan_batches(a, 0, len(a), prev_last_offset=10)
    assert res.valid_end == 0 and "previous last offset 10" in res.error
    gap = _batch(base=100, n=1)                 # gaps are fine (compaction), unless dense
    assert scan_batches(a + gap, 0, len(a + gap)).error is None
    res = scan_batches(a + gap, 0, len(a + gap), dense=True)
    assert res.valid_end == len(a) and "leaves a gap" in res.error


def test_scan_bad_magic_and_short_length():
    data, positions = _log(2)
    bad = bytearray(data)
    bad[positions[1] + 16] = 1
    res = scan_batches(bytes(bad), 0, len(bad))
    assert "magic 1" in res.error and res.valid_end == positions[1]


# ----------------------------------------------------------------------------- decode errors

def test_decode_refuses_bad_record_structure():
    raw = bytearray(encode_batch(0, [Record(b"key", b"value", T0)]))
    raw[BATCH_HEADER_SIZE + 4] = 0x40          # key length 32: past the record end
    with pytest.raises(CorruptRecordError, match="key length 32 is out of bounds"):
        decode_batch(bytes(raw), 0)
    raw = bytearray(encode_batch(0, [Record(b"key", b"value", T0)]))
    struct.pack_into(">i", raw, 57, 2)         # claims 2 records, holds 1
    struct.pack_into(">i", raw, 23, 1)
    with pytest.raises(CorruptRecordError, match="record 1"):
        decode_batch(bytes(raw), 0)


def test_decode_names_compressed_batches_that_do_not_decompress():
    raw = bytearray(_batch())
    struct.pack_into(">h", raw, 21, 1)         # claims gzip, holds plain records
    with pytest.raises(CorruptRecordError, match="position 0: its gzip records do not decompress"):
        decode_batch(bytes(raw), 0)
    struct.pack_into(">h", raw, 21, 6)         # no such codec
    with pytest.raises(CorruptRecordError, match="codec 6, which Kafka does not define"):
        decode_batch(bytes(raw), 0)
