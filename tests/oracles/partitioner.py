"""Kafka's default partitioner: murmur2 of the key bytes, made positive, modulo the partition count.
The test oracle of the JVM's write.Murmur2Partition (docs/internals.md "Test oracles").

`murmur2_arrow` hashes a whole Arrow binary column at once with numpy: the keys' 4-byte
little-endian words are gathered for every key at word index i together (keys shorter than that are
masked out), so the loop runs over word positions (the longest key / 4), never over records.
`murmur2` is the plain scalar definition the vectorised one is tested against.

Arithmetic is uint32 throughout (numpy wraps multiplication modulo 2**32, exactly Java's int
overflow); `>>>` in Java is a logical shift, which is what a right shift of uint32 does.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

SEED = 0x9747B28C
M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of ``data`` as a signed 32-bit int (the value Kafka's Utils.murmur2 returns)."""
    length = len(data)
    h = (SEED ^ length) & _MASK32
    words = length // 4
    for i in range(words):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * M) & _MASK32
        k ^= k >> 24
        k = (k * M) & _MASK32
        h = (h * M) & _MASK32
        h ^= k
    tail = data[4 * words:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * M) & _MASK32
    h ^= h >> 13
    h = (h * M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """Kafka's default partition of a keyed record (`toPositive(murmur2(key)) % partitions`)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def _binary_buffers(keys: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets int64, data uint8, valid bool) of a binary/string Arrow array, without copies of data."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type):
        keys = keys.view(pa.binary() if pa.types.is_string(keys.type) else pa.large_binary())
    if not (pa.types.is_binary(keys.type) or pa.types.is_large_binary(keys.type)):
        raise TypeError(f"keys must be a binary or string Arrow array, got {keys.type}")
    off_type = np.int32 if pa.types.is_binary(keys.type) else np.int64
    validity, offsets_buf, data_buf = keys.buffers()
    n = len(keys)
    offsets = np.frombuffer(offsets_buf, dtype=off_type, count=n + 1 + keys.offset)[keys.offset:].astype(np.int64)
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None and data_buf.size
            else np.zeros(0, dtype=np.uint8))
    valid = keys.is_valid().to_numpy(zero_copy_only=False) if keys.null_count else np.ones(n, dtype=bool)
    return offsets, data, valid


def murmur2_arrow(keys: pa.Array) -> np.ndarray:
    """murmur2 of every key of a binary/string Arrow array as uint32 (nulls hash as empty keys)."""
    offsets, data, _ = _binary_buffers(keys)
    starts = offsets[:-1]
    lengths = (offsets[1:] - starts)
    m = np.uint32(M)
    h = np.uint32(SEED) ^ lengths.astype(np.uint32)
    # Pad the data so that a 4-byte gather past a key's end never leaves the buffer.
    padded = np.concatenate([data, np.zeros(4, dtype=np.uint8)])
    words = lengths // 4
    max_words = int(words.max()) if len(words) else 0
    for i in range(max_words):
        rows = np.nonzero(words > i)[0]          # keys that still have a whole word at index i
        pos = starts[rows] + 4 * i
        k = (padded[pos].astype(np.uint32)
             | (padded[pos + 1].astype(np.uint32) << np.uint32(8))
             | (padded[pos + 2].astype(np.uint32) << np.uint32(16))
             | (padded[pos + 3].astype(np.uint32) << np.uint32(24)))
        k *= m
        k ^= k >> np.uint32(24)
        k *= m
        hr = h[rows] * m
        h[rows] = hr ^ k
    rest = lengths & 3
    tail = starts + 4 * words
    # Kafka's switch falls through: 3 takes bytes 2,1,0; 2 takes 1,0; 1 takes 0; then multiply.
    r3 = rest == 3
    h[r3] ^= padded[tail[r3] + 2].astype(np.uint32) << np.uint32(16)
    r2 = rest >= 2
    h[r2] ^= padded[tail[r2] + 1].astype(np.uint32) << np.uint32(8)
    r1 = rest >= 1
    h[r1] ^= padded[tail[r1]].astype(np.uint32)
    h[r1] *= m
    h ^= h >> np.uint32(13)
    h *= m
    h ^= h >> np.uint32(15)
    return h


def partitions_for_keys(keys: pa.Array, partitions: int, *, null_start: int = 0) -> np.ndarray:
    """Kafka's default partition of every key (int32); null keys go round robin from ``null_start``."""
    if partitions <= 0:
        raise ValueError(f"partitions must be positive, got {partitions}")
    h = murmur2_arrow(keys)
    out = ((h & np.uint32(0x7FFFFFFF)) % np.uint32(partitions)).astype(np.int32)
    _, _, valid = _binary_buffers(keys)
    nulls = np.nonzero(~valid)[0]
    if len(nulls):
        out[nulls] = ((null_start + np.arange(len(nulls))) % partitions).astype(np.int32)
    return out

