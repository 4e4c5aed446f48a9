"""Kafka's default partitioner, computed in the JVM so that the write needs one Python pass.

Choice (measured, see the sink's docstring): Spark ships no kafka-clients jar, and `reflect` /
`java_method` accept no binary arguments, so a keyed row's partition comes from a tiny Java UDF
(`seglog.Murmur2Partition`: murmur2 of the key bytes, `& 0x7fffffff`, modulo the partition count).
Its source lives here, is compiled with `javac` against pyspark's jars on first use, and the jar is
cached under ``$SEGLOG_CACHE`` (default ``~/.cache/seglog``), keyed by the source's hash. Where no
`javac` exists (a JRE-only image) `jvm_partitioner_available()` is False and the sink falls back to
a first Python pass that computes the partition column (`sink.partitioner`).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

UDF_NAME = "seglog_murmur2_partition"
CLASS_NAME = "seglog.Murmur2Partition"

# The algorithm is Kafka's murmur2 (seed 0x9747b28c, little-endian 4-byte words); the code is ours.
JAVA_SOURCE = r"""
package seglog;

import org.apache.spark.sql.api.java.UDF2;

/** Kafka's default partition of a keyed record: (murmur2(key) & 0x7fffffff) % partitions. */
public final class Murmur2Partition implements UDF2<byte[], Integer, Integer> {
    private static final long serialVersionUID = 1L;

    public static int murmur2(byte[] data) {
        final int m = 0x5bd1e995;
        final int length = data.length;
        int h = 0x9747b28c ^ length;
        final int words = length >>> 2;
        for (int i = 0; i < words; i++) {
            int j = i << 2;
            int k = (data[j] & 0xff) | ((data[j + 1] & 0xff) << 8)
                  | ((data[j + 2] & 0xff) << 16) | ((data[j + 3] & 0xff) << 24);
            k *= m;
            k ^= k >>> 24;
            k *= m;
            h *= m;
            h ^= k;
        }
        int tail = words << 2;
        int rest = length & 3;
        if (rest == 3) h ^= (data[tail + 2] & 0xff) << 16;
        if (rest >= 2) h ^= (data[tail + 1] & 0xff) << 8;
        if (rest >= 1) { h ^= data[tail] & 0xff; h *= m; }
        h ^= h >>> 13;
        h *= m;
        h ^= h >>> 15;
        return h;
    }

    @Override
    public Integer call(byte[] key, Integer partitions) {
        if (key == null || partitions == null || partitions <= 0) return null;
        return (murmur2(key) & 0x7fffffff) % partitions;
    }
}
"""

_lock = threading.Lock()


def _cache_dir() -> Path:
    return Path(os.environ.get("SEGLOG_CACHE") or Path.home() / ".cache" / "seglog")


def jvm_partitioner_available() -> bool:
    return shutil.which("javac") is not None and shutil.which("jar") is not None


def _pyspark_classpath() -> str:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    return str(jars / "*")


def build_jar() -> Path:
    """Compile the UDF once per source version; later calls return the cached jar."""
    digest = hashlib.sha256(JAVA_SOURCE.encode()).hexdigest()[:16]
    target = _cache_dir() / f"seglog-murmur2-{digest}.jar"
    with _lock:
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="seglog-javac-") as tmp:
            src = Path(tmp) / "src" / "seglog" / "Murmur2Partition.java"
            src.parent.mkdir(parents=True)
            src.write_text(JAVA_SOURCE)
            classes = Path(tmp) / "classes"
            classes.mkdir()
            subprocess.run(["javac", "-nowarn", "--release", "17", "-cp", _pyspark_classpath(),
                            "-d", str(classes), str(src)], check=True, capture_output=True)
            built = Path(tmp) / "out.jar"
            subprocess.run(["jar", "cf", str(built), "-C", str(classes), "."], check=True,
                           capture_output=True)
            # Rename into place: a concurrent builder (another process) just overwrites the same bytes.
            tmp_target = target.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(built, tmp_target)
            os.replace(tmp_target, target)
    return target


def register_udf(spark) -> bool:
    """Make `seglog_murmur2_partition(key binary, n int) -> int` callable in `spark`'s SQL.

    Returns False if it cannot be (no javac): the caller then computes partitions in Python.
    """
    if not jvm_partitioner_available():
        return False
    jar = build_jar()
    from pyspark.sql.types import IntegerType

    conf_key = "spark.seglog.murmur2.jar"
    if spark.sparkContext.getLocalProperty(conf_key) != str(jar):
        spark.sql(f"ADD JAR '{jar}'")
    spark.udf.registerJavaFunction(UDF_NAME, CLASS_NAME, IntegerType())
    return True
