"""The bulk codec (indexer.codec.columns) held byte for byte to the reference codec (indexer.codec.records)."""
from __future__ import annotations

import mmap

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.indexer.codec.columns import (
    ARROW_SCHEMA, HEADER_TYPE, EncodedBatches, decode_to_arrow, encode_columns,
    record_sizes_upper_bound)
from seglog.errors import CorruptRecordError, InvalidRecordError
from seglog.indexer.codec.records import (
    BATCH_HEADER_SIZE, LOG_APPEND_TIME, Record, decode_batch, encode_batch, parse_header,
    scan_batches)

T0 = 1_700_000_000_000

blobs = st.one_of(st.none(), st.just(b""), st.binary(max_size=30), st.binary(min_size=120, max_size=300))
header_st = st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=12)))
ts_st = st.one_of(st.just(-1), st.integers(T0 - 5000, T0 + 5000), st.integers(0, 2**62),
                  st.just(2**63 - 2))
record_st = st.builds(Record, key=blobs, value=blobs, timestamp=ts_st,
                      headers=st.lists(header_st, max_size=3).map(tuple))


def _columns(records, with_headers=True, key_type=pa.binary()):
    values = pa.array([r.value for r in records], pa.binary())
    keys = pa.array([r.key for r in records], key_type)
    ts = np.array([r.timestamp for r in records], dtype=np.int64)
    headers = None
    if with_headers:
        headers = pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records], HEADER_TYPE)
    return values, keys, ts, headers


def _reference(base, records, counts, append_time=None):
    """encode_batch over the same grouping, concatenated: what encode_columns must equal."""
    out, i = [], 0
    for c in counts:
        out.append(encode_batch(base + i, records[i:i + c], append_time_ms=append_time))
        i += c
    assert i == len(records)
    return b"".join(out)


def _check_metadata(enc: EncodedBatches, base, records, max_batch_bytes, append_time=None):
    n = len(records)
    assert enc.num_records == n == int(enc.record_counts.sum())
    assert enc.positions[0] == 0 and enc.positions[-1] == len(enc.data)
    sizes = enc.sizes
    # each batch within the budget unless it holds one record alone
    assert np.all((sizes <= max_batch_bytes) | (enc.record_counts == 1))
    assert enc.base_offsets[0] == base
    assert np.array_equal(enc.base_offsets[1:], enc.last_offsets[:-1] + 1)
    assert enc.last_offsets[-1] == base + n - 1
    res = scan_batches(enc.data, 0, len(enc.data))
    assert res.error is None
    assert res.positions.tolist() == enc.positions[:-1].tolist()
    assert res.max_timestamps.tolist() == enc.max_timestamps.tolist()
    starts = np.concatenate([[0], np.cumsum(enc.record_counts)[:-1]])
    if append_time is None:
        assert enc.first_timestamps.tolist() == [records[s].timestamp for s in starts]
    else:
        assert set(enc.first_timestamps.tolist()) == {append_time}


# ----------------------------------------------------------------------------- encode: the model

@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_st, min_size=1, max_size=40), st.integers(0, 2**40),
       st.sampled_from([1, 70, 200, 600, 4000, 1 << 20]), st.booleans(),
       st.one_of(st.none(), st.integers(0, 2**45)))
def test_encode_columns_equals_reference(records, base, max_batch_bytes, with_headers, append_time):
    if not with_headers:
        records = [Record(r.key, r.value, r.timestamp) for r in records]
    values, keys, ts, headers = _columns(records, with_headers)
    enc = encode_columns(base, values, keys, ts, headers, max_batch_bytes=max_batch_bytes,
                         append_time_ms=append_time)
    assert bytes(enc.data) == _reference(base, records, enc.record_counts.tolist(), append_time)
    _check_metadata(enc, base, records, max_batch_bytes, append_time)
    # reading back the batches gives the records
    got = [r for p in enc.positions[:-1] for r in decode_batch(enc.data, int(p))]
    assert [(r.key, r.value, r.headers, r.offset) for r in got] == \
        [(r.key, r.value, tuple(r.headers), base + i) for i, r in enumerate(records)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=300), st.integers(100, 5000))
def test_batches_are_packed_reasonably(lengths, max_batch_bytes):
    """The greedy grouping fills batches: two neighbours could not have been one batch by much."""
    ts = np.full(len(lengths), T0, dtype=np.int64)
    values = [b"x" * n for n in lengths]
    enc = encode_columns(0, values, None, ts, max_batch_bytes=max_batch_bytes)
    assert bytes(enc.data) == _reference(0, [Record(None, v, T0) for v in values],
                                         enc.record_counts.tolist())
    sizes = enc.sizes
    # a batch plus the next batch's first record would not have fitted (allowing the bound's slack:
    # at most 5 bytes of offset delta and 1 of length varint per record)
    for b in range(len(sizes) - 1):
        first_next = len(encode_batch(0, [Record(None, values[int(enc.record_counts[:b + 1].sum())], T0)]))
        slack = 6 * int(enc.record_counts[b] + 1)
        assert sizes[b] + first_next - BATCH_HEADER_SIZE + slack > max_batch_bytes


