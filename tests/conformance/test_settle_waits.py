"""The waits both readers share (tests/conformance/settle_waits.json; the JVM's runner is
SettleWaitsVectorsTest): a drift here means one reader gives up on a swap or a roll the other waits out."""
from __future__ import annotations

import json
from pathlib import Path

from seglog.compactor.partition_memo import MTIME_SLACK_NS
from seglog.indexer import log, segment_list

VECTORS = json.loads((Path(__file__).parent / "settle_waits.json").read_text())


def _ms(seconds) -> list[int]:
    return [round(s * 1000) for s in seconds]


def test_the_listing_waits_are_the_vectors():
    assert _ms(log._SETTLE_WAITS) == VECTORS["listing_settle_waits_ms"]


def test_the_index_waits_are_the_vectors():
    assert _ms(segment_list._INDEX_SETTLE_WAITS) == VECTORS["index_settle_waits_ms"]


def test_the_mtime_granularity_is_the_vectors():
    assert MTIME_SLACK_NS == VECTORS["mtime_granularity_ms"] * 1_000_000
