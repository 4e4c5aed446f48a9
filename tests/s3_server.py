"""A real S3 server on loopback for tests of the remote tier (docs/tiered-storage.md): moto's server
mode (`moto_server`, from the test extra), started and stopped as every loopback server is
(tests/emulators.py LoopbackServer).

- ``S3Server(workdir)``: ``start()`` waits (bounded) until the server answers HTTP; ``stop()`` sends
  SIGTERM, then SIGKILL if it does not exit. ``.endpoint`` is ``http://127.0.0.1:<port>``.
- ``env()``: the credentials a client needs (moto accepts any); tests set them in the environment of
  the processes that reach the server, as a user sets real ones.
- ``make_bucket(name)``: a fresh bucket, created through pyarrow.fs as the store itself reaches S3.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.emulators import LoopbackServer

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true"}


class S3Server(LoopbackServer):
    name = "moto"
    script = "scripts/setup-test.sh"      # installs moto[server]

    @classmethod
    def installed(cls) -> str | None:
        return shutil.which("moto_server", path=str(Path(sys.executable).parent)) or shutil.which("moto_server")

    def command(self, exe: str) -> list[str]:
        return [exe, "-H", "127.0.0.1", "-p", str(self.port)]

    @staticmethod
    def env() -> dict[str, str]:
        return dict(CREDENTIALS)

    def make_bucket(self, name: str) -> str:
        import pyarrow.fs as pafs

        fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{self.port}", scheme="http", region="us-east-1",
                               access_key="testing", secret_key="testing", allow_bucket_creation=True)
        fs.create_dir(name)
        return f"s3://{name}"
