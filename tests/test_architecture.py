"""The house rules, checked from the source (docs/internals.md, "Dependency direction"):

- every first-party import names `seglog.…` (from the repository root the old top-level names would
  still import, and load a second copy of every module);
- layering: errors <- conf <- indexer <- {sink, source, compactor} <- the CLI, with no edge between
  sink, source and compactor;
- no module imports another first-party module's `_private` name;
- inside the storage core, the record batch codec (`indexer/codec/`) is a leaf every part may use and
  that uses none, and the index files (`indexer/indexes/`) use only the codec and `fsutil`.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"indexer": "seglog.indexer", "sink": "seglog.sink", "source": "seglog.source",
           "compactor": "seglog.compactor", "conf": "seglog.conf", "seglog": "seglog"}
OLD_NAMES = {"indexer", "sink", "source", "compactor", "conf"}
CLI = ("seglog.cli", "seglog.commands", "seglog.demo", "seglog.config_reference", "seglog.__main__")
ALLOWED = {  # package -> first-party packages it may import
    "seglog.errors": set(),
    "seglog.jvm": {"seglog.errors"},
    "seglog.conf": {"seglog.errors"},
    "seglog.indexer": {"seglog.errors", "seglog.conf"},
    "seglog.sink": {"seglog.errors", "seglog.jvm", "seglog.conf", "seglog.indexer"},
    "seglog.source": {"seglog.errors", "seglog.jvm", "seglog.conf", "seglog.indexer"},
    "seglog.compactor": {"seglog.errors", "seglog.conf", "seglog.indexer"},
}


def python_files():
    skip = {".venv", ".git", ".cache", "build", "dist", "node_modules"}
    return [p for p in REPO.rglob("*.py") if not skip & set(p.relative_to(REPO).parts)]


def module_name(path: Path) -> str | None:
    rel = path.relative_to(REPO)
    if rel.parts[0] not in FOLDERS:
        return None
    parts = [FOLDERS[rel.parts[0]], *rel.parts[1:-1]]
    if rel.stem != "__init__":
        parts.append(rel.stem)
    return ".".join(parts)


def imports(tree):
    """(module, names) for every import statement, anywhere in the file (lazy imports included)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, [a.name for a in node.names]


def package_of(module: str) -> str | None:
    if module.startswith(CLI) or module == "seglog":
        return "cli"
    for pkg in ALLOWED:
        if module == pkg or module.startswith(pkg + "."):
            return pkg
    return None


FILES = python_files()


def test_the_walk_sees_the_code():
    names = {module_name(p) for p in FILES}
    assert {"seglog.indexer.log", "seglog.sink.segment_log_sink", "seglog.source.reader",
            "seglog.compactor.service", "seglog.conf.topic_config", "seglog.errors"} <= names


def test_no_old_style_first_party_imports():
    bad = [f"{p.relative_to(REPO)}: {mod}" for p in FILES for mod, _ in imports(ast.parse(p.read_text()))
           if mod.split(".")[0] in OLD_NAMES]
    assert bad == [], "import these as seglog.<package>: " + "; ".join(bad)


def test_dependency_direction():
    bad = []
    for p in FILES:
        me = module_name(p)
        mine = package_of(me) if me else None
        if mine in (None, "cli"):
            continue
        for mod, _ in imports(ast.parse(p.read_text())):
            if not mod.startswith("seglog") or mod == "seglog":  # seglog/__init__ holds only the version
                continue
            theirs = package_of(mod)
            if theirs is None or theirs == "cli":
                theirs = mod
            if theirs != mine and theirs not in ALLOWED[mine]:
                bad.append(f"{me} imports {mod}")
    assert bad == [], "; ".join(bad)


def test_no_imports_of_another_modules_private_names():
    bad = []
    for p in FILES:
        me = module_name(p)
        for mod, names in imports(ast.parse(p.read_text())):
            if mod.startswith("seglog") and mod != me:
                bad += [f"{p.relative_to(REPO)}: {mod}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
    assert bad == [], "; ".join(bad)


INDEXER_LEAVES = {  # subpackage of seglog.indexer -> what else of seglog.indexer it may import
    "seglog.indexer.codec": set(),
    "seglog.indexer.indexes": {"seglog.indexer.codec", "seglog.indexer.fsutil"},
}


def test_the_indexers_codec_and_index_files_stay_leaves():
    seen, bad = set(), []
    for p in FILES:
        me = module_name(p) or ""
        leaf = next((pkg for pkg in INDEXER_LEAVES if me == pkg or me.startswith(pkg + ".")), None)
        if leaf is None:
            continue
        seen.add(leaf)
        for mod, _ in imports(ast.parse(p.read_text())):
            if not mod.startswith("seglog.indexer") or mod == leaf or mod.startswith(leaf + "."):
                continue
            if not any(mod == ok or mod.startswith(ok + ".") for ok in INDEXER_LEAVES[leaf]):
                bad.append(f"{me} imports {mod}")
    assert seen == set(INDEXER_LEAVES)
    assert bad == [], "; ".join(bad)


@pytest.mark.parametrize("name", sorted(OLD_NAMES))
def test_the_wheel_maps_every_folder_under_seglog(name):
    text = (REPO / "pyproject.toml").read_text()
    assert f'"seglog.{name}" = "{name}"' in text


def test_the_wheel_lists_every_package():
    """setuptools packs only the packages pyproject.toml lists: a new subpackage left out of the list
    would import from a checkout and be missing from the wheel."""
    import tomllib
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {module_name(p) for p in FILES if p.name == "__init__.py" and module_name(p)}
    assert packages - listed == set()


def test_the_connectors_read_and_write_packages_never_import_each_other():
    """The connector's shape (docs/internals.md): `format` is the storage both use, `read` and `write` stand side
    by side on it, and what serves both (the provider, the table, the catalog, QuerySessions) sits above them in
    `io.seglog.spark`."""
    import re

    java = REPO / "jvm" / "src" / "main" / "java" / "io" / "seglog" / "spark"
    bad = []
    for mine, theirs in (("read", "write"), ("write", "read"), ("format", "read"), ("format", "write")):
        for p in (java / mine).rglob("*.java"):
            code = [ln for ln in p.read_text(encoding="utf-8").splitlines()
                    if not ln.lstrip().startswith(("*", "/*", "//"))]          # a comment may name the other side
            text = "\n".join(code)
            if re.search(rf"\bimport io\.seglog\.spark\.{theirs}\.|\bio\.seglog\.spark\.{theirs}\.[A-Z]", text):
                bad.append(f"{mine}/{p.name} uses {theirs}")
    assert bad == [], bad
