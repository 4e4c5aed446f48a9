"""The Python side of the twins' vector files (tests/conformance/twins.json lists every twin): task packing,
timestamp bounds, the sink's input columns and the roll rule, each file read by a JUnit runner too."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent


def vectors(name: str) -> list[dict]:
    cases = json.loads((HERE / name).read_text())["cases"]
    assert cases, name
    return cases


# ------------------------------------------------------------------------------------------- task packing
def _split(rng, start: int, end: int, room: int):
    """The vector's cuts as Log.split_offset answers: the last cut within `room` bytes of `start`, else the first
    past it, None without a cut inside (start, end). TaskPackingVectorsTest models it alike."""
    at = dict(rng.log)
    base = 0 if start == rng.start else at[start]
    within = None
    for off, nbytes in rng.log:
        if not start < off < end:
            continue
        if nbytes - base > room:
            cut = within if within is not None else off
            return cut, at[cut] - base
        within = off
    return None if within is None else (within, at[within] - base)


@pytest.mark.parametrize("case", vectors("task_packing.json"), ids=lambda c: c["why"])
def test_task_packing_as_the_vectors_say(case):
    from seglog.source.options import parse_options
    from seglog.source.planning import PartitionRange, pack, target_task_bytes, task_slack

    given = {"path": "/data/log", "topic": "a", "maxbytespertask": str(case["maxBytesPerTask"])}
    if case["minPartitions"] is not None:
        given["minpartitions"] = str(case["minPartitions"])
    opts = parse_options(given)
    ranges = [PartitionRange(r["topic"], r["partition"], r["start"], r["end"], r["bytes"],
                             log=[tuple(c) for c in r["cuts"]]) for r in case["ranges"]]
    target = target_task_bytes(sum(r["bytes"] for r in case["ranges"]), opts, case["cores"])
    slack = task_slack(target, opts)
    tasks = pack(ranges, target, _split, slack)
    assert (target, slack) == (case["target"], case["slack"])
    assert [[[s.topic, s.partition, s.start, s.end] for s in t] for t in tasks] == case["expected"]


# ---------------------------------------------------------------------------------------- timestamp bounds
@pytest.mark.parametrize("case", vectors("timestamp_bounds.json"), ids=lambda c: c["why"])
def test_timestamp_bounds_as_the_vectors_say(case):
    from seglog.errors import TimestampOutOfRangeError
    from seglog.indexer.log import check_time_difference

    ts = np.array([case["ts"]], dtype=np.int64)
    try:
        check_time_difference(ts, case["now"], case["before"], case["after"], 0)
        broken = None
    except TimestampOutOfRangeError as e:
        broken = next(w.rstrip(";") for w in str(e).split() if w.startswith("message.timestamp."))
    assert broken == case["broken"]


# ----------------------------------------------------------------------------------------- input columns
@pytest.mark.parametrize("case", vectors("input_columns.json"), ids=lambda c: c["why"])
def test_sink_input_columns_as_the_vectors_say(case):
    from pyspark.sql.types import StructType

    from seglog.sink.input_schema import SinkSchemaError, validate_schema

    schema = StructType.fromJson(case["schema"])
    if case["refused"] is None:
        validate_schema(schema)
    else:
        with pytest.raises(SinkSchemaError) as e:
            validate_schema(schema)
        assert case["refused"] in str(e.value)


# -------------------------------------------------------------------------------------------- roll rule
ROLL = json.loads((HERE / "roll_rule.json").read_text())


@pytest.mark.parametrize("case", ROLL["cases"], ids=lambda c: c["why"])
def test_roll_rule_as_the_vectors_say(case, tmp_path):
    """A real, empty active segment of the vector's configuration at the case's base; its created time set to
    the case's (the rule reads it for a segment without timestamps)."""
    from seglog.conf.topic_config import TOPIC_DEFAULTS
    from seglog.indexer.segment import LogSegment

    config = {**TOPIC_DEFAULTS, **ROLL["config"]}
    seg = LogSegment(tmp_path, case["base"], config, writable=True, active=True, create=True)
    try:
        seg.created_ms = case["createdMs"]
        got = seg._rolls(case["size"], case["firstTs"], case["batchBytes"], case["lastOffset"], case["maxTs"],
                         case["now"], case["entriesRoom"])
    finally:
        seg.close()
    assert got is case["rolls"], case["why"]


# --------------------------------------------------------------------------------------- murmur2 partition
@pytest.mark.parametrize("case", vectors("murmur2.json"), ids=lambda c: f"{c['key'][:16]}%{c['partitions']}")
def test_murmur2_partition_as_the_vectors_say(case):
    from tests.oracles.partitioner import partition_for_key

    assert partition_for_key(bytes.fromhex(case["key"]), case["partitions"]) == case["partition"]
