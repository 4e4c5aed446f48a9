"""Hostile HTTP clients of the sidecar (issue 37, item 5; compactor/http.py): the endpoints' server had no
read timeout and no connection limit, so 100 half-sent requests were still held after 20 s (threads
2 -> 104) and 2,000 held connections made 2,006 threads. Against the real sidecar process: half-sent
requests are dropped after `http.read.timeout.ms`, the connections held (descriptors) and the threads
stay bounded by `http.max.connections` however many connect (the rest are answered 503 at once), and
`/metrics` still answers meanwhile and afterwards. Since the endpoints moved to uvicorn (one event loop:
a connection holds a descriptor, not a thread), what the server holds is counted in descriptors."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.compactor.test_compactor_process import free_port

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 1000
HALF_SENT = b"GET /metrics HTTP/1.1\r\nHost: sidecar\r\n"      # the blank line that ends it never comes


class Sidecar:
    """`python -m seglog compactor run --config F` on an empty root, its endpoints on a free port."""

    def __init__(self, tmp_path: Path, max_connections: int):
        self.port = free_port()
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump({
            "root": str(tmp_path / "root"),
            "http": {"host": "127.0.0.1", "port": self.port, "read.timeout.ms": TIMEOUT_MS,
                     "max.connections": max_connections}}))
        self.log = tmp_path / "sidecar.log"
        self._err = open(self.log, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "seglog", "compactor", "run", "--config", str(config)],
                                     cwd=REPO, stdout=subprocess.DEVNULL, stderr=self._err)
        deadline = time.monotonic() + 60
        while self.get("/healthz") != 200:
            assert self.proc.poll() is None, self.log.read_text()[-2000:]
            assert time.monotonic() < deadline, self.log.read_text()[-2000:]
            time.sleep(0.1)

    def get(self, path: str) -> int | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                r.read()
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def threads(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
        raise AssertionError("no Threads: line")

    def descriptors(self) -> int:
        return len(list(Path(f"/proc/{self.proc.pid}/fd").iterdir()))

    def connect(self) -> socket.socket:
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(HALF_SENT)
        return s

    def stop(self) -> None:
        self.proc.terminate()
        try:
            assert self.proc.wait(timeout=60) == 0, self.log.read_text()[-2000:]
        finally:
            self._err.close()
        assert "Traceback" not in self.log.read_text()


@pytest.fixture
def sidecar(request, tmp_path):
    s = Sidecar(tmp_path, request.param)
    yield s
    s.stop()


def _closed_by_server(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        while s.recv(4096):
            pass
        return True                 # EOF: the server closed it
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


@pytest.mark.parametrize("sidecar", [128], indirect=True)
def test_half_sent_requests_are_dropped_after_the_read_timeout(sidecar):
    base, base_fds = sidecar.threads(), sidecar.descriptors()
    held = [sidecar.connect() for _ in range(100)]
    try:
        time.sleep(0.3)
        assert sidecar.descriptors() >= base_fds + 90   # held while they wait for the rest
        assert sidecar.threads() <= base + 2
        assert sidecar.get("/metrics") == 200           # meanwhile: a slot is free, the probe answers
        started = time.monotonic()
        assert all(_closed_by_server(s, within=TIMEOUT_MS / 1000 + 5) for s in held)   # before: held for ever
        assert time.monotonic() - started < TIMEOUT_MS / 1000 + 5
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 5
    while sidecar.descriptors() > base_fds + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sidecar.descriptors() <= base_fds + 2
    assert sidecar.threads() <= base + 2
    assert sidecar.get("/metrics") == 200


@pytest.mark.parametrize("sidecar", [16], indirect=True)
def test_two_thousand_connections_keep_threads_bounded(sidecar):
    base, base_fds = sidecar.threads(), sidecar.descriptors()
    held, refused, most, most_fds = [], 0, 0, 0
    try:
        for i in range(2000):
            try:
                held.append(sidecar.connect())
            except OSError:
                refused += 1            # reset by the server while sending: it is full
            if i % 100 == 0:
                most, most_fds = max(most, sidecar.threads()), max(most_fds, sidecar.descriptors())
        most, most_fds = max(most, sidecar.threads()), max(most_fds, sidecar.descriptors())
        assert most <= base + 16 + 2, most              # before: 2,006 threads
        # the connections held: at most max.connections once the loop caught up (one it accepted past
        # them is answered 503 and closed on its next turn: a burst shows a few hundred for an instant)
        assert most_fds < base_fds + 500, most_fds
        time.sleep(0.5)
        assert sidecar.descriptors() <= base_fds + 16 + 4, sidecar.descriptors()
        # the connections past the limit were answered 503 and closed at once
        busy = 0
        for s in held[100:200]:
            s.settimeout(5)
            try:
                busy += s.recv(64).startswith(b"HTTP/1.1 503")
            except OSError:
                busy += 1
        assert busy + refused >= 100 - 16
        deadline = time.monotonic() + TIMEOUT_MS / 1000 + 10
        while sidecar.get("/metrics") != 200:       # once the held ones time out, probes answer again
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        for s in held:
            s.close()
    assert sidecar.proc.poll() is None


@pytest.mark.parametrize("http, expected", [
    ({"read.timeout.ms": 0}, "'http.read.timeout.ms' = 0 is out of range"),
    ({"max.connections": 0}, "'http.max.connections' = 0 is out of range"),
    ({"max.connection": 5}, "did you mean 'http.max.connections'"),
])
def test_http_bounds_are_validated(http, expected):
    from seglog.compactor.config import parse_config
    from seglog.errors import ConfigError

    with pytest.raises(ConfigError, match=expected):
        parse_config({"root": "/tmp/x", "http": http}, source="test.yaml")
    assert parse_config({"root": "/tmp/x"}).http.max_connections == 64


@pytest.mark.parametrize("sidecar", [8], indirect=True)
def test_a_request_head_sent_a_byte_at_a_time_is_dropped_at_its_deadline(sidecar):
    """Slowloris: a byte every 0.3 s never trips a 1 s per-read timeout; the head's deadline does."""
    s = socket.create_connection(("127.0.0.1", sidecar.port), timeout=10)
    started, closed_at = time.monotonic(), None
    try:
        for i in range(40):         # 12 s at most
            try:
                s.sendall(b"GET /metrics HTTP/1.1\r\n" if i == 0 else b"X")
            except OSError:         # reset, then broken pipe: the server closed it
                closed_at = time.monotonic()
                break
            time.sleep(0.3)
    finally:
        s.close()
    assert closed_at is not None, "held for 12 s"
    assert closed_at - started < TIMEOUT_MS / 1000 + 3
    assert sidecar.get("/metrics") == 200


