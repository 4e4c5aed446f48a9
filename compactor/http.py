"""The sidecar's HTTP endpoints, on the standard library's threading HTTP server in a daemon thread.

- ``/healthz``: 200 while the process runs and, once started, the scheduler's thread is alive (a
  sidecar waiting for the leader lock is healthy: killing it would not help).
- ``/readyz``: 200 when this sidecar holds the leader lock and its start-up recovery is done, else 503
  with the reason.
- ``/metrics``: Prometheus text format (``prometheus_client``).
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from prometheus_client import CONTENT_TYPE_LATEST

# (ok, detail) providers, so the server knows nothing of the service's internals.
Probe = Callable[[], "tuple[bool, dict]"]


class _Handler(BaseHTTPRequestHandler):
    server: "EndpointServer._Server"
    protocol_version = "HTTP/1.1"

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


class EndpointServer:
    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        owner: "EndpointServer"

    def __init__(self, host: str, port: int, health: Probe, ready: Probe, metrics_text: Callable[[], bytes]):
        self.health = health
        self.ready = ready
        self.metrics_text = metrics_text
        self._server = self._Server((host, port), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="seglog-http",
                                        kwargs={"poll_interval": 0.2}, daemon=True)

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
