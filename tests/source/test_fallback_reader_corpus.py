"""The Python fallback reader (source/reader.py: the `seglog` Python data source a session without the connector jar
registers) reads the conformance corpus as the JVM reader does (jvm/.../conformance/ConformanceTest.java): every
record of each case under both isolation levels, or a fault of the case's kind naming its file. Driven through the
reader's own data source classes (options, planning, tasks, Arrow batches), which is what Spark calls."""
from __future__ import annotations

import json

import pytest
from pyspark.sql.types import StructField, StructType

from seglog.errors import SeglogError
from seglog.source.reader import SeglogDataSource, arrow_schema
from tests.conformance.test_conformance_python import CASES, CORPUS, check_fault, first_difference


def _rows(root, topic: str, partition: int, isolation: str) -> list[dict]:
    source = SeglogDataSource({"path": str(root), "topic": topic, "includeHeaders": "true",
                               "kafka.isolation.level": isolation})
    source.schema()
    names = arrow_schema(True).names
    reader = source.reader(StructType([StructField(n, StructType()) for n in names]))
    out = []
    for task in reader.partitions():
        for batch in reader.read(task):
            for r in batch.to_pylist():
                if r["partition"] != partition:
                    continue
                row = {"offset": r["offset"], "timestamp": int(r["timestamp"].timestamp() * 1000)
                       if r["timestamp"] is not None else None,
                       "key": None if r["key"] is None else r["key"].hex(),
                       "value": None if r["value"] is None else r["value"].hex()}
                if r["headers"]:
                    row["headers"] = [[h["key"], None if h["value"] is None else h["value"].hex()] for h in r["headers"]]
                out.append(row)
    return out


@pytest.mark.parametrize("case", CASES)
def test_the_fallback_reader_reads_the_corpus_as_the_construction_says(case):
    exp = json.loads((CORPUS / case / "expected.json").read_text())
    read = exp["verdict"]["read"]
    for isolation in ("read_uncommitted", "read_committed"):
        got, exc = None, None
        try:
            got = _rows(CORPUS / case, exp["topic"], exp["partition"], isolation)
        except (SeglogError, OSError) as e:
            exc = e
        if read["status"] == "ok":
            assert exc is None, f"{case} ({isolation}): raised {type(exc).__name__}: {exc}"
            want = exp["records"][isolation]
            assert got == want, f"{case} ({isolation}): {first_difference(got, want)}"
        else:
            problem = check_fault(read, exc, f"the fallback reader ({isolation})")
            assert problem is None, problem + ("" if got is None else f" (returned {len(got)} rows)")
