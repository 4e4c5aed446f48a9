"""A real Apache Kafka broker for tests: KRaft, one node (broker and controller), loopback only.

Kafka's behaviour is the question in these tests (docs/spec.md §2.2), so the judge is Kafka itself:
the broker runs from the same Maven Central jars that ``tests/kafka_tools.py`` caches (``kafka_2.13``
holds ``kafka.Kafka`` and ``kafka.tools.StorageTool``).

- ``KafkaBroker(workdir)``: writes ``server.properties`` (free ports on 127.0.0.1, log dirs under
  ``workdir``, ``log.retention.ms=-1`` so old test timestamps are never deleted), formats the storage
  once (``kafka-storage format``), and starts/stops the JVM.
- ``start()`` waits (bounded) for the broker to say it started and to accept connections; on failure
  it raises ``KafkaBrokerError`` with the tail of the broker's own log.
- ``stop()`` ends the broker by its pid (SIGTERM: a clean shutdown that flushes and seals; SIGKILL if it
  does not exit in time). ``restart()`` = stop + start: the partition leader epoch goes up.
- ``partition_dir(topic, p)``: the broker's folder for one partition (read it after ``stop()``).

Stdlib only. Run ``python3 tests/kafka_broker.py`` to start one by hand (Ctrl-C stops it).
"""
from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):                      # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.kafka_tools import KafkaToolError, cache_dir, ensure_jars, java_executable  # noqa: E402

from tests.ports import free_port

KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"           # `kafka-storage.sh` in Kafka 4.1's distribution
START_TIMEOUT_S = 120.0                             # 10-20 s on two busy cores; generous, still bounded
STOP_TIMEOUT_S = 60.0
_STARTED_LINE = "Kafka Server started"              # KafkaRaftServer's log line once it serves

_LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d{HH:mm:ss,SSS}] %p %m (%c{1})%n
logger.kafka.name = kafka
logger.kafka.level = info
logger.apache.name = org.apache.kafka
logger.apache.level = info
logger.controller.name = state.change.logger
logger.controller.level = warn
"""


class KafkaBrokerError(RuntimeError):
    """The broker could not be formatted, started or stopped."""


# The shared jar cache carries slf4j-nop so DumpLogSegments stays quiet; the broker's log is what a
# failed start is explained by, so its classpath swaps slf4j-nop for the slf4j 1.x -> log4j2 binding.
_LOG_BINDING = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.3"


def _log_binding_jar() -> Path:
    """log4j-slf4j-impl, fetched once with Maven next to the shared cache (its own lock-free rename)."""
    group, artifact, version = _LOG_BINDING.split(":")
    dest = cache_dir().parent / "broker-extra"
    jar = dest / f"{artifact}-{version}.jar"
    if jar.exists():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaToolError("mvn not found on PATH: Maven is needed to fetch the broker's log binding")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fetch-", dir=dest) as tmp:
        proc = subprocess.run([mvn, "-q", "-B", "dependency:copy", f"-Dartifact={_LOG_BINDING}",
                               f"-DoutputDirectory={tmp}"], capture_output=True, text=True, cwd=tmp)
        fetched = Path(tmp) / jar.name
        if proc.returncode != 0 or not fetched.exists():
            raise KafkaToolError(f"fetching {_LOG_BINDING} failed (exit {proc.returncode}):\n"
                                 f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        os.replace(fetched, jar)
    return jar


def broker_classpath() -> str:
    jars = sorted(p for p in ensure_jars().glob("*.jar") if not p.name.startswith("slf4j-nop"))
    return os.pathsep.join(str(p) for p in [*jars, _log_binding_jar()])


def _cluster_id() -> str:
    """A Kafka Uuid: 16 random bytes, URL-safe base64 without padding (what `random-uuid` prints).
    Never one starting with '-': kafka-storage's argument parser would take it for an option."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class KafkaBroker:
    def __init__(self, workdir: Path, *, extra_config: dict[str, str] | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_dir = self.workdir / "kafka-logs"
        self.metadata_dir = self.workdir / "kraft-metadata"
        self.broker_log = self.workdir / "broker.out"
        self.port = free_port()
        self.controller_port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._proc: subprocess.Popen | None = None
        self._log_handle = None
        self._config = self._server_config(extra_config or {})
        self._formatted = False

    # --- configuration ---------------------------------------------------------------------------
    def _server_config(self, extra: dict[str, str]) -> dict[str, str]:
        cfg = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "metadata.log.dir": str(self.metadata_dir),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            # Tests write timestamps from 2023: nothing may be deleted by age or size.
            "log.retention.ms": "-1",
            "log.retention.bytes": "-1",
            "log.retention.check.interval.ms": "300000",
        }
        cfg.update(extra)
        return cfg

    @property
    def properties_file(self) -> Path:
        return self.workdir / "server.properties"

    def _java(self, main_class: str, args: list[str], **popen) -> list[str]:
        return [java_executable(), "-Xmx768m", "-Xss4m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Xshare:auto", f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                "-cp", broker_classpath(), main_class, *args]

    def _format(self) -> None:
        self.properties_file.write_text("".join(f"{k}={v}\n" for k, v in self._config.items()))
        (self.workdir / "log4j2.properties").write_text(_LOG4J2)
        cmd = self._java(STORAGE_TOOL, ["format", "-t", _cluster_id(), "-c", str(self.properties_file),
                                        "--ignore-formatted"])
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
        if proc.returncode != 0:
            raise KafkaBrokerError(f"kafka-storage format exited {proc.returncode}:\n{proc.stdout[-6000:]}")
        self._formatted = True

    # --- life cycle ------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def log_tail(self, chars: int = 8000) -> str:
        try:
            return self.broker_log.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return "(no broker log)"

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        if self.pid is not None:
            return
        if not self._formatted:
            self._format()
        start_offset = self.broker_log.stat().st_size if self.broker_log.exists() else 0
        self._log_handle = open(self.broker_log, "ab")
        self._proc = subprocess.Popen(self._java(KAFKA_MAIN, [str(self.properties_file)]),
                                      stdout=self._log_handle, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._close_log()
                self._proc = None
                raise KafkaBrokerError(f"the Kafka broker exited {code} while starting; its log:\n{self.log_tail()}")
            with open(self.broker_log, "rb") as f:
                f.seek(start_offset)
                started = _STARTED_LINE.encode() in f.read()
            if started and self._accepts_connections():
                return
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise KafkaBrokerError(f"the Kafka broker did not start within {timeout:.0f} s; its log:\n{tail}")
            time.sleep(0.2)

    def _accepts_connections(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """A clean shutdown by pid (SIGTERM), then SIGKILL if it hangs. Safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(30)
        finally:
            self._close_log()

    def restart(self) -> None:
        self.stop()
        self.start()

    def _close_log(self) -> None:
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None

    def partition_dir(self, topic: str, partition: int = 0) -> Path:
        return self.log_dir / f"{topic}-{partition}"

    def __enter__(self) -> "KafkaBroker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="kafka-broker-") as tmp:
        t0 = time.monotonic()
        with KafkaBroker(Path(tmp)) as broker:
            print(f"broker pid {broker.pid} at {broker.bootstrap}, log dir {broker.log_dir} "
                  f"(started in {time.monotonic() - t0:.1f} s); Ctrl-C stops it", flush=True)
            try:
                while broker.pid is not None:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
