"""Where the default configuration files live, and YAML loading with errors that name the file.

A configuration file is untrusted input (a mounted ConfigMap, a file anyone on the host may edit), so
the loader refuses, as a ConfigError naming the file and line, what would make start-up hang, crash or
silently mean something else:

- anchors and aliases (``&a``/``*a``): a few hundred bytes of nested aliases stand for billions of
  values once anything walks them (printing one in a message did); a configuration never needs them;
- a key given twice in one mapping: YAML's last-one-wins would silently drop the first;
- nesting deeper than MAX_DEPTH (PyYAML's composer recurses once per level: 10,000 brackets were a
  RecursionError), a file over MAX_BYTES, an integer of more than MAX_INT_CHARS characters (Python
  refuses int() past 4300 digits; every seglog integer fits in 19), and text that is not UTF-8.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from seglog.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parent

MAX_BYTES = 1 << 20        # the shipped files are a few KiB; a MiB of YAML is no configuration
MAX_DEPTH = 32             # the deepest a seglog file goes is 3 (topics.<name>.<key>)
MAX_INT_CHARS = 64         # underscores and a sign included; int64 has 19 digits


def default_file(name: str) -> Path:
    """Path of a default file shipped in conf/ (``topic.yaml``, ``compactor.yaml``)."""
    return CONF_DIR / name


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "?"


class _Refused(yaml.YAMLError):
    def __init__(self, problem: str, mark: Any):
        super().__init__(f"{_at(mark)}: {problem}")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors, aliases, duplicate keys, deep nesting and huge integers."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(f"alias '*{event.anchor}' is not allowed in a configuration (write the value out)",
                           event.start_mark)
        if getattr(event, "anchor", None) is not None:
            raise _Refused(f"anchor '&{event.anchor}' is not allowed in a configuration (write the value out)",
                           event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue        # `<<:` merges, which flatten_mapping resolves below
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:   # an unhashable key: SafeLoader's own check names it
                    continue
                if duplicate:
                    raise _Refused(f"key {key!r} appears twice in one mapping (only one may be given)",
                                   key_node.start_mark)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        if len(str(node.value)) > MAX_INT_CHARS:
            raise _Refused(f"an integer of {len(node.value)} characters; at most {MAX_INT_CHARS} are allowed",
                           node.start_mark)
        return super().construct_yaml_int(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


def load_yaml(path: str | Path) -> Any:
    """The YAML document in `path` under the rules above; every failure is a ConfigError naming the file."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"configuration file {path} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"configuration file {path} is larger than {MAX_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"configuration file {path} is not UTF-8 text: byte {exc.start} (line {line}) "
                          f"is {data[exc.start:exc.start + 1]!r}") from None
    loader = None
    try:
        loader = _StrictLoader(text)    # its reader refuses unprintable characters here: inside the try
        loader.name = str(path)     # PyYAML's own messages then name the file too
        return loader.get_single_data()
    except _Refused as exc:
        raise ConfigError(f"configuration file {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {' '.join(str(exc).split())}") from None
    except (ValueError, RecursionError, MemoryError) as exc:    # safety net: never a traceback
        raise ConfigError(f"configuration file {path} cannot be loaded: {type(exc).__name__}") from None
    finally:
        if loader is not None:
            loader.dispose()
