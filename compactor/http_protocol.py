"""uvicorn's HTTP/1.1 protocol (h11) with the two bounds the sidecar's clients need that uvicorn leaves out.

uvicorn bounds what a connection may send (h11's limit on an incomplete request head: a head past it
is answered 400) and how long a kept-alive connection may sit idle after a response
(``timeout_keep_alive``), and its ``limit_concurrency`` answers 503 to a request once a limit is passed.
Three holes remain for an untrusted client: no deadline for the first request head (a client that
sends a byte now and then is held for ever), connections are counted only once a whole request
head is in (so a flood of half-sent requests holds a descriptor each, without bound), and a client
that stops reading its response holds its connection (and the response's task) for ever.

Invariants kept here (docs/spec.md §9):
- at most ``max_connections`` connections are open at once; one past that is answered 503 and
  closed as it is accepted, before a byte of it is read;
- a request head must be complete ``read_timeout_s`` after the connection opened or after the
  previous response: a connection past that deadline is closed (h11 has buffered at most its limit);
- a response whose writing stays paused (the client reads nothing, its buffers are full) for
  ``read_timeout_s`` is abandoned: the connection is aborted, as a blocking send past its timeout was.
"""
from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class BoundedH11Protocol(H11Protocol):
    max_connections = 64            # set per server by compactor/http.py (a subclass per server)
    read_timeout_s = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._refused = len(self.connections) >= self.max_connections
        self._head_deadline: asyncio.TimerHandle | None = None
        self._stalled: asyncio.TimerHandle | None = None
        if self._refused:
            self.transport = transport
            transport.write(BUSY)      # a fresh socket's buffer takes it: never waits
            transport.close()
            return
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return          # never counted, nothing begun
        self._disarm_head_deadline()
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:     # a whole request head is in: the deadline is met
            self._disarm_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_deadline()           # the next request's head, on a kept-alive connection

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stalled is None:
            self._stalled = self.loop.call_later(self.read_timeout_s, self._write_late)

    def resume_writing(self) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().resume_writing()

    def _write_late(self) -> None:
        self._stalled = None
        self.transport.abort()          # close() would wait for the buffer the client never drains

    def _arm_head_deadline(self) -> None:
        self._disarm_head_deadline()
        self._head_deadline = self.loop.call_later(self.read_timeout_s, self._head_late)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
