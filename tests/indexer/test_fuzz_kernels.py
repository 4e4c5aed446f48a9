"""No bytes crash the process (docs/internals.md: the compiled kernels are bounds-checked).

Hypothesis builds segment files from real batches seglog writes with every codec, then mutates them:
flipped bytes, a length or count overwritten, truncation, garbage records, whole random files, and
the harshest case, compressed batches whose records are damaged *before* compression and then
compressed and checksummed again (valid codec stream, valid CRC, broken records). Each example runs
every byte-reading kernel (`indexer.codec.native`), the numpy and reference decoders, the lookup by
timestamp, `inflate_batch`, and `seglog dump`, `verify` and `offsets-for-times`, in a subprocess
(tests/indexer/fuzz_worker.py). A signal (negative return code) fails the test; so does any error
that is not one of seglog's typed errors.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from seglog.errors import SeglogError
from seglog.indexer.codec import compression
from seglog.indexer.log import Log
from seglog.indexer.codec.records import BATCH_HEADER_SIZE, HEADER_STRUCT, BatchHeader, Record

ROOT = Path(__file__).resolve().parents[2]
CODECS = ["uncompressed", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000
_SEGMENTS: dict[str, bytes] = {}


def segment_bytes(codec: str, tmp_root: Path) -> bytes:
    """A real segment seglog wrote with `codec`: several batches, keys, null values, headers."""
    if codec not in _SEGMENTS:
        path = tmp_root / f"{codec}-0"
        with Log.open(path, {"compression.type": codec}) as log:
            for k in range(4):
                log.append([Record(None if i % 4 == 0 else b"k%d" % i, None if i % 9 == 4 else b"v%d" % i * 3,
                                   T0 + (i * 7) % 50, (("h", b"x"),) if i % 3 == 0 else ())
                            for i in range(k * 25, k * 25 + 25)])
        _SEGMENTS[codec] = (path / "00000000000000000000.log").read_bytes()
    return _SEGMENTS[codec]


def _headers(data: bytes):
    pos, out = 0, []
    while pos + BATCH_HEADER_SIZE <= len(data):
        h = BatchHeader._make(HEADER_STRUCT.unpack_from(data, pos))
        if h.batch_length < 49 or pos + h.size > len(data):
            break
        out.append((pos, h))
        pos += h.size
    return out


def _fix_crcs(data: bytearray) -> None:
    for pos, h in _headers(bytes(data)):
        struct.pack_into(">I", data, pos + 17, crc32c.crc32c(bytes(data[pos + 21:pos + h.size])))


def damage_inside_compression(data: bytes, which: int, at: int, byte: int) -> bytes:
    """Inflate one compressed batch, damage its plain records, compress and checksum it again."""
    heads = _headers(data)
    if not heads:
        return data
    pos, h = heads[which % len(heads)]
    if not h.compression_codec:
        return data
    try:
        plain = bytearray(compression.inflate_batch(data, pos, h.size))
    except SeglogError:              # an earlier mutation already broke the stream
        return data
    if len(plain) > BATCH_HEADER_SIZE:
        plain[BATCH_HEADER_SIZE + at % (len(plain) - BATCH_HEADER_SIZE)] = byte
    again = compression.deflate_batch(bytes(plain), h.compression_codec)
    return data[:pos] + again + data[pos + h.size:]


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(1, 255)),
    st.tuples(st.just("int32"), st.integers(0, 1 << 20), st.integers(-(1 << 31), (1 << 31) - 1)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 20)),
    st.tuples(st.just("garbage"), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("inside"), st.integers(0, 8), st.integers(0, 1 << 20), st.integers(0, 255)),
    st.tuples(st.just("random"), st.binary(min_size=0, max_size=300)),
)
case = st.tuples(st.sampled_from(CODECS), st.lists(mutation, min_size=1, max_size=3), st.booleans())


def apply(data: bytes, mutations, fix_crc: bool) -> bytes:
    buf = bytearray(data)
    for m in mutations:
        kind = m[0]
        if kind == "random":
            buf = bytearray(m[1])
        elif not buf:
            continue
        elif kind == "flip":
            buf[m[1] % len(buf)] ^= m[2]
        elif kind == "int32" and len(buf) >= 4:
            struct.pack_into(">i", buf, m[1] % (len(buf) - 3), m[2])
        elif kind == "truncate":
            del buf[m[1] % len(buf):]
        elif kind == "garbage":
            at = m[1] % len(buf)
            buf[at:at + len(m[2])] = m[2]
        elif kind == "inside":
            buf = bytearray(damage_inside_compression(bytes(buf), m[1], m[2], m[3]))
    if fix_crc:
        _fix_crcs(buf)
    return bytes(buf)


@pytest.mark.slow
# No shrinking: every example costs a process (numba's cached kernels load in ~1 s); a failure prints
# the whole list of cases, which reproduces it. SEGLOG_FUZZ_EXAMPLES raises the count off CI.
@settings(max_examples=int(os.environ.get("SEGLOG_FUZZ_EXAMPLES", "12")), deadline=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cases=st.lists(case, min_size=25, max_size=40))
def test_no_bytes_crash_any_kernel_or_command(tmp_path_factory, cases):
    base = tmp_path_factory.mktemp("segments")
    work = tmp_path_factory.mktemp("fuzz")
    for n, (codec, mutations, fix_crc) in enumerate(cases):
        folder = work / f"{n:03d}" / "f-0"
        folder.mkdir(parents=True)
        (folder / "00000000000000000000.log").write_bytes(apply(segment_bytes(codec, base), mutations, fix_crc))
    proc = subprocess.run([sys.executable, "-m", "tests.indexer.fuzz_worker", str(work)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {proc.stderr[-3000:]}"
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    ran = int(proc.stdout.split()[-3])
    assert ran >= 10 * len(cases)                        # the kernels really ran on every case


def test_the_worker_sees_a_crash_as_a_signal(tmp_path):
    """The harness itself: a process killed by a signal has a negative return code here."""
    proc = subprocess.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert proc.returncode == -11
