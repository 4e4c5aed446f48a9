"""Kafka's integer ranges, the one home of these limits: the record batch fields (docs/format.md) and
the configuration values (Kafka's topic configs are int32 or int64) are bounded by them."""
from __future__ import annotations

INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# A compressed batch's records, decompressed, take at most this many bytes: the readers inflate a batch
# whole (indexer/codec/compression.py; the JVM's read.BatchInflater), so without a ceiling a 16 KB zstd
# batch can claim 512 MiB. Kafka streams records out of the codec one by one and needs none. 64 MiB is
# 64 times Kafka's default message.max.bytes (1 MiB) and above any batch seglog writes (its batching
# budget is at most 1 MiB of records: indexer/log.py batch_budget). A batch over it is a corrupt batch
# naming file, position and this bound; tests/conformance/batch_bounds.json pins both languages.
INFLATED_BATCH_MAX = 64 << 20
# The fewest bytes one record takes (length varint, attributes, timestampDelta, offsetDelta, key length,
# value length, header count: one byte each at least): a batch's recordCount can never exceed its
# records' bytes / this, checked before anything is sized by the count.
MIN_RECORD_SIZE = 7
