"""The sidecar's HTTP endpoints: a Starlette app on uvicorn, in one thread of the sidecar's process.

- ``/healthz``: 200 while the process runs and, once started, the scheduler's thread is alive (a
  sidecar waiting for the leader lock is healthy: killing it would not help).
- ``/readyz``: 200 when this sidecar holds the leader lock and its start-up recovery is done, else 503
  with the reason.
- ``/metrics``: Prometheus text format (``prometheus_client``).
- ``/console/...``: the read-only web console (compactor/console_app.py), unless ``console.enable`` is false.

Every route answers GET and HEAD only (anything else: 405); nothing served changes anything.

Clients are untrusted (anything that reaches the port). uvicorn serves them on one event loop, so a
connection costs a descriptor and a little memory, never a thread; compactor/http_protocol.py bounds
how many are open (``http.max.connections``: past it, 503 and closed at once) and how long a request
head may take (``http.read.timeout.ms``, from the connection or the previous response: a client that
sends a byte now and then is closed at the deadline), and uvicorn closes a kept-alive connection idle
that long. h11 refuses a request head past its size limit (400). The one slow route, the record
browser, reads files on a small worker pool of its own (compactor/console_app.py).

With ``http.bearer.token`` set, every route but the probes asks for it: ``Authorization: Bearer
TOKEN``, or HTTP Basic with the token as password (so a browser can open the console: it prompts).
"""
from __future__ import annotations

import base64
import hmac
import json
import logging
import socket
import threading
from typing import Callable

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from seglog.compactor.http_protocol import BoundedH11Protocol
from seglog.compactor.logging import event

# (ok, detail) providers, so the server knows nothing of the service's internals.
Probe = Callable[[], "tuple[bool, dict]"]
METHODS = ["GET", "HEAD"]
OPEN_PATHS = ("/healthz", "/readyz")        # probes carry no data: the kubelet sends no token
_STOP_TIMEOUT_S = 5.0


def _probe_route(probe: Probe):
    async def endpoint(request: Request) -> Response:
        try:
            ok, detail = probe()
        except Exception as exc:  # a probe that cannot answer is a failed probe
            ok, detail = False, {"error": f"{type(exc).__name__}: {exc}"}
        body = (json.dumps({"ok": ok, **detail}, default=str) + "\n").encode()
        return Response(body, status_code=200 if ok else 503, media_type="application/json")
    return endpoint


class _BearerToken:
    """ASGI middleware: every path but the probes needs the token (compared in constant time)."""

    def __init__(self, app, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        response = JSONResponse({"error": "a bearer token is required (http.bearer.token)"}, status_code=401,
                                headers={"WWW-Authenticate": 'Bearer realm="seglog", Basic realm="seglog"'})
        await response(scope, receive, send)

    def _allowed(self, scope) -> bool:
        for name, value in scope["headers"]:
            if name != b"authorization":
                continue
            kind, _, given = value.partition(b" ")
            if kind.lower() == b"basic":
                try:
                    given = base64.b64decode(given.strip(), validate=True).partition(b":")[2]
                except ValueError:
                    return False
            elif kind.lower() != b"bearer":
                return False
            return hmac.compare_digest(given.strip(), self.token)
        return False


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": "not found", "paths": ["/healthz", "/readyz", "/metrics", "/console/"]},
                        status_code=404)


class EndpointServer:
    def __init__(self, host: str, port: int, health: Probe, ready: Probe, metrics_text: Callable[[], bytes], *,
                 read_timeout_s: float = 10.0, max_connections: int = 64, bearer_token: str | None = None,
                 console_routes: list | None = None):
        async def metrics(request: Request) -> Response:
            return Response(metrics_text(), media_type=CONTENT_TYPE_LATEST)

        routes = [Route("/healthz", _probe_route(health), methods=METHODS),
                  Route("/readyz", _probe_route(ready), methods=METHODS),
                  Route("/metrics", metrics, methods=METHODS), *(console_routes or [])]
        app = Starlette(routes=routes, exception_handlers={404: _not_found})
        asgi = _BearerToken(app, bearer_token) if bearer_token else app
        protocol = type("SidecarH11Protocol", (BoundedH11Protocol,),
                        {"max_connections": max_connections, "read_timeout_s": read_timeout_s})
        config = uvicorn.Config(asgi, http=protocol, ws="none", lifespan="off", loop="asyncio", interface="asgi3",
                                log_config=None, access_log=False, server_header=False,
                                timeout_keep_alive=read_timeout_s, timeout_graceful_shutdown=2, backlog=128)
        self._uvicorn = uvicorn.Server(config)
        self._socket = _bind(host, port)        # bound now: a taken port is an OSError for the caller
        self._thread = threading.Thread(target=self._run, name="seglog-http", daemon=True)

    def _run(self) -> None:
        try:
            self._uvicorn.run(sockets=[self._socket])
        except BaseException as exc:    # the endpoints died: /healthz stops answering, the pod restarts
            event("http.stopped", level=logging.ERROR, error=f"{type(exc).__name__}: {exc}")

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout=_STOP_TIMEOUT_S)
        if self._thread.is_alive():
            self._uvicorn.force_exit = True
            self._thread.join(timeout=_STOP_TIMEOUT_S)
        try:
            self._socket.close()
        except OSError:
            pass


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock
