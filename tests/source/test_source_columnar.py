"""Issue 28 through real local Spark: columnar batches are the read's output (batch and streaming), equal to the
row output row for row; aggregates pushed down are answered on the driver and equal a brute-force count over
the records, for random ranges, on compacted topics (gaps) and under read_committed."""
from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.source.test_source_spark import write_partition

pytestmark = pytest.mark.spark

CORPUS = Path(__file__).resolve().parents[1] / "conformance" / "corpus"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def ok_cases() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir()
                  if (p / "expected.json").exists()
                  and json.loads((p / "expected.json").read_text())["verdict"]["read"]["status"] == "ok")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("seglog-columnar")
    write_partition(root, "events", 0, 400, headers=True)
    write_partition(root, "events", 1, 300, headers=True)
    write_partition(root, "events", 2, 0)
    return root


def read(spark, root, topic="events", **options):
    r = spark.read.format("seglog").option("topic", topic)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(str(root))


def plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def rows(df) -> list:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: repr(r))


def test_batch_read_is_columnar_and_equals_the_row_output(spark, root):
    from pyspark.sql import functions as F

    columnar = read(spark, root, includeHeaders="true", maxRowsPerBatch=7)
    by_rows = read(spark, root, includeHeaders="true", columnarReads="false")
    assert "ColumnarToRow" in plan(columnar) and "BatchScan" in plan(columnar)
    assert "ColumnarToRow" not in plan(by_rows)
    want = rows(by_rows)
    assert len(want) == 700
    assert rows(columnar) == want
    # pruned columns and a pushed row filter: the same rows through both outputs
    ts = EPOCH + dt.timedelta(milliseconds=1_700_000_000_300)
    for df_of in (lambda d: d.select("value", "offset"), lambda d: d.where(F.col("timestamp") >= F.lit(ts))):
        assert rows(df_of(columnar)) == rows(df_of(by_rows))
    assert columnar.where(F.col("timestamp") >= F.lit(ts)).count() == by_rows.where(F.col("timestamp") >= F.lit(ts)).count()


