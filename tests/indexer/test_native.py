"""The compiled codec kernels (indexer.codec.native) held to the numpy path and the reference codec.

Every test runs the same public call twice, once with SEGLOG_NO_NUMBA=1 (the numpy path) and once
through the kernels, and asserts the same bytes, the same metadata, the same Arrow output, or the
same error."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.indexer.codec import columns
from seglog.indexer.codec.columns import ARROW_SCHEMA, HEADER_TYPE, decode_to_arrow, encode_columns
from seglog.errors import SeglogError
from seglog.indexer.codec.records import Record, decode_batch, encode_batch

import numba  # noqa: F401  (a hard dependency: its absence must fail, not skip)
from seglog.indexer.codec import native  # noqa: E402

T0 = 1_700_000_000_000
INT64_MAX = (1 << 63) - 1

blobs = st.one_of(st.none(), st.just(b""), st.binary(max_size=30), st.binary(min_size=120, max_size=300),
                  st.binary(min_size=8000, max_size=9000))          # record lengths of 2-3 byte varints
ts_st = st.one_of(st.just(-1), st.integers(T0 - 5000, T0 + 5000), st.integers(0, 2**62),
                  st.just(INT64_MAX - 1), st.just(0))
header_st = st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=12)))
key_types = st.sampled_from([pa.binary(), pa.large_binary(), pa.string(), None])
batch_bytes = st.sampled_from([1, 70, 200, 600, 4000, 20000, 1 << 20])
KEEP = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@contextlib.contextmanager
def numpy_path():
    old = os.environ.get("SEGLOG_NO_NUMBA")
    os.environ["SEGLOG_NO_NUMBA"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["SEGLOG_NO_NUMBA"]
        else:
            os.environ["SEGLOG_NO_NUMBA"] = old


def both(fn):
    """(numpy result or exception, kernel result or exception) of fn()."""
    def run():
        try:
            return fn()
        except SeglogError as exc:
            return exc
    with numpy_path():
        assert columns.native_kernels() is None
        slow = run()
    assert columns.native_kernels() is native
    return slow, run()


def assert_same_encoding(a, b):
    assert not isinstance(a, Exception) and not isinstance(b, Exception), (a, b)
    assert bytes(a.data) == bytes(b.data)
    for f in ("positions", "base_offsets", "last_offsets", "first_timestamps", "max_timestamps",
              "record_counts"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype == np.int64, f
        assert np.array_equal(x, y), f
    assert (a.num_records, a.timestamp_type, a.num_batches) == (b.num_records, b.timestamp_type,
                                                                b.num_batches)


def _keys(keys, key_type):
    if key_type is None:
        return None
    if key_type == pa.string():
        keys = [None if k is None else k.hex() for k in keys]
    return pa.array(keys, key_type)


# ----------------------------------------------------------------------------------- encode

@settings(KEEP, max_examples=300)
@given(st.lists(st.tuples(blobs, blobs, ts_st), min_size=1, max_size=60), st.integers(0, 2**40),
       batch_bytes, key_types, st.one_of(st.none(), st.integers(0, 2**45)),
       st.sampled_from(["none", "empty lists", "null lists"]))
def test_encode_kernel_equals_numpy_path(rows, base, max_batch_bytes, key_type, append_time, hdrs):
    keys = _keys([r[0] for r in rows], key_type)
    values = pa.array([r[1] for r in rows], pa.binary())
    ts = np.array([r[2] for r in rows], dtype=np.int64)
    headers = {"none": None, "empty lists": pa.array([[]] * len(rows), HEADER_TYPE),
               "null lists": pa.array([None] * len(rows), HEADER_TYPE)}[hdrs]
    slow, fast = both(lambda: encode_columns(base, values, keys, ts, headers,
                                             max_batch_bytes=max_batch_bytes,
                                             append_time_ms=append_time))
    assert_same_encoding(slow, fast)


@settings(KEEP, max_examples=100)
@given(st.lists(st.tuples(blobs, blobs), min_size=2, max_size=60), st.data())
def test_encode_kernel_on_sliced_arrays_with_nulls(rows, data):
    """A slice keeps its parent's buffers: offsets and validity bits start mid-buffer."""
    i = data.draw(st.integers(0, len(rows) - 1), label="slice start")
    j = data.draw(st.integers(i + 1, len(rows)), label="slice end")
    keys = pa.array([r[0] for r in rows], pa.binary()).slice(i, j - i)
    values = pa.array([r[1] for r in rows], pa.large_binary()).slice(i, j - i)
    ts = np.full(j - i, T0, dtype=np.int64)
    mbb = data.draw(batch_bytes, label="max_batch_bytes")
    slow, fast = both(lambda: encode_columns(3, values, keys, ts, max_batch_bytes=mbb))
    assert_same_encoding(slow, fast)
    want = b"".join(encode_batch(3 + int(s), [Record(r[0], r[1], T0) for r in rows[i:j][s:s + c]])
                    for s, c in zip(np.cumsum(fast.record_counts) - fast.record_counts,
                                    fast.record_counts))
    assert bytes(fast.data) == want


