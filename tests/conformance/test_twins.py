"""The twins registry (tests/conformance/twins.json) is true and complete: every symbol exists on its side, every
vector file exists and both runners read it, every vector file under tests/conformance/ is registered (and every
one a JUnit runner opens), and docs/internals.md shows the registry as it is."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tests.conformance import twins as registry

REPO = registry.REPO
TWINS = registry.twins()
JAVA_MAIN = REPO / "jvm" / "src" / "main" / "java"
JAVA_TEST = REPO / "jvm" / "src" / "test" / "java"


def _python_symbol(symbol: str) -> object:
    module, _, attrs = symbol.partition(":")
    obj = importlib.import_module(module)
    for attr in attrs.split("."):
        obj = getattr(obj, attr)
    return obj


def _java_symbol_found(symbol: str) -> bool:
    cls, _, method = symbol.partition("#")
    source = JAVA_MAIN / (cls.replace(".", "/") + ".java")
    if not source.is_file():
        return False
    return not method or re.search(rf"\b{re.escape(method)}\s*\(", source.read_text(encoding="utf-8")) is not None


@pytest.mark.parametrize("twin", TWINS, ids=lambda t: t["vectors"] + ": " + t["rule"])
def test_every_symbol_exists(twin):
    assert twin["python"] and twin["java"]
    for symbol in twin["python"]:
        assert callable(_python_symbol(symbol)), symbol
    for symbol in twin["java"]:
        assert _java_symbol_found(symbol), f"{symbol}: no such class or method under jvm/src/main/java"


@pytest.mark.parametrize("twin", TWINS, ids=lambda t: t["vectors"] + ": " + t["rule"])
def test_every_vector_file_exists_and_both_runners_read_it(twin):
    vectors = REPO / twin["vectors"]
    assert vectors.exists(), twin["vectors"]
    name = vectors.name
    for runner in (twin["python_runner"], twin["java_runner"]):
        text = (REPO / runner).read_text(encoding="utf-8")
        assert name in text, f"{runner} does not read {twin['vectors']}"
    assert twin["java_runner"].startswith("jvm/src/test/java/") and twin["python_runner"].startswith("tests/")


def test_every_vector_file_is_registered():
    registered = {t["vectors"] for t in TWINS}
    here = registry.HERE.relative_to(REPO)
    on_disk = {str(here / p.name) for p in registry.HERE.glob("*.json") if p.name != "twins.json"}
    on_disk.add(str(here / "corpus"))
    assert on_disk <= registered, f"vector files not in tests/conformance/twins.json: {sorted(on_disk - registered)}"


def test_every_vector_file_a_junit_runner_opens_is_registered():
    registered = {Path(t["vectors"]).name for t in TWINS}
    opened = set()
    for java in JAVA_TEST.rglob("*.java"):
        opened |= set(re.findall(r'ConformanceVectors\.(?:read|path)\("([^"]+)"\)', java.read_text(encoding="utf-8")))
    assert opened and opened <= registered, sorted(opened - registered)


def test_internals_renders_the_registry():
    text = registry.INTERNALS.read_text(encoding="utf-8")
    assert registry.section(text) == registry.render(), \
        "docs/internals.md's twins table is stale: python -m tests.conformance.twins --write"
