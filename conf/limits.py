"""Kafka's integer ranges, the one home of these limits: the record batch fields (docs/format.md) and
the configuration values (Kafka's topic configs are int32 or int64) are bounded by them."""
from __future__ import annotations

INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
