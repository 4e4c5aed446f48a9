"""Run the connector jar's format writers (`io.seglog.spark.tools.FormatTool`) in their own JVM: the
differential tests hold the JVM's writers of the shared formats to the Python core's."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from seglog import jvm
from tests.kafka_tools import java_executable

TOOL = "io.seglog.spark.tools.FormatTool"


def classpath() -> str:
    import pyspark

    # Jackson and the rest the jar leaves to Spark (`provided`) come from PySpark's own jars
    return os.pathsep.join([jvm.jar_path(), str(Path(pyspark.__file__).parent / "jars" / "*")])


def command(*args: object) -> list[str]:
    return [java_executable(), "-cp", classpath(), TOOL, *map(str, args)]


def run(*args: object, ok: bool = True) -> dict | None:
    """One FormatTool call; its JSON answer. `ok=False`: the call must fail, and its error is returned."""
    proc = subprocess.run(command(*args), capture_output=True, text=True, timeout=120)
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise AssertionError(f"FormatTool {args} printed nothing (exit {proc.returncode}): {proc.stderr}")
    answer = json.loads(lines[-1])
    if ok and proc.returncode != 0:
        raise AssertionError(f"FormatTool {args} failed: {answer} {proc.stderr[-2000:]}")
    if not ok and proc.returncode == 0:
        raise AssertionError(f"FormatTool {args} should have failed, answered {answer}")
    return answer


class Server:
    """One FormatTool JVM for many calls (`FormatTool serve`): a JSON line per call, a JSON line per answer.
    A context manager; `call` as `run`."""

    def __init__(self):
        self._proc = subprocess.Popen(command("serve"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def call(self, *args: object, ok: bool = True) -> dict | None:
        self._proc.stdin.write(json.dumps([str(a) for a in args]) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise AssertionError(f"FormatTool serve ended (exit {self._proc.poll()}) on {args}")
        answer = json.loads(line)
        failed = isinstance(answer, dict) and "error" in answer
        if ok and failed:
            raise AssertionError(f"FormatTool {args} failed: {answer}")
        if not ok and not failed:
            raise AssertionError(f"FormatTool {args} should have failed, answered {answer}")
        return answer

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=60)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