def test_single_large_record_is_its_own_batch():
    values = [b"a", b"b" * 5000, b"c"]
    enc = encode_columns(3, values, timestamps=np.full(3, T0), max_batch_bytes=1000)
    assert enc.record_counts.tolist() == [1, 1, 1]
    assert enc.sizes[1] > 1000
    assert enc.base_offsets.tolist() == [3, 4, 5]


def test_one_batch_when_it_fits():
    n = 1000
    enc = encode_columns(0, [b"v"] * n, timestamps=np.arange(n) + T0, max_batch_bytes=1 << 20)
    assert enc.num_batches == 1 and enc.record_counts.tolist() == [n]
    assert enc.max_timestamps.tolist() == [T0 + n - 1] and enc.first_timestamps.tolist() == [T0]


def test_timestamps_backwards_ties_and_none():
    ts = np.array([T0, T0 - 10, T0 - 10, -1, T0 + 2**40, -1], dtype=np.int64)
    recs = [Record(b"k", b"v%d" % i, int(t)) for i, t in enumerate(ts)]
    enc = encode_columns(0, [r.value for r in recs], [r.key for r in recs], ts, max_batch_bytes=1 << 20)
    assert bytes(enc.data) == encode_batch(0, recs)
    assert enc.max_timestamps.tolist() == [T0 + 2**40]
    allnone = encode_columns(0, [b"a", b"b"], timestamps=np.array([-1, -1]), max_batch_bytes=1000)
    assert allnone.max_timestamps.tolist() == [-1] and allnone.first_timestamps.tolist() == [-1]


def test_log_append_time_columns():
    enc = encode_columns(10, [b"a", b"b"], timestamps=None, max_batch_bytes=1000, append_time_ms=T0)
    assert enc.timestamp_type == LOG_APPEND_TIME
    assert bytes(enc.data) == encode_batch(10, [Record(None, b"a", 1), Record(None, b"b", 2)],
                                           append_time_ms=T0)


# ----------------------------------------------------------------------------- encode: input kinds

def test_input_kinds_give_the_same_bytes():
    vals = [b"one", None, b"", "thrée".encode()]
    keys = [None, b"k", b"kk", b""]
    ts = np.array([T0, T0 + 1, -1, T0], dtype=np.int64)
    want = bytes(encode_columns(0, vals, keys, ts, max_batch_bytes=1 << 20).data)
    assert want == encode_batch(0, [Record(k, v, int(t)) for k, v, t in zip(keys, vals, ts)])
    as_str = pa.array([None if v is None else v.decode() for v in vals], pa.string())
    kinds = [
        (pa.array(vals, pa.binary()), pa.array(keys, pa.large_binary())),
        (as_str, pa.array([None if k is None else k.decode() for k in keys], pa.large_string())),
        (pa.chunked_array([pa.array(vals[:1], pa.binary()), pa.array(vals[1:], pa.binary())]),
         pa.chunked_array([pa.array(keys, pa.binary())])),
        (pa.array([b"pad"] + vals, pa.binary()).slice(1), pa.array([None, b"x"] + keys).slice(2)),
    ]
    for v, k in kinds:
        assert bytes(encode_columns(0, v, k, ts, max_batch_bytes=1 << 20).data) == want
    for tsa in (pa.array(ts, pa.int64()), pa.chunked_array([pa.array(ts[:2]), pa.array(ts[2:])])):
        assert bytes(encode_columns(0, vals, keys, tsa, max_batch_bytes=1 << 20).data) == want


@pytest.mark.parametrize("unit, scale", [("s", 1), ("ms", 1000), ("us", 1_000_000), ("ns", 1_000_000_000)])
def test_timestamp_arrays_in_any_unit(unit, scale):
    secs = np.array([1_700_000_000, 1_700_000_001], dtype=np.int64)
    arr = pa.array(secs * scale, pa.timestamp(unit, tz="UTC"))
    enc = encode_columns(0, [b"a", b"b"], timestamps=arr, max_batch_bytes=1000)
    assert enc.first_timestamps.tolist() == [1_700_000_000_000]
    assert enc.max_timestamps.tolist() == [1_700_000_001_000]


