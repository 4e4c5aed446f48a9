"""Kafka's default partitioner: murmur2 against Kafka's published vectors and a scalar reference."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from tests.oracles.partitioner import murmur2, murmur2_arrow, partition_for_key, partitions_for_keys

# Kafka's UtilsTest vectors: Utils.murmur2(bytes) as a signed int.
KAFKA_VECTORS = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


@pytest.mark.parametrize("key,expected", KAFKA_VECTORS.items())
def test_scalar_matches_kafka(key, expected):
    assert murmur2(key.encode()) == expected


def test_vectorised_matches_kafka_binary_and_string():
    keys = list(KAFKA_VECTORS)
    want = np.array(list(KAFKA_VECTORS.values()), dtype=np.int32)
    assert (murmur2_arrow(pa.array([k.encode() for k in keys])).view(np.int32) == want).all()
    assert (murmur2_arrow(pa.array(keys, pa.large_string())).view(np.int32) == want).all()


def test_partition_is_positive_modulo():
    assert partition_for_key(b"21", 10) == (-973932308 & 0x7FFFFFFF) % 10
    assert partitions_for_keys(pa.array([b"21"]), 10)[0] == partition_for_key(b"21", 10)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=60), st.integers(1, 50),
       st.integers(0, 5))
def test_vectorised_equals_scalar(keys, partitions, offset):
    # a sliced array (non-zero Arrow offset) must hash the same
    arr = pa.array([None] * offset + keys, pa.binary()).slice(offset)
    got = partitions_for_keys(arr, partitions)
    keyed = [i for i, k in enumerate(keys) if k is not None]
    assert [int(got[i]) for i in keyed] == [partition_for_key(keys[i], partitions) for i in keyed]
    nulls = [int(got[i]) for i, k in enumerate(keys) if k is None]
    assert nulls == [i % partitions for i in range(len(nulls))]   # round robin


def test_null_keys_spread_evenly():
    got = partitions_for_keys(pa.array([None] * 1000, pa.binary()), 8, null_start=3)
    assert np.bincount(got, minlength=8).tolist() == [125] * 8


def test_refuses_non_binary():
    with pytest.raises(TypeError):
        murmur2_arrow(pa.array([1, 2]))
    with pytest.raises(ValueError):
        partitions_for_keys(pa.array([b"a"]), 0)
