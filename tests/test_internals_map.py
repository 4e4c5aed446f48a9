"""docs/internals.md maps what exists, both ways: every Java class under jvm/src/main is named in the first column of
the jvm/ section's tables and every class named there exists; every module the Python module map names exists
(tests/test_docs.py checks the other way for Python), and the test oracles' section maps tests/oracles/ exactly."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INTERNALS = (REPO / "docs" / "internals.md").read_text(encoding="utf-8")
JAVA = REPO / "jvm" / "src" / "main" / "java" / "io" / "seglog" / "spark"


def _section(heading: str) -> str:
    m = re.search(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", INTERNALS, re.M | re.S)
    assert m is not None, f"docs/internals.md has no section {heading!r}"
    return m.group(0)


def _first_cells(section: str) -> list[str]:
    return [line.split("|")[1] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| ---") and line.split("|")[1].strip() not in ("class", "module")]


def mapped_classes() -> set[str]:
    """`pkg.Name` per class the jvm/ section's first columns name; a bare `Name` takes the package before it."""
    out = set()
    for cell in _first_cells(_section("## jvm/")):
        pkg = ""
        for tok in re.findall(r"`([^`]+)`", cell):
            if "." in tok:
                pkg = tok.rpartition(".")[0]
                out.add(tok)
            else:
                out.add(f"{pkg}.{tok}" if pkg else tok)
    return out


def java_classes() -> set[str]:
    return {str(p.relative_to(JAVA).with_suffix("")).replace("/", ".") for p in JAVA.rglob("*.java")}


def test_every_java_class_is_on_the_map():
    missing = sorted(java_classes() - mapped_classes())
    assert not missing, f"docs/internals.md's jvm/ section does not map: {missing}"


def test_every_java_class_on_the_map_exists():
    stale = sorted(mapped_classes() - java_classes())
    assert not stale, f"docs/internals.md's jvm/ section names classes that do not exist: {stale}"


def test_every_python_module_on_the_map_exists():
    stale = []
    for m in re.finditer(r"^### `seglog(?:\.[a-z_.]+)?` \(`([^`]+)/`\)\n(.*?)(?=^#)", INTERNALS, re.M | re.S):
        folder = REPO / m.group(1)
        for cell in _first_cells(m.group(2)):
            for name in re.findall(r"`([^`]+)`", cell):
                if not ((folder / f"{name}.py").is_file() or (name.endswith("/") and (folder / name).is_dir())):
                    stale.append(f"{m.group(1)}/{name}")
    assert not stale, f"docs/internals.md's module map names modules that do not exist: {stale}"


def test_the_oracles_section_maps_tests_oracles_exactly():
    section = _section("### Test oracles (`tests/oracles/`)")
    mapped = {cell.strip().strip("`") for cell in _first_cells(section)}
    on_disk = {p.stem for p in (REPO / "tests" / "oracles").glob("*.py") if p.stem != "__init__"}
    assert mapped == on_disk


def test_no_package_module_imports_an_oracle():
    bad = []
    for folder in ("indexer", "sink", "source", "compactor", "conf", "seglog"):
        for p in (REPO / folder).rglob("*.py"):
            if "tests.oracles" in p.read_text(encoding="utf-8"):
                bad.append(str(p.relative_to(REPO)))
    assert not bad, f"production modules import a test oracle: {bad}"
