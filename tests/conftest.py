"""Shared fixtures. One real local Spark session (local[2]) and one real Kafka broker (KRaft, loopback)
for the whole run, each created on first use."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


# The session's Spark JVM, watched after every test phase (pytest_runtest_makereport below).
_JVM: dict = {}


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from seglog.sink.session import local_session
    from seglog.source import register

    crash_dir = tmp_path_factory.mktemp("spark-jvm")
    # Delta (the benchmarks' baseline, tests of the primary line only) where it is installed: the other Spark
    # lines' smoke venvs (scripts/spark-line.sh) have none, since delta-spark pins its pyspark
    with_delta = importlib.util.find_spec("delta") is not None
    session = local_session("seglog-tests", with_delta=with_delta, with_s3a=True,
                            jvm_options=f"-XX:ErrorFile={crash_dir}/hs_err_pid%p.log")
    register(session)  # the seglog data source, for this session
    _JVM.update(session=session, crash_dir=crash_dir)
    yield session
    dead = _JVM.get("reported")
    _JVM.clear()
    if not dead:              # a dead JVM was reported where it died; stopping it would only raise again
        session.stop()


# Exit codes of a dead driver JVM, as a reader of the report needs them.
_JVM_EXITS = {
    0: "exit 0: the JVM saw its stdin pipe from this Python process close (PySpark's gateway exits on EOF) "
       "or something called System.exit(0)",
    50: "exit 50: Spark's handler for an uncaught fatal error in a thread (see the captured stderr)",
    52: "exit 52: OutOfMemoryError in a task (Spark exits the JVM)",
    134: "exit 134: the JVM aborted (a crash; its hs_err file follows when it wrote one)",
}


def _spark_jvm_death() -> str | None:
    """Why the session's JVM is gone, once; None while it runs (or before the session exists)."""
    session = _JVM.get("session")
    if session is None or _JVM.get("reported"):
        return None
    proc = getattr(session.sparkContext._gateway, "proc", None)
    code = None if proc is None else proc.poll()
    if code is None:
        return None
    _JVM["reported"] = True
    why = _JVM_EXITS.get(code, f"killed by signal {-code}" if code < 0 else f"exit {code}")
    lines = [f"the Spark JVM (pid {proc.pid}) is gone: {why}"]
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        lines.append("memory: " + ", ".join(" ".join(line.split()) for line in meminfo.read_text().splitlines()[:3]))
    for crash in sorted(_JVM["crash_dir"].glob("hs_err_pid*.log")):
        lines += [f"--- {crash} (first 80 lines)", *crash.read_text(errors="replace").splitlines()[:80]]
    return "\n".join(lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A dead Spark JVM fails every later Spark test with a bare ConnectionRefusedError, far from its
    cause: the test during which it died fails here with the JVM's exit code (and crash file), and the
    run stops, so the report ends with the reason."""
    outcome = yield
    death = _spark_jvm_death()
    if death is None:
        return
    report = outcome.get_result()
    if report.passed:
        report.outcome = "failed"
        report.longrepr = death
    else:
        report.sections.append(("Spark JVM", death))
    item.session.shouldstop = "the session's Spark JVM died during " + item.nodeid


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real Kafka 4.1 broker for the session (tests/kafka_broker.py): ``.bootstrap``, ``.log_dir``,
    ``.partition_dir(topic, p)``, ``.restart()``. Stopped by its pid when the session ends, also after
    failures. Tests that stop or restart it leave it running again."""
    from tests.kafka_broker import KafkaBroker

    broker = KafkaBroker(tmp_path_factory.mktemp("kafka-broker"))
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 server on loopback for the session (tests/s3_server.py: moto's server mode):
    ``.endpoint``, ``.make_bucket(name)``; its credentials are set in this process's environment
    (children inherit them). Stopped by its pid when the session ends, also after failures."""
    from tests.s3_server import S3Server

    yield from _serving(S3Server(tmp_path_factory.mktemp("s3-server")))


def _serving(server):
    """Starts a loopback server with its clients' environment set in this process (children inherit it), yields
    it, then stops it by its pid and restores the environment, also after failures."""
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    try:
        server.start()
        yield server
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory):
    """A real GCS server on loopback for the session (tests/emulators.py: fake-gcs-server), reached
    anonymously over plain HTTP as the store reaches an emulator endpoint. Fails, naming the script that
    installs it (scripts/setup-test.sh runs it), where it is not installed."""
    from tests.emulators import GcsServer

    if GcsServer.installed() is None:
        pytest.fail(f"fake-gcs-server is not installed: `bash {GcsServer.script}` (run by scripts/setup-test.sh) installs it")
    yield from _serving(GcsServer(tmp_path_factory.mktemp("gcs-server")))


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory):
    """A real Azure Storage blob server on loopback for the session (tests/emulators.py: Azurite); its
    account key set in this process's environment as a user sets a real one. Fails, naming the script,
    where it is not installed (scripts/setup-test.sh runs it)."""
    from tests.emulators import AzuriteServer

    if AzuriteServer.installed() is None:
        pytest.fail(f"Azurite is not installed: `bash {AzuriteServer.script}` (run by scripts/setup-test.sh) installs it")
    yield from _serving(AzuriteServer(tmp_path_factory.mktemp("azurite")))


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A real Spark Connect server for the session, with seglog's jar (tests/connect_server.py):
    ``.session()`` opens a client session, ``.url``. Stopped when the session ends, also after failures."""
    from tests.connect_server import ConnectServer

    server = ConnectServer(tmp_path_factory.mktemp("spark-connect"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def remote(connect_server):
    """A Spark Connect client session on the session's server, for one test module."""
    session = connect_server.session()
    yield session
    session.stop()
