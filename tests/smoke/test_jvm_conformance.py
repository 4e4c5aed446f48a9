"""The JVM conformance runners on this Spark line (tests/jvm_conformance.py): compiled and run against the
connector jar seglog.jvm.jar_path() picks for the running pyspark and that pyspark's own jars (its Spark, Scala
and Jackson). scripts/spark-line.sh runs it on every line; a vector that fails on a line fails here."""
from __future__ import annotations

from pathlib import Path

import pytest

from seglog import jvm
from tests.jvm_conformance import run_conformance

pytestmark = [pytest.mark.smoke]


@pytest.mark.timeout(900)
def test_the_jvm_conformance_runners_pass_on_this_spark_line(tmp_path):
    import pyspark

    passed = run_conformance(jvm.jar_path(), str(Path(pyspark.__file__).parent / "jars" / "*"), tmp_path)
    assert passed >= 40, f"only {passed} JVM conformance tests ran on pyspark {pyspark.__version__}"
