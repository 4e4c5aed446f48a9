"""The one way tests pick a loopback port for a server they start (Spark Connect, Kafka, S3, the sidecar).

A port picked by binding to port 0 comes from the kernel's ephemeral range, the range every other bind to port 0
and every outgoing connection takes its port from: between the pick and the server's own bind, another process can
be given it. That happened: a Spark Connect server's driver RPC (Spark binds it to port 0) was given the port picked
for its gRPC service, the service failed to bind and the server exited, while the readiness check, connecting to the
driver's RPC, took the server for started; the client then retried for minutes. A port outside that range is given
to no one by the kernel; only an explicit bind can take it, and this one checks that none has.
"""
from __future__ import annotations

import random
import socket

_LOWEST = 10000   # below: well-known and registered services' ports


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999          # Linux's default


def free_port() -> int:
    """A loopback port outside the kernel's ephemeral range that nothing listens on or holds now."""
    lo, hi = _ephemeral_range()
    candidates = [p for p in range(_LOWEST, 65536) if not lo <= p <= hi]
    start = random.randrange(len(candidates))
    for i in range(len(candidates)):
        port = candidates[(start + i) % len(candidates)]
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port outside the ephemeral range {lo}-{hi}")
