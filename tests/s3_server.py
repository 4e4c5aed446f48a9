"""A real S3 server on loopback for tests of the remote tier (docs/tiered-storage.md): moto's server
mode (`moto_server`, from the test extra), started as a subprocess on a free port and stopped by its pid.

- ``S3Server(workdir)``: ``start()`` waits (bounded) until the server answers HTTP; ``stop()`` sends
  SIGTERM, then SIGKILL if it does not exit. ``.endpoint`` is ``http://127.0.0.1:<port>``.
- ``env()``: the credentials a client needs (moto accepts any); tests set them in the environment of
  the processes that reach the server, as a user sets real ones.
- ``make_bucket(name)``: a fresh bucket, created through pyarrow.fs as the store itself reaches S3.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 60.0
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def env() -> dict[str, str]:
        return dict(CREDENTIALS)

    def start(self) -> None:
        exe = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or shutil.which("moto_server")
        if exe is None:
            raise RuntimeError("moto_server is not installed: `bash scripts/setup-test.sh` installs moto[server]")
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = open(self.workdir / "moto.log", "wb")
        self.proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(self.port)], stdout=log,
                                     stderr=subprocess.STDOUT, env={**os.environ, **CREDENTIALS})
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto_server exited with {self.proc.returncode}: "
                                   f"{(self.workdir / 'moto.log').read_text(errors='replace')[-2000:]}")
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=2).read()
                return
            except Exception:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"moto_server did not answer on {self.endpoint} within {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def make_bucket(self, name: str) -> str:
        import pyarrow.fs as pafs

        fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{self.port}", scheme="http", region="us-east-1",
                               access_key="testing", secret_key="testing", allow_bucket_creation=True)
        fs.create_dir(name)
        return f"s3://{name}"
