"""The configuration reference in README.md, generated from conf/ (and the sidecar's rules), so the
two cannot drift: tests/cli/test_config_reference.py fails when README's table differs from `render()`.

    python -m seglog.config_reference          # print the table
    python -m seglog.config_reference --write  # rewrite README.md's section
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from seglog.conf.files import default_file
from seglog.conf.topic_config import ALIASES, RULES, TOPIC_DEFAULTS
from seglog.conf.generated_text import between, rewrite_between

BEGIN, END = "<!-- config-reference:begin -->", "<!-- config-reference:end -->"
README = Path(__file__).resolve().parents[1] / "README.md"


def _comments() -> dict[str, str]:
    """The `# comment` after each key in conf/topic.yaml."""
    out = {}
    for line in default_file("topic.yaml").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([a-z.]+):\s*[^#]*#\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def render() -> str:
    from seglog.compactor.config import HTTP_DEFAULTS, SCHEDULE_RULES

    notes = _comments()
    lines = ["Topic configuration (`conf/topic.yaml`; Kafka's names; per-topic overrides in the sink's "
             "`config=` or the sidecar's `topics:`):", "",
             "| key | default | allowed | meaning |", "| --- | --- | --- | --- |"]
    for key, rule in RULES.items():
        default = TOPIC_DEFAULTS[key]
        shown = "null" if default is None else str(default).lower() if isinstance(default, bool) else default
        lines.append(f"| `{key}` | `{shown}` | {rule.describe()} | "
                     f"{notes.get(key, '')} |")
    lines += ["", "Older names accepted as aliases: " + "; ".join(
        f"`{alias}` sets " + " and ".join(f"`{t}`" for t in targets) for alias, targets in ALIASES.items()) + "."]
    lines += ["", "Sidecar schedule (`conf/compactor.yaml`, section `schedule:`):", "",
              "| key | default | allowed | what it paces |", "| --- | --- | --- | --- |"]
    for key, rule in SCHEDULE_RULES.items():
        lines.append(f"| `{key}` | `{rule.default}` | {rule.describe()} | {rule.help} |")
    lines += ["", "Sidecar HTTP (`http:`): " + ", ".join(f"`{k}` (default `{v}`)" for k, v in HTTP_DEFAULTS.items())
              + "."]
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
