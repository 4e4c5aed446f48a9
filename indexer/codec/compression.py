"""Kafka's record batch compression codecs, both ways (docs/kafka.md, "Compression").

A compressed batch keeps its header (indexer/codec/batch_layout.py) uncompressed; only the records section (everything after
the header) is compressed, as one stream in the codec's framing as Kafka's Java clients write it:

- 1 gzip: a gzip member (RFC 1952).
- 2 snappy: snappy-java's "xerial" stream framing (an 8-byte magic ``\\x82SNAPPY\\x00``, version and
  compatible-version int32s, then blocks of int32 length + raw snappy). Readers also accept a plain
  raw snappy block: snappy-java reads one when the magic is absent, and librdkafka producers write it.
- 3 lz4: the LZ4 frame format (magic 0x184D2204) with independent blocks, which Kafka's Lz4Block
  streams read and write for magic 2 batches (they refuse linked blocks).
- 4 zstd: a zstd frame.

The codecs: gzip from the standard library's zlib (cramjam's gzip compresses ~3x slower), snappy, lz4
and zstd from cramjam (one compiled wheel; as fast as the per-codec packages in bench/codecs.py once
lz4 runs in its fast mode). `inflate_batch` turns a compressed batch into the equivalent uncompressed batch
(codec bits cleared, batchLength adjusted, CRC recomputed), so every record walk, compiled
(`indexer.codec.native`) or not, only ever sees uncompressed record bytes.

Invariant: inflating never holds more than conf/limits.py's INFLATED_BATCH_MAX of records, whatever the
compressed bytes claim: every codec decompresses into a buffer of at most that size and stops at its end,
and a batch that would go past it is a CorruptRecordError naming its position and the bound.
"""
from __future__ import annotations

import struct
import zlib

import crc32c as _crc32c
import cramjam
import numpy as np

from seglog.conf.limits import INFLATED_BATCH_MAX
from seglog.errors import CorruptRecordError
from seglog.indexer.codec.batch_layout import (
    ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, BATCH_LENGTH_OFFSET, COMPRESSION_CODEC_MASK, CRC_OFFSET,
    LOG_OVERHEAD)

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")        # magic, version, compatible version
_XERIAL_BLOCK = 32 * 1024                      # snappy-java's default block size
_INT32 = struct.Struct(">i")
_GZIP_WBITS = 16 + zlib.MAX_WBITS               # zlib's gzip container
# The first output buffer a batch is inflated into: most batches fit it; one that does not is inflated
# again into a buffer of the whole ceiling (untouched pages of which cost nothing: np.zeros is calloc).
_FIRST_GUESS = 256 * 1024
_GUESS_RATIO = 32
_GZIP_STEP = 1 << 20


def expansion_headroom(codec: int, limit: int) -> int:
    """Bytes a batch of at most `limit` bytes may grow by when `codec` compresses incompressible
    records: framing and stored blocks (gzip ~5 B per 64 KiB, xerial snappy ~8 B per 32 KiB, lz4
    4 B per 64 KiB block, zstd 3 B per 128 KiB), bounded generously by limit/64 + 64; 0 uncompressed.
    Batches are grouped this much below max.message.bytes, so records that each fit are never
    refused because their compressed batch outgrew the limit."""
    return 0 if codec == NONE else (limit >> 6) + 64


def topic_codec(compression_type: str) -> int:
    """The codec seglog writes for a topic's compression.type: `producer` keeps what the producer
    gave, and seglog's own writer gives uncompressed batches; `uncompressed` likewise."""
    if compression_type in ("producer", "uncompressed"):
        return NONE
    return CODEC_IDS[compression_type]


class _Unsupported(Exception):
    pass


class InflatedTooLarge(Exception):
    """The records would decompress to more than the ceiling they were inflated under."""


def _snappy_raw_into(data, out: np.ndarray) -> int:
    # raw snappy states its length up front: checked before anything is written
    n = cramjam.snappy.decompress_raw_len(data)
    if n > len(out):
        raise InflatedTooLarge
    return cramjam.snappy.decompress_raw_into(data, out)


def _snappy_into(data: bytes, out: np.ndarray) -> int:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_raw_into(data, out)
    if len(data) < _XERIAL_HEADER.size:
        raise ValueError("torn xerial snappy header")
    at = 0
    p = _XERIAL_HEADER.size
    while p < len(data):
        if p + 4 > len(data):
            raise ValueError(f"torn xerial snappy block length at {p}")
        (n,) = _INT32.unpack_from(data, p)
        p += 4
        if n < 0 or p + n > len(data):
            raise ValueError(f"xerial snappy block of {n} bytes at {p} runs past the end")
        at += _snappy_raw_into(data[p:p + n], out[at:])
        p += n
    return at


def _snappy_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
    view = memoryview(data)
    for p in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[p:p + _XERIAL_BLOCK]))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _gunzip_into(data: bytes, out: np.ndarray) -> int:
    # in steps, so that no more than one step is held beside the buffer
    d = zlib.decompressobj(_GZIP_WBITS)
    at = 0
    chunk = data
    while not d.eof:
        got = d.decompress(chunk, _GZIP_STEP)
        if not got and not d.eof:
            raise ValueError("truncated gzip stream")
        if at + len(got) > len(out):
            raise InflatedTooLarge
        out[at:at + len(got)] = np.frombuffer(got, dtype=np.uint8)
        at += len(got)
        chunk = d.unconsumed_tail
    return at


def _frame_into(module, data: bytes, out: np.ndarray) -> int:
    try:
        return module.decompress_into(data, out)
    except cramjam.DecompressionError as exc:
        # cramjam stops writing at the buffer's end (it never holds more than the buffer) and says so thus
        if "failed to write whole buffer" in str(exc):
            raise InflatedTooLarge from None
        raise


