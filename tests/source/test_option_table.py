"""conf/options.yaml is the one declaration of the read and write options: the Python reader's parser, the
sink's options, README's option reference and docs/spec.md's tables are held to it here (the jar's parsers
by the JUnit OptionTableTest, which reads the same file)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from seglog.conf import option_table
from seglog.errors import ConfigError
from seglog.sink.segment_log_sink import SegmentLogSink
from seglog.source.options import BROKER_ONLY_OPTIONS, KNOWN_OPTIONS, parse_options

REPO = Path(__file__).resolve().parents[2]
TABLE = option_table.load()
READ, WRITE = TABLE["read"], TABLE["write"]
PY_READ = {name: o for name, o in READ.items() if "python" in o.sides}
BASE = {"path": "/data/log", "topic": "events"}

# The SourceOptions field of an option whose name does not snake-case to it.
FIELD = {"startingOffsetsByTimestampStrategy": "strategy", "isolation.level": "isolation_level",
         "kafka.isolation.level": "isolation_level"}


def _field(name: str) -> str:
    return FIELD.get(name, re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name))


def _shown(value: object) -> str | None:
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_python_reader_takes_exactly_the_python_side():
    assert set(KNOWN_OPTIONS.values()) == set(PY_READ)
    assert not set(BROKER_ONLY_OPTIONS.values()) & set(READ), "a broker-only option is refused, never declared"


@pytest.mark.parametrize("name", sorted(set(READ) - set(PY_READ)))
def test_python_reader_refuses_the_jvm_only_options(name):
    with pytest.raises(ConfigError, match="unknown option"):
        parse_options({**BASE, name.lower(): "1"})


# Options that choose the topics or a bound rather than set a field: the table gives them no default.
CHOOSING = {"path", "topic", "subscribe", "subscribePattern", "assign", "startingTimestamp", "endingTimestamp",
            "startingOffsetsByTimestamp", "endingOffsetsByTimestamp"}


def test_choosing_options_have_no_default():
    assert all(READ[name].default is None for name in CHOOSING)


@pytest.mark.parametrize("name", sorted(set(PY_READ) - CHOOSING))
def test_python_reader_defaults_are_the_tables(name):
    o, parsed = PY_READ[name], parse_options(BASE)
    if name in ("startingOffsets", "endingOffsets"):
        got = (parsed.starting if name == "startingOffsets" else parsed.ending).kind
    else:
        got = _shown(getattr(parsed, _field(name)))
    assert got == o.default, f"{name}: Python's default {got!r}, conf/options.yaml {o.default!r}"


@pytest.mark.parametrize("name", sorted(n for n, o in PY_READ.items() if o.type in ("bool", "int", "enum")))
def test_python_reader_refuses_a_value_of_the_wrong_type_naming_the_option(name):
    with pytest.raises(ConfigError, match=re.escape(repr(name))):
        parse_options({**BASE, name.lower(): "not-a-value"})


def test_python_reader_takes_every_allowed_enum_and_bool_value():
    for name, o in PY_READ.items():
        if o.type in ("bool", "enum"):
            for value in o.allowed.split(", "):
                parse_options({**BASE, name.lower(): value})


def test_sink_sets_only_declared_write_options(tmp_path):
    sink = SegmentLogSink(str(tmp_path), topic="t", partitions=2, writer_id="w", lock_timeout=5, rename_min_bytes=10)
    sent = set(sink.options(3))
    assert sent <= set(WRITE), f"SegmentLogSink sends options conf/options.yaml does not declare: {sent - set(WRITE)}"
    by_arg = {o.sink: name for name, o in WRITE.items() if o.sink not in (None, "root")}
    assert set(by_arg.values()) <= sent, "every write option the table gives a sink argument is sent"
    assert sink.options(3)["lockTimeoutMs"] == "5000" and SegmentLogSink(str(tmp_path)).options(0)["lockTimeoutMs"] \
        == WRITE["lockTimeoutMs"].default


def test_readme_option_reference_is_rendered_from_the_table():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert option_table.readme_section(text) == option_table.render(), \
        "README's option reference is stale: python -m seglog.conf.option_table --write"


def _spec_read_rows() -> dict[str, list[str]]:
    """docs/spec.md §8's options table: each option named in a row's first cell -> the row's cells."""
    text = (REPO / "docs" / "spec.md").read_text(encoding="utf-8")
    start = text.index("| option | value | default | read | meaning |")
    rows: dict[str, list[str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells
    return rows


def test_spec_read_table_names_every_read_option_and_no_other():
    rows = _spec_read_rows()
    assert set(rows) == set(READ) - {"path"}, "docs/spec.md §8's table and conf/options.yaml name other options"
    for name, o in READ.items():
        if name == "path":
            continue
        cells = rows[name]
        if o.only == "stream":
            assert cells[3] == "stream", f"{name} is for streams only"
        if o.default is not None and cells[2] and o.type in ("bool", "int", "enum", "duration"):
            assert f"`{o.default}`" in cells[2], f"docs/spec.md gives {name} the default {cells[2]!r}, the table {o.default!r}"


def test_spec_write_options_name_every_write_option():
    text = (REPO / "docs" / "spec.md").read_text(encoding="utf-8")
    bullet = text[text.index("- Options: `topic`"):]
    bullet = bullet[:bullet.index("\n- ")]
    named = set(re.findall(r"`([A-Za-z]+)`", bullet))
    # path is save(root); renameMinBytes is for tests (WriteOptions: hidden)
    assert set(WRITE) - {"path", "renameMinBytes"} <= named
