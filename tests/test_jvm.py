"""The connector jar (jvm/, seglog.jvm): shipped at the wheel's version and loaded by the session."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from seglog import jvm
from seglog.errors import ConnectorJarError

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
