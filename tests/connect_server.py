"""A real Spark Connect server for tests: Spark's own `SparkConnectServer` started with `spark-submit`
from the installed pyspark, `local[2]`, loopback only, with seglog's connector jar (`--jars`), as a
user runs one (README, "Spark Connect"). The client side is pyspark's Connect client
(`pip install seglog[connect]`), which holds no JVM: `pyspark.sql.connect.session.SparkSession` is
used directly, so a classic session may live in the same test process.

- ``ConnectServer(workdir).start()`` waits (bounded) for the gRPC port; on failure it raises
  ``ConnectServerError`` with the tail of the server's log. ``stop()`` ends it (SIGTERM, then SIGKILL).
- ``session()``: a new client session to it (its own session id: temporary views, conf).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.ports import free_port

START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServerError(RuntimeError):
    pass


class ConnectServer:
    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.port = free_port()
        self.log_path = self.workdir / "connect-server.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self) -> "ConnectServer":
        import pyspark

        from seglog.jvm import jar_path

        home = Path(pyspark.__file__).parent
        env = dict(os.environ, SPARK_HOME=str(home), PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
        cmd = [str(home / "bin" / "spark-submit"), "--master", "local[2]", "--class", SERVER_CLASS,
               "--jars", ",".join([str(jar_path()), *self._server_jars(home)]), "--driver-memory", "2g",
               "--conf", f"spark.connect.grpc.binding.port={self.port}",
               "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4",
               "spark-internal"]
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                         start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise ConnectServerError(f"the Spark Connect server exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise ConnectServerError(f"no Spark Connect server on port {self.port} after "
                                             f"{START_TIMEOUT_S} s:\n{self.log_tail()}") from None
                time.sleep(0.2)

    @staticmethod
    def _server_jars(home: Path) -> list[str]:
        """Spark Connect's server jar where pyspark ships none (3.5's pip pyspark has only the client):
        scripts/spark-line.sh resolves it with Maven and names it in SEGLOG_CONNECT_JARS."""
        if next((home / "jars").glob("spark-connect_*.jar"), None) is not None:
            return []
        jars = [j for j in os.environ.get("SEGLOG_CONNECT_JARS", "").split(",") if j]
        if not jars:
            raise ConnectServerError(f"pyspark at {home} ships no Spark Connect server jar (spark-connect_*.jar): "
                                     f"set SEGLOG_CONNECT_JARS (scripts/spark-line.sh does)")
        return jars

    def session(self):
        from pyspark.sql.connect.session import SparkSession

        return SparkSession.builder.remote(self.url).create()

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)      # spark-submit's JVM and anything it started
        try:
            self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
