"""The twins registry (tests/conformance/twins.json) as docs/internals.md shows it: `render()` makes the table
between the markers, tests/conformance/test_twins.py checks the two are equal.

    python -m tests.conformance.twins --write   # rewrite docs/internals.md's table
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
REGISTRY = HERE / "twins.json"
INTERNALS = REPO / "docs" / "internals.md"
BEGIN, END = "<!-- twins:begin -->", "<!-- twins:end -->"


def twins() -> list[dict]:
    return json.loads(REGISTRY.read_text(encoding="utf-8"))["twins"]


def _short_java(symbol: str) -> str:
    return symbol.removeprefix("io.seglog.spark.")


def render() -> str:
    lines = ["| rule | Python | Java | vectors | runners |", "| --- | --- | --- | --- | --- |"]
    for t in twins():
        py = ", ".join(f"`{s.removeprefix('seglog.')}`" for s in t["python"])
        java = ", ".join(f"`{_short_java(s)}`" for s in t["java"])
        runners = f"`{Path(t['python_runner']).name}`, `{Path(t['java_runner']).stem}`"
        lines.append(f"| {t['rule']} | {py} | {java} | `{t['vectors']}` | {runners} |")
    return "\n".join(lines)


def section(text: str) -> str:
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip("\n")


def write(path: Path = INTERNALS) -> None:
    text = path.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    path.write_text(text[:start] + "\n" + render() + "\n" + text[end:], encoding="utf-8")


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
    else:
        print(render())
