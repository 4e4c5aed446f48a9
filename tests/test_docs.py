"""The docs stand alone (docs/internals.md): every module is on the module map, and every reference the
code makes to docs/ (a file, a numbered section `§3.7`, or a quoted heading) resolves in a clone."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_architecture import FILES, REPO, module_name

DOCS = REPO / "docs"
SOURCE_DIRS = ("indexer", "sink", "source", "compactor", "conf", "seglog", "jvm", "scripts", ".ci", "bench")
REFERENCE = re.compile(r"docs/([A-Za-z-]+\.md)(?:,? ?§ ?([0-9][0-9.]*(?:, ?[0-9][0-9.]*)*)|, \"([^\"]+)\")?")


def code_files():
    for folder in SOURCE_DIRS:
        for path in (REPO / folder).rglob("*"):
            if path.suffix in {".py", ".java", ".sh", ".xml"} or path.name == "run":
                if not {".venv", "target", "__pycache__", "work"} & set(path.relative_to(REPO).parts):
                    yield path


def sections(doc: Path) -> set[str]:
    """Numbers of '## 3.' / '### 3.7' headings."""
    return {m.group(1).rstrip(".") for m in re.finditer(r"^#+ ([0-9][0-9.]*)\s", doc.read_text(), re.M)}


def headings(doc: Path) -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^#+ (.+)$", doc.read_text(), re.M)}


def references():
    for path in code_files():
        for m in REFERENCE.finditer(path.read_text(errors="replace")):
            yield path.relative_to(REPO), m.group(1), m.group(2), m.group(3)


def test_the_scan_finds_references():
    found = list(references())
    assert len(found) > 50
    assert any(section for _, _, section, _ in found)
    assert any(heading for _, _, _, heading in found)


def test_every_docs_reference_in_the_code_resolves():
    bad = []
    for where, doc, numbers, heading in references():
        path = DOCS / doc
        if not path.is_file():
            bad.append(f"{where}: docs/{doc} does not exist")
            continue
        for number in re.split(r", ?", numbers or ""):
            if number and number.rstrip(".") not in sections(path):
                bad.append(f"{where}: docs/{doc} has no section §{number}")
        if heading and not any(h == heading or h.startswith(heading) for h in headings(path)):
            bad.append(f'{where}: docs/{doc} has no heading "{heading}"')
    assert bad == [], "\n".join(sorted(set(bad)))


def test_no_code_cites_files_outside_the_repository():
    bad = [f"{p.relative_to(REPO)}:{n}" for p in code_files()
           for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
           if re.search(r"\bSPEC\.md|\bSPEC §|\bseeds?/|\bseed [0-9]{3}\b|\.\./shared|SPARK_NOTES|STYLE\.md", line)]
    assert bad == []


def module_map_entries():
    """(section, entry) per module: `seglog.indexer` + `log` for indexer/log.py, `seglog.indexer` +
    `__init__` for indexer/__init__.py."""
    for path in FILES:
        module = module_name(path)
        if module is None:
            continue
        if path.stem == "__init__":
            yield module, "__init__"
        else:
            package, _, leaf = module.rpartition(".")
            yield package, leaf


@pytest.mark.parametrize("section,entry", sorted(module_map_entries()))
def test_every_module_is_on_the_module_map(section, entry):
    text = (DOCS / "internals.md").read_text()
    found = re.search(rf"^### `{re.escape(section)}`.*?(?=^##|\Z)", text, re.M | re.S)
    assert found is not None, f"docs/internals.md has no section for {section}"
    assert f"| `{entry}` |" in found.group(0), f"docs/internals.md's section {section} does not map `{entry}`"