@settings(KEEP, max_examples=60)
@given(st.lists(st.integers(-1, 2**62), min_size=1, max_size=50), st.data())
def test_encode_kernel_timestamps_backwards_ties_and_large_deltas(ts, data):
    ts = data.draw(st.permutations(ts + ts[:3]), label="order")          # ties and reversals
    ts = np.array(ts, dtype=np.int64)
    values = pa.array([b"v" * (i % 9) for i in range(len(ts))])
    for mbb in (1, 150, 1 << 20):
        assert_same_encoding(*both(lambda: encode_columns(0, values, None, ts, max_batch_bytes=mbb)))


def test_encode_kernel_extreme_timestamps():
    values = pa.array([b"a", b"b", b"c", b"d"])
    ts = np.array([-1, INT64_MAX - 1, 0, -1], dtype=np.int64)
    assert_same_encoding(*both(lambda: encode_columns(0, values, None, ts, max_batch_bytes=10**6)))
    # max - min = 2**63 - 1: the widest bound; delta INT64_MAX from -1 does not fit a varlong
    ts = np.array([-1, INT64_MAX], dtype=np.int64)
    slow, fast = both(lambda: encode_columns(0, values[:2], None, ts, max_batch_bytes=10**6))
    assert type(slow) is type(fast) and str(slow) == str(fast) and "too far" in str(fast)
    assert_same_encoding(*both(lambda: encode_columns(0, values[:2], None, ts, max_batch_bytes=1)))


def test_encode_with_headers_still_uses_the_numpy_path_and_equals_the_reference():
    recs = [Record(b"k", b"v%d" % i, T0 + i, (("h", b"x"),) if i % 3 == 0 else ()) for i in range(20)]
    headers = pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in recs], HEADER_TYPE)
    slow, fast = both(lambda: encode_columns(
        0, pa.array([r.value for r in recs]), pa.array([r.key for r in recs]),
        np.array([r.timestamp for r in recs]), headers, max_batch_bytes=1 << 20))
    assert_same_encoding(slow, fast)
    assert bytes(fast.data) == encode_batch(0, recs)


def test_encode_kernel_large_record_alone_and_many_batches():
    values = pa.array([b"x" * 70000, b"", None, b"y" * 200] * 50)
    keys = pa.array([b"k" * 16] * 200)
    ts = np.arange(200, dtype=np.int64) + T0
    for mbb in (1, 1000, 100_000, 1 << 22):
        assert_same_encoding(*both(lambda: encode_columns(9, values, keys, ts, max_batch_bytes=mbb)))


# ----------------------------------------------------------------------------------- decode

record_st = st.builds(Record, key=blobs, value=blobs, timestamp=ts_st,
                      headers=st.one_of(st.just(()), st.lists(header_st, max_size=3).map(tuple)))


def _encode(records, base, mbb, append_time):
    values = pa.array([r.value for r in records], pa.binary())
    keys = pa.array([r.key for r in records], pa.binary())
    ts = np.array([r.timestamp for r in records], dtype=np.int64)
    headers = None
    if any(r.headers for r in records):
        headers = pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records],
                           HEADER_TYPE)
    return encode_columns(base, values, keys, ts, headers, max_batch_bytes=mbb,
                          append_time_ms=append_time)


@settings(KEEP, max_examples=250)
@given(st.lists(record_st, min_size=1, max_size=40), st.integers(0, 1000), batch_bytes,
       st.one_of(st.none(), st.integers(0, 2**45)), st.data())
def test_decode_kernel_equals_numpy_path_and_reference(records, base, mbb, append_time, data):
    enc = _encode(records, base, mbb, append_time)
    n = len(records)
    start = data.draw(st.integers(base - 2, base + n + 1), label="start")
    end = data.draw(st.integers(start, base + n + 2), label="end")
    prefix = data.draw(st.binary(max_size=5), label="prefix")
    buf = prefix + bytes(enc.data)
    positions = enc.positions[:-1] + len(prefix)
    slow, fast = both(lambda: decode_to_arrow(buf, positions, start_offset=start, end_offset=end))
    assert fast.schema == slow.schema == ARROW_SCHEMA
    assert fast.equals(slow)
    fast.validate(full=True)
    ref = [r for p in positions for r in decode_batch(buf, int(p)) if start <= r.offset < end]
    assert fast.to_pylist() == [
        {"key": r.key, "value": r.value, "offset": r.offset, "timestamp": r.timestamp,
         "timestampType": r.timestamp_type, "headers": [{"key": k, "value": v} for k, v in r.headers]}
        for r in ref]