def test_null_headers_rows_mean_no_headers():
    headers = pa.array([None, [{"key": "a", "value": None}], [], None], HEADER_TYPE)
    enc = encode_columns(0, [b"1", b"2", b"3", b"4"], timestamps=np.full(4, T0), headers=headers,
                         max_batch_bytes=1 << 20)
    recs = [Record(None, b"1", T0), Record(None, b"2", T0, (("a", None),)), Record(None, b"3", T0),
            Record(None, b"4", T0)]
    assert bytes(enc.data) == encode_batch(0, recs)
    sliced = pa.array([[{"key": "z", "value": b"z"}]] + headers.to_pylist(), HEADER_TYPE).slice(1)
    enc2 = encode_columns(0, [b"1", b"2", b"3", b"4"], timestamps=np.full(4, T0), headers=sliced,
                          max_batch_bytes=1 << 20)
    assert bytes(enc2.data) == bytes(enc.data)


def test_bad_inputs_name_column_and_row():
    ts = np.full(3, T0)
    with pytest.raises(InvalidRecordError, match=r"'values' row 2: expected bytes or None, got str"):
        encode_columns(0, [b"a", None, "c"], timestamps=ts, max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match=r"'keys' row 0: expected bytes or None, got int"):
        encode_columns(0, [b"a"] * 3, [1, b"b", b"c"], timestamps=ts, max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match=r"'values' has Arrow type int64"):
        encode_columns(0, pa.array([1, 2, 3]), timestamps=ts, max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match=r"'keys' has 2 rows, values has 3"):
        encode_columns(0, [b"a"] * 3, [b"a"] * 2, timestamps=ts, max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match=r"'timestamps' row 1: timestamp -5"):
        encode_columns(0, [b"a"] * 3, timestamps=np.array([T0, -5, T0]), max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match=r"'timestamps' row 2: null"):
        encode_columns(0, [b"a"] * 3, timestamps=pa.array([T0, T0, None]), max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match=r"'timestamps' is required"):
        encode_columns(0, [b"a"] * 3, max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match=r"'timestamps' has 2 rows"):
        encode_columns(0, [b"a"] * 3, timestamps=np.array([T0, T0]), max_batch_bytes=100)
    bad_h = pa.array([[], [{"key": "a", "value": b"1"}, {"key": None, "value": b"2"}], []], HEADER_TYPE)
    with pytest.raises(InvalidRecordError, match=r"'headers' row 1: header 1 has a null key"):
        encode_columns(0, [b"a"] * 3, timestamps=ts, headers=bad_h, max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match=r"'headers' has Arrow type"):
        encode_columns(0, [b"a"] * 3, timestamps=ts, headers=pa.array([1, 2, 3]), max_batch_bytes=100)
    with pytest.raises(InvalidRecordError, match="max_batch_bytes"):
        encode_columns(0, [b"a"] * 3, timestamps=ts, max_batch_bytes=0)


def test_empty_input():
    enc = encode_columns(5, [], timestamps=np.zeros(0, np.int64), max_batch_bytes=100)
    assert enc.num_records == 0 and enc.num_batches == 0 and len(enc.data) == 0
    assert enc.positions.tolist() == [0]


def test_slice_for_a_segment_roll():
    ts = np.full(10, T0)
    enc = encode_columns(0, [b"x" * 50] * 10, timestamps=ts, max_batch_bytes=250)
    assert enc.num_batches > 3
    part = enc.slice(1, 3)
    lo, hi = int(enc.positions[1]), int(enc.positions[3])
    assert bytes(part.data) == bytes(enc.data)[lo:hi]
    assert part.positions.tolist() == (enc.positions[1:4] - lo).tolist()
    assert part.base_offsets.tolist() == enc.base_offsets[1:3].tolist()
    assert part.num_records == int(enc.record_counts[1:3].sum())
    assert scan_batches(part.data, 0, len(part.data)).error is None
    with pytest.raises(IndexError):
        enc.slice(2, enc.num_batches + 1)


def test_record_sizes_upper_bound_holds():
    vals = [b"x" * n for n in (0, 10, 200, 5000)]
    ts = np.array([T0, -1, T0 + 10**9, 0])
    bound = record_sizes_upper_bound(vals, None, ts)
    enc = encode_columns(0, vals, None, ts, max_batch_bytes=1)
    assert np.all(enc.sizes - BATCH_HEADER_SIZE <= bound)


# ----------------------------------------------------------------------------- decode to Arrow

