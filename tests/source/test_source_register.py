"""`seglog.source.register`: the JVM reader when the session loaded the connector jar; without it a
clear ConnectorJarError, or the Python reader only when asked for (a subprocess: a session without the jar)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

NO_JAR = textwrap.dedent("""
    import sys
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from seglog.errors import ConnectorJarError
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.log import Log
    from seglog.source import register
    root = sys.argv[1]
    with Log.open(root + "/t-0", outside_commit_log=True) as log:
        log.append_columns(pa.array([b"v%d" % i for i in range(30)]), timestamps=np.arange(30, dtype=np.int64))
        log.flush()
    CommitLog(root, "t").commit("w", 0, {0: 30})
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        register(spark)
        print("no error")
    except ConnectorJarError as e:
        print("refused:", e)
    print("fallback:", register(spark, python_fallback=True))
    print("rows:", spark.read.format("seglog").option("topic", "t").load(root).count())
    # The Kafka-source options the Python reader shares with the JVM one
    print("pattern:", spark.read.format("seglog").option("subscribePattern", "t|u").load(root).count())
    df = (spark.read.format("seglog").option("assign", '{"t": [0]}').option("maxRecordsPerPartition", 7)
          .option("startingOffsetsByTimestamp", '{"t": {"0": -2}}').load(root))
    print("assign:", df.count(), df.rdd.getNumPartitions())
    try:
        spark.read.format("seglog").option("topic", "t").option("kafka.bootstrap.servers", "h:9092").load(root)
    except Exception as e:
        print("broker:", "BrokerOptionError" in str(e) and "seglog has none" in str(e))
""")


def test_without_the_jar(tmp_path):
    out = subprocess.run([sys.executable, "-c", NO_JAR, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("refused: this Spark session has no seglog connector") and "spark.jars=" in lines[0]
    assert lines[1:] == ["fallback: python", "rows: 30", "pattern: 30", "assign: 30 5", "broker: True"]


def test_with_the_jar(spark):
    from seglog.source import register

    assert register(spark) == "jvm"
    assert spark._jvm.io.seglog.spark.SeglogProvider().shortName() == "seglog"