@settings(KEEP, max_examples=300)
@given(st.lists(record_st, min_size=1, max_size=12), st.sampled_from([1, 200, 1 << 20]),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=3),
       st.data())
def test_decode_kernel_refuses_what_the_numpy_path_refuses(records, mbb, flips, data):
    """Corrupt bytes (CRCs not checked here): both paths raise the same error or return the same."""
    enc = _encode(records, 0, mbb, None)
    buf = bytearray(enc.data)
    for at, byte in flips:
        buf[at % len(buf)] = byte
    buf = bytes(buf)
    cut = data.draw(st.integers(0, len(records)), label="start")
    slow, fast = both(lambda: decode_to_arrow(buf, enc.positions[:-1], start_offset=cut,
                                              end_offset=len(records)))
    if isinstance(slow, Exception) or isinstance(fast, Exception):
        assert type(slow) is type(fast) and str(slow) == str(fast)
    else:
        assert fast.equals(slow)


def test_decode_kernel_over_arrow_buffer_memoryview():
    """enc.data exports signed bytes ('b'); lengths of 64 and more must still read right."""
    values = pa.array([b"v" * i for i in range(0, 400, 7)])
    enc = encode_columns(0, values, None, np.full(len(values), T0), max_batch_bytes=1000)
    slow, fast = both(lambda: decode_to_arrow(enc.data, enc.positions[:-1], start_offset=0,
                                              end_offset=10**6))
    assert fast.equals(slow) and fast.column("value").equals(values.cast(pa.binary()))


def test_decode_kernel_empty_inputs():
    for buf, pos in ((b"", []), (encode_batch(0, [Record(None, b"a", T0)]), [0])):
        slow, fast = both(lambda: decode_to_arrow(buf, pos, start_offset=5, end_offset=9))
        assert fast.num_rows == 0 and fast.equals(slow) and fast.schema == ARROW_SCHEMA


def test_decode_kernel_offsets_beyond_int64_use_the_numpy_path():
    buf = encode_batch(0, [Record(None, b"a", T0)])
    slow, fast = both(lambda: decode_to_arrow(buf, [0], start_offset=-(1 << 70), end_offset=1 << 70))
    assert fast.equals(slow) and fast.num_rows == 1


def test_decode_kernel_bad_utf8_header_key_names_the_batch():
    good = encode_batch(0, [Record(None, b"v", T0, (("k", b"x"),))])
    bad = bytearray(good)
    i = bad.rindex(b"k")
    bad[i] = 0xFF
    slow, fast = both(lambda: decode_to_arrow(bytes(bad), [0], start_offset=0, end_offset=9))
    assert isinstance(fast, SeglogError) and str(fast) == str(slow) and "UTF-8" in str(fast)


# ----------------------------------------------------------------------------------- the cache

def test_cache_dir_when_the_package_dir_is_not_writable(tmp_path, monkeypatch):
    blocker = tmp_path / "site-packages-file"
    blocker.write_bytes(b"")                      # a file: nothing can be made under it, even as root
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert native.cache_dir_for(blocker / "__pycache__") == str(tmp_path / "xdg" / "seglog" / "numba")
    assert native.cache_dir_for(tmp_path / "pkg" / "__pycache__") is None     # writable: numba's own
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert native.cache_dir_for(blocker / "__pycache__") is None               # the user's choice wins


@pytest.mark.slow
def test_kernels_cache_to_the_user_dir_in_a_fresh_process(tmp_path):
    """A copy of the module in a dir that cannot hold __pycache__: compiled code lands in the
    per-user cache, and a second process loads it instead of compiling."""
    pkg = tmp_path / "ro"
    pkg.mkdir()
    (pkg / "native.py").write_bytes(open(native.__file__, "rb").read())
    (pkg / "__pycache__").write_bytes(b"")        # a file where the cache dir would go
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import native;"
            "a = np.frombuffer(bytes.fromhex(sys.argv[2]), np.uint8);"
            "r = native.decode_batches(a, np.zeros(1, np.int64), 0, 9);"
            "print(bytes(r['value'][2]).decode(), sum(native._decode_plan.stats.cache_hits.values()))")
    batch = encode_batch(0, [Record(None, b"hello", T0)]).hex()
    runs = [subprocess.run([sys.executable, "-c", code, str(pkg), batch], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout.split()[0] == runs[1].stdout.split()[0] == "hello"
    cached = list((tmp_path / "xdg" / "seglog" / "numba").rglob("*.nbi"))
    assert cached, "nothing cached under the per-user dir"
    assert runs[0].stdout.split()[1] == "0" and runs[1].stdout.split()[1] == "1"   # compiled, then loaded


def test_no_numba_env_forces_the_numpy_path():
    with numpy_path():
        assert columns.native_kernels() is None
    assert columns.native_kernels() is native
