"""Spark 3.5 for Scala 2.13, which no pip pyspark ships (pyspark 3.5 is Scala 2.12): seglog-spark-3.5_2.13.jar
on Spark 3.5.0 for Scala 2.13 as Maven Central serves it (spark-sql_2.13 and its dependencies, copied once into
~/.cache/seglog/jars/), on a plain `java`: the JVM conformance runners (tests/jvm_conformance.py) and
a local write and read through format("seglog") (io.seglog.spark.LineRoundTrip)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from seglog import jvm
from tests.jvm_conformance import REPO, TEST_SRC, compile_test_sources, jdk, run_conformance

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK = "3.5.0"          # the Spark the 3.5 jars compile against (jvm/pom.xml, profile spark-3.5)
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "seglog" / "jars" / f"spark-sql_2.13-{SPARK}"
# what Spark's launcher passes to its JVM on Java 17 (JavaModuleOptions); a plain `java` must pass them itself
ADD_OPENS = tuple(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
    "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
    "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch", "sun.nio.cs", "sun.security.action",
    "sun.util.calendar"))


@pytest.fixture(scope="module")
def spark_jars():
    """Spark 3.5 for Scala 2.13: spark-sql_2.13 and everything it needs at run time, as `dir/*`."""
    done = CACHE / ".complete"
    if not done.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / "pom.xml").write_text(f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.seglog.lines</groupId><artifactId>spark-3.5-scala-2.13</artifactId><version>1</version>
  <dependencies><dependency><groupId>org.apache.spark</groupId><artifactId>spark-sql_2.13</artifactId>
    <version>{SPARK}</version></dependency></dependencies>
</project>
""")
        run = subprocess.run(["mvn", "-q", "-B", "-f", str(CACHE / "pom.xml"), "dependency:copy-dependencies",
                              f"-DoutputDirectory={CACHE / 'jars'}"], capture_output=True, text=True, timeout=1800)
        assert run.returncode == 0, f"Maven could not resolve spark-sql_2.13:{SPARK}:\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
        done.touch()
    assert any((CACHE / "jars").glob("scala-library-2.13.*.jar")), "the classpath is not Scala 2.13"
    return str(CACHE / "jars" / "*")


@pytest.mark.timeout(1800)
def test_the_jvm_conformance_runners_pass_on_spark_35_for_scala_213(spark_jars, tmp_path):
    assert run_conformance(jvm.jar_path("3.5", "2.13"), spark_jars, tmp_path, ADD_OPENS) >= 40


@pytest.mark.timeout(1800)
def test_a_write_and_reads_through_the_connector_on_spark_35_for_scala_213(spark_jars, tmp_path):
    cp = os.pathsep.join([jvm.jar_path("3.5", "2.13"), spark_jars])
    classes = tmp_path / "classes"
    compile_test_sources(cp, classes, [str(TEST_SRC / "io/seglog/spark/LineRoundTrip.java")])
    run = subprocess.run([jdk("java"), *ADD_OPENS, "-cp", os.pathsep.join([str(classes), cp]),
                          "io.seglog.spark.LineRoundTrip", str(tmp_path / "log")],
                         capture_output=True, text=True, timeout=1500, cwd=REPO)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "round trip ok" in out, out[-6000:]
    assert f"Spark {SPARK}, Scala 2.13." in out, out[-3000:]
