"""Each connector jar loads on the oldest Java its Spark line runs on: a class file's major version (bytes
6-7 of its header) is the oldest JVM that loads it, and a newer one is an UnsupportedClassVersionError at
the first class Spark touches. Spark 3.5 runs on Java 11 (major 55), so both 3.5 jars, shaded kafka-clients
and JNA included, must be Java 11 bytecode (jvm/pom.xml, profile spark-3.5: release 11); Spark 4.x needs
Java 17 (major 61). Reads the jars seglog.jvm.JARS names, as scripts/build-jar.sh built them."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from seglog import jvm

JAVA_MAJOR = {"3.5": 55}     # Java 11; every other line: Java 17
JAVA_17 = 61
JAR_DIR = Path(jvm.__file__).resolve().parent / "jars"


def _too_new(jar: Path, limit: int) -> list[str]:
    """The classes in `jar` a JVM of class version `limit` cannot load. Multi-release entries
    (META-INF/versions/<N>/) load only on Java N and later, so each is held to its own N."""
    bad = []
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if not name.endswith(".class"):
                continue
            with z.open(name) as f:
                head = f.read(8)
            assert head[:4] == b"\xca\xfe\xba\xbe", f"{jar.name}: {name} is not a class file"
            major = int.from_bytes(head[6:8], "big")
            parts = name.split("/")
            allowed = 44 + int(parts[2]) if name.startswith("META-INF/versions/") else limit
            if major > allowed:
                bad.append(f"{name} (class version {major} > {allowed})")
    return bad


@pytest.mark.parametrize("line,scala", sorted(jvm.JARS))
def test_each_connector_jar_loads_on_the_oldest_java_of_its_spark_line(line, scala):
    jar = Path(jvm.jar_path(line, scala))
    assert jar.parent == JAR_DIR
    bad = _too_new(jar, JAVA_MAJOR.get(line, JAVA_17))
    assert not bad, f"{jar.name} (Spark {line}, Scala {scala}) has {len(bad)} classes too new: {bad[:5]}"