def _into(codec: int, data: bytes, out: np.ndarray) -> int:
    if codec == GZIP:
        return _gunzip_into(data, out)
    if codec == SNAPPY:
        return _snappy_into(data, out)
    if codec == LZ4:
        return _frame_into(cramjam.lz4, data, out)
    if codec == ZSTD:
        return _frame_into(cramjam.zstd, data, out)
    raise _Unsupported(codec)


def _inflate_into(codec: int, data: bytes, lead: int, ceiling: int) -> tuple[np.ndarray, int]:
    """(buffer, n): the records decompressed into buffer[lead:lead + n], n <= ceiling, the first
    `lead` bytes left for the caller's header. Memory stays within lead + ceiling whatever the
    bytes claim: every codec writes into the buffer and stops at its end (InflatedTooLarge)."""
    guess = min(ceiling, max(_FIRST_GUESS, _GUESS_RATIO * len(data)))
    while True:
        buf = np.zeros(lead + guess, dtype=np.uint8)
        try:
            return buf, _into(codec, data, buf[lead:])
        except InflatedTooLarge:
            if guess >= ceiling:
                raise
            guess = ceiling


def decompress(codec: int, data, ceiling: int = INFLATED_BATCH_MAX) -> bytes:
    """The records section of a batch compressed with `codec` (1-4), decompressed, at most `ceiling`
    bytes (InflatedTooLarge past it). Raises ValueError (or cramjam's DecompressionError) on bad
    bytes; callers name the batch."""
    buf, n = _inflate_into(codec, bytes(data), 0, ceiling)
    return buf[:n].tobytes()


def compress(codec: int, data) -> bytes:
    """The records section `data` compressed with `codec` in Kafka's framing (see the module doc)."""
    if codec == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, _GZIP_WBITS)      # zlib's default level, as Kafka's gzip
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _snappy_compress(bytes(data))
    if codec == LZ4:
        # Kafka's Lz4BlockInputStream reads independent blocks only (it refuses linked ones).
        # The fast LZ4 mode: cramjam's default level is ~6x slower to compress (bench/codecs.py).
        c = cramjam.lz4.Compressor(level=1, content_checksum=False, block_linked=False)
        c.compress(bytes(data))
        return bytes(c.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=3))
    raise _Unsupported(codec)


def codec_of(buf, pos: int) -> int:
    """The compression codec bits of the batch at `pos` (attributes' low byte is at offset 22)."""
    return buf[pos + ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK


def inflate_batch(buf, pos: int, size: int, ceiling: int = INFLATED_BATCH_MAX) -> bytes:
    """The compressed batch of `size` bytes at `pos` as the equivalent uncompressed batch: the same
    header with the codec bits cleared, batchLength for the decompressed records, and a CRC over
    the new bytes (so the result is a valid batch on its own). Raises CorruptRecordError naming
    the position and codec when the records do not decompress, or would decompress to more than
    `ceiling` bytes (conf/limits.py INFLATED_BATCH_MAX): memory stays within the ceiling and the
    records are copied once, from the decompression buffer into the result."""
    view = memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    codec = view[pos + ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK
    try:
        out, n = _inflate_into(codec, bytes(view[pos + BATCH_HEADER_SIZE:pos + size]), BATCH_HEADER_SIZE, ceiling)
    except _Unsupported:
        raise CorruptRecordError(f"batch at position {pos} uses compression codec {codec}, which Kafka does "
                                 f"not define (1 gzip, 2 snappy, 3 lz4, 4 zstd)") from None
    except InflatedTooLarge:
        raise CorruptRecordError(f"batch at position {pos}: its {CODEC_NAMES[codec]} records decompress to "
                                 f"more than {ceiling} bytes, the most a batch's records may inflate to "
                                 f"(INFLATED_BATCH_MAX)") from None
    except Exception as exc:                 # cramjam raises its own DecompressionError, or ValueError
        raise CorruptRecordError(f"batch at position {pos}: its {CODEC_NAMES[codec]} records do not "
                                 f"decompress: {exc}") from exc
    out[:BATCH_HEADER_SIZE] = np.frombuffer(view[pos:pos + BATCH_HEADER_SIZE], dtype=np.uint8)
    out[ATTRIBUTES_OFFSET + 1] &= ~COMPRESSION_CODEC_MASK & 0xFF
    head = memoryview(out)[:BATCH_HEADER_SIZE]
    _INT32.pack_into(head, BATCH_LENGTH_OFFSET, BATCH_HEADER_SIZE - LOG_OVERHEAD + n)
    whole = memoryview(out)[:BATCH_HEADER_SIZE + n]
    struct.pack_into(">I", head, CRC_OFFSET, _crc32c.crc32c(whole[ATTRIBUTES_OFFSET:]))
    return whole.tobytes()


def deflate_batch(batch: bytes, codec: int) -> bytes:
    """An uncompressed batch (`batch`, exactly one) compressed with `codec`: the same header with the
    codec bits set, batchLength for the compressed records, and its CRC recomputed."""
    if codec == NONE:
        return batch
    body = compress(codec, memoryview(batch)[BATCH_HEADER_SIZE:])
    out = bytearray(batch[:BATCH_HEADER_SIZE])
    out[ATTRIBUTES_OFFSET + 1] = (out[ATTRIBUTES_OFFSET + 1] & ~COMPRESSION_CODEC_MASK & 0xFF) | codec
    _INT32.pack_into(out, BATCH_LENGTH_OFFSET, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body))
    out += body
    crc = _crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    struct.pack_into(">I", out, CRC_OFFSET, crc)
    return bytes(out)