def _expected_rows(records, base, start, end, append_time=None):
    rows = []
    for i, r in enumerate(records):
        off = base + i
        if start <= off < end:
            rows.append({"key": r.key, "value": r.value, "offset": off,
                         "timestamp": r.timestamp if append_time is None else append_time,
                         "timestampType": 0 if append_time is None else 1,
                         "headers": [{"key": k, "value": v} for k, v in r.headers]})
    return rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_st, min_size=1, max_size=40), st.integers(0, 1000),
       st.sampled_from([1, 200, 800, 1 << 20]), st.one_of(st.none(), st.integers(0, 2**45)),
       st.data())
def test_decode_to_arrow_equals_reference(records, base, max_batch_bytes, append_time, data):
    values, keys, ts, headers = _columns(records)
    enc = encode_columns(base, values, keys, ts, headers, max_batch_bytes=max_batch_bytes,
                         append_time_ms=append_time)
    n = len(records)
    start = data.draw(st.integers(base - 2, base + n + 1), label="start")
    end = data.draw(st.integers(start, base + n + 2), label="end")
    prefix = data.draw(st.binary(max_size=5), label="prefix")      # batches need not start at 0
    buf = prefix + bytes(enc.data)
    positions = enc.positions[:-1] + len(prefix)
    got = decode_to_arrow(buf, positions, start_offset=start, end_offset=end)
    assert got.schema == ARROW_SCHEMA
    assert got.to_pylist() == _expected_rows(records, base, start, end, append_time)
    # and the reference decoder agrees on the same bytes
    ref = [r for p in positions for r in decode_batch(buf, int(p)) if start <= r.offset < end]
    assert [(r.key, r.value, r.offset, r.timestamp, r.timestamp_type) for r in ref] == \
        [(x["key"], x["value"], x["offset"], x["timestamp"], x["timestampType"]) for x in got.to_pylist()]


def test_decode_to_arrow_over_mmap_and_numpy(tmp_path):
    recs = [Record(b"k%d" % i, b"v" * i, T0 + i, (("h", b"%d" % i),)) for i in range(50)]
    values, keys, ts, headers = _columns(recs)
    enc = encode_columns(0, values, keys, ts, headers, max_batch_bytes=300)
    path = tmp_path / "0.log"
    path.write_bytes(bytes(enc.data))
    want = _expected_rows(recs, 0, 10, 40)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        got = decode_to_arrow(mm, enc.positions[:-1], start_offset=10, end_offset=40)
        assert got.to_pylist() == want
        arr = np.frombuffer(mm, dtype=np.uint8)
        assert decode_to_arrow(arr, enc.positions[:-1], start_offset=10, end_offset=40).to_pylist() == want
        del arr, got
        mm.close()                                 # no Arrow buffer still points into the map


def test_decode_to_arrow_empty_results():
    enc = encode_columns(0, [b"a", b"b"], timestamps=np.full(2, T0), max_batch_bytes=1000)
    got = decode_to_arrow(enc.data, enc.positions[:-1], start_offset=5, end_offset=9)
    assert got.num_rows == 0 and got.schema == ARROW_SCHEMA
    assert decode_to_arrow(b"", [], start_offset=0, end_offset=9).num_rows == 0


def test_decode_to_arrow_refuses_corrupt_records():
    recs = [Record(b"key", b"value", T0), Record(None, b"v2", T0)]
    good = encode_batch(0, recs)
    bad = bytearray(good)
    bad[BATCH_HEADER_SIZE + 4] = 0x40              # key length 32: past the record end
    with pytest.raises(CorruptRecordError, match="record 0 of the batch at position 0"):
        decode_to_arrow(bytes(bad), [0], start_offset=0, end_offset=9)
    bad = bytearray(good)
    bad[BATCH_HEADER_SIZE] = 0x7e                  # first record's length 63: past the batch
    with pytest.raises(CorruptRecordError, match="do not end at the batch end"):
        decode_to_arrow(bytes(bad), [0], start_offset=0, end_offset=9)
    with pytest.raises(CorruptRecordError, match="runs past the end"):
        decode_to_arrow(good[:-1], [0], start_offset=0, end_offset=9)
    with pytest.raises(CorruptRecordError, match="magic"):
        decode_to_arrow(b"\x00" * 70, [0], start_offset=0, end_offset=9)


def test_decode_to_arrow_skips_batches_out_of_range_without_reading_them():
    a = encode_batch(0, [Record(None, b"a", T0)])
    b = encode_batch(1, [Record(None, b"b", T0)])
    broken = bytearray(a)
    broken[BATCH_HEADER_SIZE] = 0x7e               # batch 0's records are garbage ...
    got = decode_to_arrow(bytes(broken) + b, [0, len(a)], start_offset=1, end_offset=2)
    assert got.column("value").to_pylist() == [b"b"]   # ... but it is not asked for
    assert parse_header(bytes(broken), 0).base_offset == 0
