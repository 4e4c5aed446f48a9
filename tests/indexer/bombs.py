"""Crafted hostile batches for the memory tests (issue 37 items 1 and 2): a compressed batch whose
records inflate far past what it occupies, and a batch claiming more records than it can hold.
Each has a valid CRC: nothing but the bounds stops a reader from sizing memory by it."""
from __future__ import annotations

import struct
from pathlib import Path

import cramjam
import crc32c

from seglog.indexer.codec.batch_layout import ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, CRC_OFFSET, LOG_OVERHEAD
from seglog.indexer.codec.compression import GZIP, LZ4, ZSTD, compress
from seglog.indexer.codec.records import HEADER_STRUCT, write_varint

_MIB = 1 << 20


def _record_head(value_len: int) -> tuple[bytes, bytes]:
    """One record with key b"k" and a value of `value_len` zero bytes: (bytes before the value, after it)."""
    body = bytearray([0])                         # attributes
    write_varint(body, 0)                         # timestampDelta
    write_varint(body, 0)                         # offsetDelta
    write_varint(body, 1)
    body += b"k"
    write_varint(body, value_len)
    tail = bytearray()
    write_varint(tail, 0)                         # no headers
    head = bytearray()
    write_varint(head, len(body) + value_len + len(tail))
    return bytes(head + body), bytes(tail)


def seal(base_offset: int, codec: int, records: bytes, count: int, last_offset_delta: int | None = None) -> bytes:
    """A batch holding `records` (already compressed with `codec`), its CRC valid."""
    lod = count - 1 if last_offset_delta is None else last_offset_delta
    out = bytearray(HEADER_STRUCT.pack(base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(records), 0, 2, 0, codec,
                                       lod, 1000, 1000, -1, -1, -1, count))
    out += records
    struct.pack_into(">I", out, CRC_OFFSET, crc32c.crc32c(bytes(out[ATTRIBUTES_OFFSET:])))
    return bytes(out)


def bomb(base_offset: int, inflated: int = 512 * _MIB, codec: int = ZSTD) -> bytes:
    """A batch of one record whose `codec` records inflate to `inflated` bytes (zstd: 512 MiB in ~16 KB),
    compressed in 1 MiB steps so that building it holds little."""
    head, tail = _record_head(inflated - 64)
    value_len = inflated - len(head) - len(tail)            # the records take `inflated` bytes exactly
    head, tail = _record_head(value_len)
    zeros = bytes(_MIB)
    if codec == ZSTD:
        c = cramjam.zstd.Compressor(level=3)
    elif codec == LZ4:
        c = cramjam.lz4.Compressor(level=1, content_checksum=False, block_linked=False)
    else:
        assert codec == GZIP
        import zlib
        z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        parts = [z.compress(head)]
        left = value_len
        while left:
            parts.append(z.compress(zeros[:min(left, _MIB)]))
            left -= min(left, _MIB)
        parts += [z.compress(tail), z.flush()]
        return seal(base_offset, codec, b"".join(parts), 1)
    c.compress(head)
    left = value_len
    while left:
        c.compress(zeros[:min(left, _MIB)])
        left -= min(left, _MIB)
    c.compress(tail)
    return seal(base_offset, codec, bytes(c.finish()), 1)


def huge_count(base_offset: int, count: int = (1 << 31) - 1, codec: int = ZSTD) -> bytes:
    """A batch of one small record whose header claims `count` records (lastOffsetDelta to match)."""
    head, tail = _record_head(1)
    return seal(base_offset, codec, compress(codec, head + b"v" + tail) if codec else head + b"v" + tail, count)


def append_raw(log_file: Path, batch: bytes) -> None:
    with open(log_file, "ab") as f:
        f.write(batch)
