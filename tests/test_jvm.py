"""The connector jar (jvm/, seglog.jvm): shipped at the wheel's version and loaded by the session."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from seglog import jvm
from seglog.errors import ConnectorJarError, UnsupportedSparkError

REPO = Path(__file__).resolve().parents[1]


def test_the_jar_the_java_and_the_wheel_carry_one_version():
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    pom = re.search(r"<artifactId>seglog-spark</artifactId>\s*<version>([^<]+)</version>",
                    (REPO / "jvm/pom.xml").read_text()).group(1)
    java = re.search(r'VERSION = "([^"]+)"',
                     (REPO / "jvm/src/main/java/io/seglog/spark/Connector.java").read_text()).group(1)
    assert wheel == pom == java


def test_with_jar_puts_the_connector_first_once():
    jar = jvm.jar_path()
    assert Path(jar).is_file()
    assert jvm.with_jar(None) == jar
    assert jvm.with_jar(f"/x/a.jar,{jar},/y/b.jar") == f"{jar},/x/a.jar,/y/b.jar"


@pytest.mark.spark
def test_the_test_session_loads_this_connector(spark):
    assert jvm.check_session(spark) == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    kafka = spark.sparkContext._jvm.io.seglog.spark.Connector.kafkaVersion()
    assert re.fullmatch(r"\d+\.\d+\.\d+", kafka), kafka


def test_a_missing_jar_is_a_typed_error(monkeypatch, tmp_path):
    monkeypatch.setattr(jvm, "__file__", str(tmp_path / "jvm.py"))
    with pytest.raises(ConnectorJarError, match="build-jar.sh"):
        jvm.jar_path()
    with pytest.raises(ConnectorJarError, match="build-jar.sh"):
        jvm.jar_path("3.5.9")


# The Spark lines README's table names, with the jar each loads (seglog.jvm.JARS is the one home).
LINES = {"3.5.0": "seglog-spark-3.5_2.12.jar", "3.5.9": "seglog-spark-3.5_2.12.jar",
         "4.0.5": "seglog-spark-4_2.13.jar", "4.1.1": "seglog-spark-4_2.13.jar", "4.1.4": "seglog-spark-4_2.13.jar",
         "4.2.1": "seglog-spark-4_2.13.jar", "4.3.0": "seglog-spark-4_2.13.jar"}


@pytest.mark.parametrize("version", sorted(LINES))
def test_each_spark_line_gets_its_jar_and_the_wheel_ships_it(version):
    path = Path(jvm.jar_path(version))
    assert path.name == LINES[version] and path.is_file()


def test_spark_35_for_scala_213_gets_its_own_build():
    assert Path(jvm.jar_path("3.5.9", "2.13")).name == "seglog-spark-3.5_2.13.jar"


def test_the_running_pyspark_picks_its_jar():
    import pyspark

    assert Path(jvm.jar_path()).name == LINES.get(pyspark.__version__, "seglog-spark-4_2.13.jar")
    assert Path(jvm.with_jar(None)).name == Path(jvm.jar_path()).name


@pytest.mark.parametrize("version,scala", [("3.4.1", None), ("4.4.0", None), ("5.0.0", None), ("4.1.1", "2.12"),
                                           ("3.5.1", "2.11"), ("", None), ("four", None)])
def test_a_spark_without_a_connector_is_a_typed_error_naming_the_supported_ones(version, scala):
    with pytest.raises(UnsupportedSparkError, match=r"3\.5 \(Scala 2\.12\), 3\.5 \(Scala 2\.13\), 4\.0 \(Scala 2\.13\).*4\.3 \(Scala 2\.13\)"):
        jvm.jar_path(version, scala)


def test_the_extras_admit_every_supported_pyspark_and_cap_none_below_the_newest():
    """`pip install pyspark==V seglog[spark,connect]` keeps V for every line (scripts/spark-line.sh installs it for
    real on each); test- and bench-only pins (delta-spark) stay out of the users' extras."""
    from packaging.requirements import Requirement

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in ("spark", "connect"):
        pins = [Requirement(r) for r in extras[extra] if Requirement(r).name == "pyspark"]
        assert pins, extra
        for version in LINES:
            assert all(p.specifier.contains(version) for p in pins), (extra, version)
        assert not any(Requirement(r).name == "delta-spark" for r in extras[extra])
    # pyspark 3.5's Connect pins numpy < 2, on which pyarrow 26 fails at import (scripts/spark-line.sh 3.5.9 found it)
    pyarrow = [Requirement(r) for r in extras["connect"] if Requirement(r).name == "pyarrow"]
    assert pyarrow and not any(p.specifier.contains("26.0.0") for p in pyarrow)
    pandas = next(Requirement(r) for r in extras["spark"] if Requirement(r).name == "pandas")
    assert not pandas.specifier.contains("3.0.0") and pandas.specifier.contains("2.2.3")
