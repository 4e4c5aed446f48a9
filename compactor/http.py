"""The sidecar's HTTP endpoints, on the standard library's threading HTTP server in a daemon thread.

- ``/healthz``: 200 while the process runs and, once started, the scheduler's thread is alive (a
  sidecar waiting for the leader lock is healthy: killing it would not help).
- ``/readyz``: 200 when this sidecar holds the leader lock and its start-up recovery is done, else 503
  with the reason.
- ``/metrics``: Prometheus text format (``prometheus_client``).

Clients are untrusted (anything that reaches the port): one thread serves one connection, so each is
bounded twice. A connection that sends nothing for ``read_timeout_s`` (mid-request or idle between
keep-alive requests) is closed, and at most ``max_connections`` are served at once: past that a new one
is answered 503 and closed by the accepting thread, so threads and descriptors stay bounded however many
connect. The timeout is also a deadline for a whole request head, from its first byte awaited to its last
header line (the serving loop shuts down a connection past it): a client that sends a byte now and then
never trips a per-read timeout (``http.read.timeout.ms``, ``http.max.connections``; docs/spec.md §9). Bad requests get the
standard library's answers (400, 414, 431, 501).
"""
from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from prometheus_client import CONTENT_TYPE_LATEST

from seglog.compactor.logging import event

# (ok, detail) providers, so the server knows nothing of the service's internals.
Probe = Callable[[], "tuple[bool, dict]"]


class _Handler(BaseHTTPRequestHandler):
    server: "EndpointServer._Server"
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.timeout = self.server.owner.read_timeout_s   # StreamRequestHandler sets it on the socket
        super().setup()

    def handle_one_request(self) -> None:
        self.server.owner._head_started(self.connection)
        try:
            super().handle_one_request()
        finally:
            self.server.owner._head_done(self.connection)

    def parse_request(self) -> bool:
        try:
            return super().parse_request()      # reads the header lines
        finally:
            self.server.owner._head_done(self.connection)     # the head is in: the deadline is met

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._probe(self.server.owner.health)
        elif path == "/readyz":
            self._probe(self.server.owner.ready)
        elif path == "/metrics":
            self._send(200, self.server.owner.metrics_text(), CONTENT_TYPE_LATEST)
        else:
            self._send(404, b'{"error":"not found","paths":["/healthz","/readyz","/metrics"]}\n',
                       "application/json")

    def _probe(self, probe: Probe) -> None:
        try:
            ok, detail = probe()
        except Exception as exc:  # a probe that cannot answer is a failed probe
            ok, detail = False, {"error": f"{type(exc).__name__}: {exc}"}
        body = (json.dumps({"ok": ok, **detail}, default=str) + "\n").encode()
        self._send(200 if ok else 503, body, "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        pass  # probes every few seconds would drown the JSON logs


_BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class EndpointServer:
    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 128        # listen backlog: a burst is accepted (and answered 503), not left in SYN retries
        owner: "EndpointServer"

        def process_request(self, request, client_address) -> None:
            # Invariant: at most max_connections handler threads; a slot is released when its thread ends.
            if not self.owner._slots.acquire(blocking=False):
                try:
                    request.setblocking(False)      # a fresh socket's buffer takes it; never wait here
                    request.send(_BUSY)
                except OSError:
                    pass
                self.shutdown_request(request)
                return
            try:
                super().process_request(request, client_address)
            except BaseException:
                self.owner._slots.release()
                raise

        def service_actions(self) -> None:
            self.owner._drop_late_heads()       # serve_forever calls this every poll interval

        def handle_error(self, request, client_address) -> None:
            # socketserver would print a traceback to stderr (the JSON log); a client that stopped
            # reading or writing (timeout, reset) is routine, anything else is worth a warning.
            exc = sys.exc_info()[1]
            event("http.connection_error", level=logging.DEBUG if isinstance(exc, OSError) else logging.WARNING,
                  error=f"{type(exc).__name__}: {exc}")

        def process_request_thread(self, request, client_address) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                self.owner._slots.release()

    def __init__(self, host: str, port: int, health: Probe, ready: Probe, metrics_text: Callable[[], bytes], *,
                 read_timeout_s: float = 10.0, max_connections: int = 64):
        self.health = health
        self.ready = ready
        self.metrics_text = metrics_text
        self.read_timeout_s = read_timeout_s
        self._slots = threading.BoundedSemaphore(max_connections)
        # connection -> when its request head must be in; a handler removes its own entry before its
        # socket is closed, under the lock, so the serving loop never shuts down a closed socket
        self._heads: dict[socket.socket, float] = {}
        self._heads_lock = threading.Lock()
        self._server = self._Server((host, port), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="seglog-http",
                                        kwargs={"poll_interval": 0.2}, daemon=True)

    def _head_started(self, conn: socket.socket) -> None:
        with self._heads_lock:
            self._heads[conn] = time.monotonic() + self.read_timeout_s

    def _head_done(self, conn: socket.socket) -> None:
        with self._heads_lock:
            self._heads.pop(conn, None)

    def _drop_late_heads(self) -> None:
        now = time.monotonic()
        with self._heads_lock:
            late = [conn for conn, deadline in self._heads.items() if deadline <= now]
            for conn in late:
                del self._heads[conn]
                try:
                    conn.shutdown(socket.SHUT_RDWR)      # its handler's read returns at once and it ends
                except OSError:
                    pass

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
