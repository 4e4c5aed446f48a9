"""The sidecar's HTTP surface once it serves the console (compactor/http.py, console_app.py), against the real
process: the bearer token guards everything but the probes (Bearer or Basic, compared whole), every route
answers GET and HEAD only (405 otherwise, nothing changed), bad page parameters are a 400 naming the
parameter, unknown topics a 404, the record browser is off unless asked for and bounded when on, and the
token never reaches the log."""
from __future__ import annotations

import base64

import pytest
import yaml

from seglog.compactor.config import parse_config
from seglog.errors import ConfigError
from tests.compactor.console_root import Sidecar, build_root, free_port, write_config

pytestmark = pytest.mark.slow
TOKEN = "s3cret-token-0123456789"


@pytest.fixture(scope="module")
def sidecar(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("console-http")
    build_root(tmp / "root")
    port = free_port()
    config = write_config(tmp / "c.yaml", tmp / "root", port, remote=None, **{"bearer.token": TOKEN})
    doc = yaml.safe_load(config.read_text())
    doc["topics"] = {"archive": {"remote.storage.enable": False}}   # no remote: section here
    doc["console"]["records.enable"] = False
    config.write_text(yaml.safe_dump(doc))
    s = Sidecar(tmp, config, port, token=TOKEN)
    s.wait_for(lambda: b'data-topic="orders"' in s.get("/console/topics")[1], "the first pass")
    yield s
    s.stop()
    assert TOKEN not in s.log.read_text()


def test_the_token_guards_all_but_the_probes(sidecar):
    bare = {"Authorization": "none"}
    assert sidecar.get("/healthz", headers=bare)[0] == 200 and sidecar.get("/readyz", headers=bare)[0] == 200
    for path in ("/metrics", "/console/topics", "/console/jobs", "/console/topics/orders/0/records"):
        status, _, headers = sidecar.get(path, headers=bare)
        assert status == 401 and "Basic" in headers["www-authenticate"], path
        assert sidecar.get(path, headers={"Authorization": f"Bearer {TOKEN}x"})[0] == 401
        assert sidecar.get(path, headers={"Authorization": f"Bearer {TOKEN[:-1]}"})[0] == 401
        assert sidecar.get(path, headers={"Authorization": "Basic !!!"})[0] == 401
    basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
    assert sidecar.get("/console/topics", headers={"Authorization": f"Basic {basic}"})[0] == 200
    assert sidecar.get("/metrics")[0] == 200


def test_only_get_and_head(sidecar):
    for path in ("/metrics", "/healthz", "/console/topics", "/console/topics/orders/0"):
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert sidecar.get(path, method=method)[0] == 405, (method, path)
        status, body, _ = sidecar.get(path, method="HEAD")
        assert status == 200 and body == b""


def test_bad_parameters_and_unknown_names(sidecar):
    for query in ("page=0", "page=x", "page=-1", "page=" + "9" * 30):
        status, body, headers = sidecar.get(f"/console/topics?{query}")
        assert status == 400 and b"&#39;page&#39;" in body, query
        assert "script-src" not in headers["content-security-policy"] and "default-src 'none'" in \
            headers["content-security-policy"]
    assert sidecar.get("/console/topics/nope")[0] == 404
    assert sidecar.get("/console/topics/orders/7")[0] == 404
    assert sidecar.get("/console/topics/..%2F..%2Fetc/0")[0] == 404
    assert sidecar.get("/nowhere")[0] == 404


def test_records_are_off_unless_enabled(sidecar):
    status, body, _ = sidecar.get("/console/topics/orders/0/records")
    assert status == 403 and b"console.records.enable" in body
    assert b"/records" not in sidecar.get("/console/topics/orders")[1]     # no link to it either


def test_console_and_token_keys_are_validated():
    with pytest.raises(ConfigError, match="'http.bearer.token' is not allowed") as exc:
        parse_config({"root": "/tmp/x", "http": {"bearer.token": "short-secret"}})
    assert "short-secret" not in str(exc.value)
    with pytest.raises(ConfigError, match="did you mean 'console.records.enable'"):
        parse_config({"root": "/tmp/x", "console": {"record.enable": True}})
    with pytest.raises(ConfigError, match="'console.records.page.max' = 5000 is out of range"):
        parse_config({"root": "/tmp/x", "console": {"records.page.max": 5000}})
    with pytest.raises(ConfigError, match="'console.records.enable' = 'yes' is not allowed"):
        parse_config({"root": "/tmp/x", "console": {"records.enable": "yes"}})
    cfg = parse_config({"root": "/tmp/x", "http": {"bearer.token": TOKEN}})
    assert cfg.console.records_enable is False and cfg.console.enable is True
    assert TOKEN not in repr(cfg)
