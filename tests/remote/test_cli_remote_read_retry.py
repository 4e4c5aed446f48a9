"""A remote-tier read through the `seglog` CLI (a subprocess) against the loopback S3 server, whose first ranged GETs
come back with more body than the range asked: what the AWS SDK for C++ under pyarrow reports as INTERNAL_FAILURE
"Failed to flush response stream" and does not retry itself (indexer/remote/store.py, `_TRANSIENT_READ`). The store
reads again, at most READ_ATTEMPTS times in all, so the command answers as it does without the fault, and says so
on stderr; past READ_ATTEMPTS failed transfers of one read it fails naming the object. Pins on a public path what
tests/remote/test_remote_store.py pins through the Python store."""
from __future__ import annotations

import http.server
import socketserver
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid

from seglog.conf import validate_topic_config
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation
from seglog.indexer.remote.store import READ_ATTEMPTS, RemoteStore
from seglog.indexer.remote.tier import tier_partition
from tests.remote.test_tier import T0, fill, local_bases


class _OverlongBodies:
    """A loopback HTTP proxy in front of the S3 server: the first `bad` ranged GETs of a segment's objects (under
    `t-0/`) get the server's answer with
    bytes past the range appended (the SDK's preallocated body buffer overflows: "Failed to flush response
    stream"); everything else passes through unchanged."""

    def __init__(self, upstream: str):
        self.upstream, self.bad, self.spoiled, self.lock = upstream, 0, 0, threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self):
                body = self._body()
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "expect", "transfer-encoding", "content-length")}
                spoil = (self.command == "GET" and "Range" in self.headers and "/t-0/" in self.path
                         and outer._take())
                req = urllib.request.Request(outer.upstream + self.path, data=body, method=self.command, headers=headers)
                req.add_header("Host", self.headers["Host"])
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        code, data, got = r.status, r.read(), r.headers
                except urllib.error.HTTPError as e:
                    code, data, got = e.code, e.read(), e.headers
                if spoil:
                    data += b"past the range" * 8
                self.send_response(code)
                for k, v in got.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(k, v)
                length = got.get("Content-Length", "0") if self.command == "HEAD" else str(len(data))
                self.send_header("Content-Length", length)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _body(self) -> bytes | None:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = b""
                    while (size := int(self.rfile.readline().split(b";")[0], 16)) > 0:
                        out += self.rfile.read(size)
                        self.rfile.readline()
                    self.rfile.readline()
                    return out
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else None

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

            def log_message(self, *args):
                pass

        socketserver.ThreadingTCPServer.daemon_threads = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _take(self) -> bool:
        with self.lock:
            if self.bad <= 0:
                return False
            self.bad -= 1
            self.spoiled += 1
            return True

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _offsets(root, ms: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seglog", "offsets-for-times", str(root), "--topic", "t", "--time", str(ms)],
                          capture_output=True, text=True, timeout=120)


def test_a_cli_read_of_the_remote_tier_retries_a_transfer_the_s3_client_gave_up_on(tmp_path, s3_server):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 20, {"local.retention.bytes": 0}))
    uri = s3_server.make_bucket(f"retry-{uuid.uuid4().hex[:10]}") + "/p"
    with _OverlongBodies(s3_server.endpoint) as proxy:
        store = RemoteStore(RemoteLocation(uri, endpoint=proxy.endpoint, region="us-east-1"))
        bases = local_bases(root)
        assert tier_partition(root, "t", 0, cfg, store).local_deleted == bases[:-1]   # the record at 5 is remote only
        assert metadata.read_state(root, "t", 0).end > 5 and local_bases(root)[0] > 5
        clean = _offsets(root, T0 + 5000)
        assert clean.returncode == 0, clean.stderr
        assert clean.stdout == "t:0:5\n"                # the record at 5, found in the remote tier

        proxy.bad = READ_ATTEMPTS - 1          # the first read fails in transfer twice, then goes through
        retried = _offsets(root, T0 + 5000)
        assert retried.returncode == 0, retried.stderr
        assert retried.stdout == clean.stdout
        assert proxy.spoiled == READ_ATTEMPTS - 1
        assert retried.stderr.count("reading it again") == READ_ATTEMPTS - 1, retried.stderr
        assert "Failed to flush response stream" in retried.stderr

        proxy.bad, proxy.spoiled = READ_ATTEMPTS, 0   # one read failing every time: refused, naming the object
        failed = _offsets(root, T0 + 5000)
        assert failed.returncode != 0
        assert proxy.spoiled == READ_ATTEMPTS
        assert "Failed to flush response stream" in failed.stderr and "t-0/" in failed.stderr, failed.stderr