@pytest.mark.parametrize("sidecar", [8], indirect=True)
def test_a_client_that_never_reads_its_responses_is_dropped(sidecar):
    """Pipelined requests whose responses are never read: the server's writes stall; past the read timeout the
    connection is aborted (the old server's blocking send timed out alike), and its slot is free again."""
    base_fds = min(sidecar.descriptors() for _ in range(5) if time.sleep(0.05) is None)   # settled
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("127.0.0.1", sidecar.port))
    try:
        sent = 0
        s.setblocking(False)
        request = b"GET /metrics HTTP/1.1\r\nHost: sidecar\r\n\r\n"
        started = time.monotonic()
        while time.monotonic() - started < 0.3:
            try:
                sent += s.send(request * 50)
            except BlockingIOError:
                time.sleep(0.02)
        assert sent > 0
        assert max(sidecar.descriptors() for _ in range(5) if time.sleep(0.05) is None) >= base_fds + 1   # held
        deadline = time.monotonic() + TIMEOUT_MS / 1000 + 5
        while sidecar.descriptors() > base_fds and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sidecar.descriptors() <= base_fds, "a stalled response held its connection"
        assert time.monotonic() - started > TIMEOUT_MS / 1000 * 0.9     # not before its time
    finally:
        s.close()
    assert sidecar.get("/metrics") == 200


@pytest.mark.parametrize("sidecar", [8], indirect=True)
def test_a_request_head_past_h11s_limit_is_refused(sidecar):
    """A 1 MiB header line: h11 buffers at most 16 KiB of an incomplete head (a head that arrives whole in one read,
    at most asyncio's 256 KiB, is parsed), so it is answered 400 and closed, never buffered whole."""
    s = socket.create_connection(("127.0.0.1", sidecar.port), timeout=10)
    try:
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: sidecar\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
        except OSError:
            pass            # closed while sending: refused all the same
        answer = b""
        try:
            while chunk := s.recv(4096):
                answer += chunk
        except OSError:
            pass
    finally:
        s.close()
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert sidecar.get("/metrics") == 200
