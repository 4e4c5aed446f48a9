"""Real object storage servers on loopback for tests of the remote tier (docs/tiered-storage.md §1): the
one way they start and stop (``LoopbackServer``), and GCS and Azure Storage for the Python side's gs:// and
abfs:// tiers: fake-gcs-server (scripts/fake-gcs-server.sh) and Azurite's blob service (scripts/azurite.sh).
The S3 server (moto) is tests/s3_server.py. Each is a subprocess on a free port, stopped by its pid.

- ``GcsServer(workdir)`` / ``AzuriteServer(workdir)``: ``start()`` waits (bounded) until the server answers;
  ``stop()`` sends SIGTERM, then SIGKILL if it does not exit. ``.endpoint`` is ``http://127.0.0.1:<port>``;
  ``env()`` what its clients need in their environment (the server runs with it too).
- ``installed()``: the server's executable, or None (the tests using it skip, naming the script).
- ``make_bucket(name)`` / ``make_container(name)``: a fresh bucket or container, made through pyarrow.fs as
  the store reaches the server; returns the location's URI.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.ports import free_port

START_TIMEOUT_S = 60.0
FAKE_GCS_VERSION = "v1.56.1"      # scripts/fake-gcs-server.sh
AZURITE_VERSION = "3.35.0"        # scripts/azurite.sh
# Azurite's one account and its published key (Microsoft's documentation of the emulator): no secret.
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "seglog"


class LoopbackServer:
    name = ""
    script = ""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def installed(cls) -> str | None:
        raise NotImplementedError

    def command(self, exe: str) -> list[str]:
        raise NotImplementedError

    @staticmethod
    def env() -> dict[str, str]:
        return {}

    def start(self) -> None:
        exe = self.installed()
        if exe is None:
            raise RuntimeError(f"{self.name} is not installed: `bash {self.script}` installs it")
        self.workdir.mkdir(parents=True, exist_ok=True)
        log_path = self.workdir / f"{self.name}.log"
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(self.command(exe), stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                         env={**os.environ, **self.env()})
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: "
                                   f"{log_path.read_text(errors='replace')[-2000:]}")
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=2).read()
                return
            except urllib.error.HTTPError:
                return                      # it answers (an error status for the bare root is fine)
            except Exception:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer on {self.endpoint} within {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class GcsServer(LoopbackServer):
    name = "fake-gcs-server"
    script = "scripts/fake-gcs-server.sh"

    @classmethod
    def installed(cls) -> str | None:
        exe = Path(os.environ.get("SEGLOG_FAKE_GCS_DIR") or _cache() / f"fake-gcs-server-{FAKE_GCS_VERSION}") \
            / "fake-gcs-server"
        return str(exe) if exe.is_file() and os.access(exe, os.X_OK) else None

    def command(self, exe: str) -> list[str]:
        return [exe, "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port), "-backend", "memory",
                "-log-level", "error"]

    def make_bucket(self, name: str) -> str:
        import pyarrow.fs as pafs

        fs = pafs.GcsFileSystem(anonymous=True, scheme="http", endpoint_override=f"127.0.0.1:{self.port}",
                                project_id="seglog-tests")     # a bucket's creation names a project
        fs.create_dir(name)
        return f"gs://{name}"


class AzuriteServer(LoopbackServer):
    name = "azurite-blob"
    script = "scripts/azurite.sh"

    @classmethod
    def installed(cls) -> str | None:
        exe = Path(os.environ.get("SEGLOG_AZURITE_DIR") or _cache() / f"azurite-{AZURITE_VERSION}") \
            / "node_modules" / ".bin" / "azurite-blob"
        return str(exe) if exe.exists() else None

    def command(self, exe: str) -> list[str]:
        return [exe, "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--location", str(self.workdir / "data"),
                "--silent", "--disableTelemetry", "--skipApiVersionCheck"]

    @staticmethod
    def env() -> dict[str, str]:
        """What the store reads its Azure credential from (indexer/remote/store.py AZURE_KEY_ENV)."""
        return {"AZURE_STORAGE_ACCOUNT_KEY": AZURITE_KEY}

    def make_container(self, name: str) -> str:
        import pyarrow.fs as pafs

        fs = pafs.AzureFileSystem(account_name=AZURITE_ACCOUNT, account_key=AZURITE_KEY,
                                  blob_storage_authority=f"127.0.0.1:{self.port}", blob_storage_scheme="http",
                                  dfs_storage_authority=f"127.0.0.1:{self.port}", dfs_storage_scheme="http")
        fs.create_dir(name)
        return f"abfs://{name}@{AZURITE_ACCOUNT}.dfs.core.windows.net"
