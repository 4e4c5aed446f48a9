"""The JVM conformance runners on this Spark line: the JUnit classes that read tests/conformance/ (the vector
files through ConformanceVectors, the corpus) compiled and run against the connector jar seglog.jvm.jar_path()
picks for the running pyspark and that pyspark's own jars (its Spark, Scala and Jackson), not the Spark
Maven builds with. scripts/spark-line.sh runs it on every line; a vector that fails on a line fails here.
io.seglog.spark.LineConformance is the launcher; JUnit and the kafka-clients the runners build batches with
come from Maven (as jvm/pom.xml resolves them)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from seglog import jvm

pytestmark = [pytest.mark.smoke]

REPO = Path(__file__).resolve().parents[2]
TEST_SRC = REPO / "jvm/src/test/java"
CORPUS = REPO / "tests/conformance/corpus"
# what the runners need beside the line's jars: JUnit (with its launcher) and kafka-clients
MAVEN_GROUPS = "org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian,org.apache.kafka"


def _runners() -> list[str]:
    """The JUnit classes that read tests/conformance/ (through ConformanceVectors or the corpus property)."""
    names = []
    for src in sorted(TEST_SRC.rglob("*Test.java")):
        text = src.read_text()
        if "ConformanceVectors." in text or '"seglog.conformance.corpus"' in text:
            names.append(".".join(src.relative_to(TEST_SRC).with_suffix("").parts))
    return names


def _maven_classpath(tmp: Path) -> str:
    out = tmp / "cp.txt"
    run = subprocess.run(["mvn", "-q", "-B", "-f", str(REPO / "jvm/pom.xml"), "dependency:build-classpath",
                          "-Dmdep.includeScope=test", f"-DincludeGroupIds={MAVEN_GROUPS}", f"-Dmdep.outputFile={out}"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"Maven could not resolve the runners' JUnit and kafka-clients:\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
    return out.read_text().strip()


@pytest.mark.timeout(900)
def test_the_jvm_conformance_runners_pass_on_this_spark_line(tmp_path):
    import pyspark

    runners = _runners()
    # the eight vector files' runners and the corpus runners at least (a rename must not shrink this silently)
    assert len(runners) >= 10 and "io.seglog.spark.conformance.ConformanceTest" in runners, runners
    connector = jvm.jar_path()
    spark_jars = str(Path(pyspark.__file__).parent / "jars" / "*")
    java_home = os.environ.get("JAVA_HOME")
    javac = str(Path(java_home) / "bin/javac") if java_home else shutil.which("javac")
    java = str(Path(java_home) / "bin/java") if java_home else shutil.which("java")
    assert javac and java, "a JDK (javac) is needed to compile the conformance runners"
    cp = os.pathsep.join([connector, spark_jars, _maven_classpath(tmp_path)])
    classes = tmp_path / "classes"
    sources = [str(TEST_SRC / (n.replace(".", "/") + ".java")) for n in runners]
    sources.append(str(TEST_SRC / "io/seglog/spark/LineConformance.java"))
    built = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", cp, "-sourcepath",
                            str(TEST_SRC), *sources], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"the runners do not compile against pyspark {pyspark.__version__}'s jars:\n" \
                                  f"{built.stdout[-3000:]}{built.stderr[-3000:]}"
    run = subprocess.run([java, "-cp", os.pathsep.join([str(classes), cp]), f"-Dseglog.conformance.corpus={CORPUS}",
                          "io.seglog.spark.LineConformance", *runners],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    report = run.stdout + run.stderr
    assert run.returncode == 0, f"the JVM conformance runners failed on pyspark {pyspark.__version__} with " \
                                f"{Path(connector).name}:\n{report[-6000:]}"
    succeeded = int(re.search(r"(\d+) tests successful", report).group(1))
    assert succeeded > 0 and re.search(r"\b0 tests failed", report), report[-3000:]
