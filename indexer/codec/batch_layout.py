"""The record batch header, magic 2 (docs/format.md, "Record batches"): the one home of its layout.

Every module that reads or writes batch headers (records, columns, native, segment, compression, the
dump command) takes the field positions and sizes from here; none spells a position as a literal.

Batch layout (big-endian; positions from the batch start):
    0  baseOffset int64          8  batchLength int32 (bytes after this field)
    12 partitionLeaderEpoch int32  16 magic int8 (= 2)    17 crc uint32 (CRC-32C of bytes 21..end)
    21 attributes int16          23 lastOffsetDelta int32
    27 baseTimestamp int64   35 maxTimestamp int64   43 producerId int64   51 producerEpoch int16
    53 baseSequence int32    57 recordCount int32    61 records
Attributes: bits 0-2 compression codec, bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional,
bit 5 control batch, bit 6 delete horizon set (compaction).
"""
from __future__ import annotations

import struct

MAGIC = 2

BASE_OFFSET_OFFSET = 0
BATCH_LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21            # the CRC covers from here to the end of the batch
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORD_COUNT_OFFSET = 57
BATCH_HEADER_SIZE = 61            # the records start here

LOG_OVERHEAD = 12                 # baseOffset + batchLength: the bytes batchLength does not count
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD   # 49: a batch with no records

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

# baseOffset, batchLength, leaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordCount: no padding.
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
assert HEADER_STRUCT.size == BATCH_HEADER_SIZE
assert struct.calcsize(">qiib") == CRC_OFFSET and struct.calcsize(">qiibIhiqqqhi") == RECORD_COUNT_OFFSET