def test_stream_read_is_columnar_and_equals_the_row_output(spark, root, tmp_path):
    got = {}
    for mode in ("true", "false"):
        name = f"columnar_{mode}"
        q = (spark.readStream.format("seglog").option("topic", "events").option("startingOffsets", "earliest")
             .option("includeHeaders", "true")
             .option("columnarReads", mode).option("maxRowsPerBatch", "5").load(str(root))
             .writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None
        executed = q._jsq.streamingQuery().lastExecution().executedPlan().toString()
        assert ("ColumnarToRow" in executed) == (mode == "true"), executed
        got[mode] = rows(spark.table(name))
    assert len(got["true"]) == 700
    assert got["true"] == got["false"]


def test_pushed_aggregate_shows_in_the_plan_and_runs_no_scan(spark, root):
    from pyspark.sql import functions as F

    df = read(spark, root).groupBy("partition").agg(F.count("*").alias("n"), F.max("offset").alias("last"))
    optimized = df._jdf.queryExecution().optimizedPlan().toString()
    assert "RelationV2[partition#" in optimized and "COUNT(*)#" in optimized and "MAX(offset)#" in optimized, optimized
    assert "BatchScan" not in plan(df) and "LocalTableScan" in plan(df)
    assert sorted((r.partition, r.n, r.last) for r in df.collect()) == [(0, 400, 399), (1, 300, 299)]
    # what seglog cannot answer exactly is left to Spark (a sum of a column, a filter it cannot push)
    assert "BatchScan" in plan(read(spark, root).agg(F.sum("partition")))
    assert read(spark, root).where(F.length("value") > 0).count() == 700


def brute(records, lo, hi, ts_lo, ts_hi):
    """COUNT(*), MIN/MAX(offset), MIN/MAX(timestamp) of the records in the range, by brute force."""
    kept = [r for r in records if (lo is None or r["offset"] >= lo) and (hi is None or r["offset"] < hi)
            and (ts_lo is None or r["timestamp"] >= ts_lo) and (ts_hi is None or r["timestamp"] <= ts_hi)]
    if not kept:
        return (0, None, None, None, None)
    offs = [r["offset"] for r in kept]
    tss = [r["timestamp"] for r in kept]
    return (len(kept), min(offs), max(offs), min(tss) * 1000, max(tss) * 1000)


@pytest.fixture(scope="module")
def corpus_copy(tmp_path_factory):
    """The conformance corpus's readable cases (copied: nothing reads from the repository's files), with their
    expected records: compacted (gaps), transactions (read_committed), every codec, merged, no timestamps."""
    out = tmp_path_factory.mktemp("corpus")
    cases = {}
    for name in ok_cases():
        shutil.copytree(CORPUS / name, out / name)
        cases[name] = json.loads((CORPUS / name / "expected.json").read_text())
    return out, cases


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_pushed_aggregates_equal_a_brute_force_count(spark, corpus_copy, data):
    from pyspark.sql import functions as F

    out, cases = corpus_copy
    name = data.draw(st.sampled_from(sorted(cases)), label="case")
    exp = cases[name]
    iso = data.draw(st.sampled_from(["read_uncommitted", "read_committed"]), label="isolation")
    records = exp["records"][iso]
    top = max([r["offset"] for r in exp["records"]["read_uncommitted"]], default=0) + 2
    lo = data.draw(st.none() | st.integers(0, top), label="lo")
    hi = data.draw(st.none() | st.integers(0, top), label="hi")
    stamps = sorted({r["timestamp"] for r in records if r["timestamp"] >= 0}) or [0]
    ts_lo = data.draw(st.none() | st.sampled_from(stamps), label="ts_lo")
    ts_hi = data.draw(st.none() | st.sampled_from(stamps), label="ts_hi")
    group = data.draw(st.sampled_from([[], ["partition"], ["topic"]]), label="group by")
    # a count alone, or with offsets, walks headers only on a dense log; timestamps decode: draw which
    picked = data.draw(st.sampled_from([(0,), (0, 1, 2), (0, 1, 2, 3, 4), (0, 4)]), label="aggregates")

    # Kafka's check.crcs: without CRC checks a count reads batch headers, and must answer exactly the same
    crcs = data.draw(st.sampled_from(["true", "false"]), label="checkCrcs")
    df = read(spark, out / name, topic=exp["topic"], checkCrcs=crcs, **{"kafka.isolation.level": iso})
    if lo is not None:
        df = df.where(F.col("offset") >= lo)
    if hi is not None:
        df = df.where(F.col("offset") < hi)
    if ts_lo is not None:
        df = df.where(F.col("timestamp") >= F.lit(EPOCH + dt.timedelta(milliseconds=ts_lo)))
    if ts_hi is not None:
        df = df.where(F.col("timestamp") <= F.lit(EPOCH + dt.timedelta(milliseconds=ts_hi)))
    columns = [F.count("*"), F.min("offset"), F.max("offset"),
               F.unix_micros(F.min("timestamp")), F.unix_micros(F.max("timestamp"))]
    agg = df.groupBy(*group).agg(*[columns[i] for i in picked])
    optimized = agg._jdf.queryExecution().optimizedPlan().toString()
    assert "COUNT(*)#" in optimized or "LocalRelation <empty>" in optimized, optimized   # or Spark saw no rows can pass
    got = [tuple(r)[len(group):] for r in agg.collect()]
    want = brute(records, lo, hi, ts_lo, ts_hi)
    want = tuple(want[i] for i in picked)
    assert got == ([want] if want[0] or not group else []), (name, iso, crcs, lo, hi, ts_lo, ts_hi, group, picked)


@pytest.mark.parametrize("case", ["torn-tail-sealed", "flipped-length", "log-cut-below-index", "torn-tail-active",
                                  "empty-sealed-log", "flipped-base-offset", "flipped-body-byte"])
def test_a_pushed_count_reports_what_its_walk_judges(spark, tmp_path, case):
    """The pushed count walks the batches a read walks, each checked whole (docs/spec.md §8): torn tails,
    damaged lengths or offsets, lost records and a flipped byte inside a batch's body are reported as by a
    read of the records, never counted short or counted over damage (a flipped byte is reported by every
    reader, docs/spec.md §11)."""
    from pyspark.sql import functions as F

    shutil.copytree(CORPUS / case, tmp_path / case)
    df = read(spark, tmp_path / case, topic="t")
    with pytest.raises(Exception, match="corrupt|torn|lost|past the end|offset"):
        df.select("value").collect()
    with pytest.raises(Exception, match="corrupt|torn|lost|past the end|offset"):
        df.count()
    with pytest.raises(Exception, match="corrupt|torn|lost|past the end|offset"):
        df.agg(F.max("timestamp")).collect()      # a timestamp aggregate too


@pytest.mark.parametrize("case", ["torn-tail-sealed", "flipped-length", "log-cut-below-index", "torn-tail-active",
                                  "empty-sealed-log", "flipped-base-offset", "flipped-leader-epoch"])
def test_without_crc_checks_damaged_structure_is_still_reported(spark, tmp_path, case):
    """checkCrcs=false (Kafka's check.crcs) skips the CRC only: a torn tail, a damaged length, offset or leader
    epoch, lost records are reported by a read and by the pushed count (which then reads only batch headers)."""
    shutil.copytree(CORPUS / case, tmp_path / case)
    df = read(spark, tmp_path / case, topic="t", checkCrcs="false")
    with pytest.raises(Exception, match="corrupt|torn|lost|past the end|offset|epoch"):
        df.select("value").collect()
    with pytest.raises(Exception, match="corrupt|torn|lost|past the end|offset|epoch"):
        df.count()


def test_without_crc_checks_a_flipped_body_byte_is_counted_from_the_headers(spark, tmp_path):
    """The one damage only a CRC shows (a flipped bit inside a batch's records): the default reports it (above);
    checkCrcs=false counts the committed records from the batch headers, as Kafka's consumer with check.crcs=false
    would read them."""
    shutil.copytree(CORPUS / "flipped-body-byte", tmp_path / "c")
    exp = json.loads((CORPUS / "flipped-body-byte" / "expected.json").read_text())
    df = read(spark, tmp_path / "c", topic="t", checkCrcs="false")
    assert "LocalTableScan" in plan(df.groupBy().count())
    assert df.count() == exp["committed_end"]
