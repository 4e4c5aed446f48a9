"""The read and write options of format("seglog"), declared once in conf/options.yaml.

Both option parsers (source/options.py; the jar's read/ReadOptions.java and write/WriteOptions.java) are
checked against this table by tests (tests/source/test_option_table.py, the JUnit OptionTableTest), and
README's option reference is rendered from it (`render()`, between the markers below), so a name, a
default or a side cannot drift between the two languages and the docs.

    python -m seglog.conf.option_table          # print README's section
    python -m seglog.conf.option_table --write  # rewrite it
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from seglog.conf.files import default_file, load_yaml
from seglog.errors import ConfigError
from seglog.conf.generated_text import between, rewrite_between

BEGIN, END = "<!-- option-reference:begin -->", "<!-- option-reference:end -->"
README = Path(__file__).resolve().parents[1] / "README.md"
SIDES = ("jvm", "python")
KINDS = ("read", "write")


@dataclass(frozen=True)
class Option:
    kind: str                  # read | write
    name: str                  # as users spell it
    type: str
    default: str | None        # as text; None: no default
    allowed: str
    sides: tuple[str, ...]     # the parsers that take it
    only: str | None = None    # stream | jvm: where a read option has effect (None: wherever taken)
    sink: str | None = None    # the SegmentLogSink argument that sets a write option


def _option(kind: str, name: str, spec: object) -> Option:
    where = f"conf/options.yaml {kind}.{name}"
    if not isinstance(spec, dict) or not {"type", "default", "allowed", "sides"} <= set(spec):
        raise ConfigError(f"{where}: needs type, default, allowed and sides")
    allowed = spec["allowed"]
    allowed = ", ".join(allowed) if isinstance(allowed, list) else str(allowed)
    sides = tuple(spec["sides"])
    if not sides or set(sides) - set(SIDES):
        raise ConfigError(f"{where}: sides {sides!r}; allowed: some of {SIDES}")
    default = spec["default"]
    return Option(kind, name, str(spec["type"]), None if default is None else str(default), allowed, sides,
                  spec.get("only"), spec.get("sink"))


def load() -> Mapping[str, Mapping[str, Option]]:
    """{"read": {name: Option}, "write": {name: Option}}, in the file's order."""
    doc = load_yaml(default_file("options.yaml")) or {}
    if set(doc) != set(KINDS):
        raise ConfigError(f"conf/options.yaml: sections {sorted(doc)}; allowed: {list(KINDS)}")
    return MappingProxyType({kind: MappingProxyType({name: _option(kind, name, spec)
                                                    for name, spec in doc[kind].items()}) for kind in KINDS})


def render() -> str:
    table = load()
    lines = ["Read and write options of `format(\"seglog\")` (`conf/options.yaml`; keys are case-insensitive; "
             "the write also takes topic configuration by Kafka's names, above):", "",
             "| option | read/write | default | allowed | taken by |", "| --- | --- | --- | --- | --- |"]
    for kind in KINDS:
        for o in table[kind].values():
            taken = " and ".join("the jar" if s == "jvm" else "the Python reader" for s in o.sides)
            if o.only == "stream":
                taken += " (streams only)"
            elif o.only == "jvm":
                taken += " (no effect in the Python reader)"
            if o.sink:
                taken += f"; SegmentLogSink `{o.sink}`"
            default = "-" if o.default is None else f"`{o.default}`"
            lines.append(f"| `{o.name}` | {kind} | {default} | {o.allowed} | {taken} |")
    return "\n".join(lines)


def readme_section(text: str) -> str:
    return between(text, BEGIN, END)


def write_readme(path: Path = README) -> None:
    rewrite_between(path, BEGIN, END, render())


if __name__ == "__main__":
    if "--write" in sys.argv:
        write_readme()
    else:
        print(render())
