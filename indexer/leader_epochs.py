"""Which partition leader epochs a partition folder's batches may carry (docs/kafka.md, "Leader epochs").

seglog writes partition leader epoch 0 in every batch, so in a folder seglog wrote any other epoch is
a flipped byte (the CRC does not cover the field). A Kafka broker writes its current leader epoch,
which every leader change raises, and keeps the epochs it assigned in `leader-epoch-checkpoint`; a
folder with that file (written by a broker, or imported from one) may hold any epoch, as long as
epochs never decrease from batch to batch.
"""
from __future__ import annotations

import os

from seglog.indexer.codec.records import INT32_MAX

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
SEGLOG_LEADER_EPOCH = 0


def max_leader_epoch(partition_dir) -> int:
    """The largest epoch a batch in `partition_dir` may carry: 0 for seglog's own folders, any
    (int32 max) when Kafka's leader-epoch-checkpoint is there."""
    if os.path.exists(os.path.join(partition_dir, LEADER_EPOCH_CHECKPOINT)):
        return INT32_MAX
    return SEGLOG_LEADER_EPOCH


def checkpoint_max_epoch(partition_dir) -> int:
    """The largest epoch in Kafka's leader-epoch-checkpoint (version line, count line, then
    "epoch start-offset" lines), or -1 when the file is absent or unreadable."""
    try:
        with open(os.path.join(partition_dir, LEADER_EPOCH_CHECKPOINT), encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        return max((int(line.split()[0]) for line in lines[2:] if line.strip()), default=-1)
    except (OSError, ValueError, IndexError):
        return -1
