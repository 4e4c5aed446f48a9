"""Where the default configuration files live, and YAML loading with errors that name the file."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from seglog.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parent


def default_file(name: str) -> Path:
    """Path of a default file shipped in conf/ (``topic.yaml``, ``compactor.yaml``)."""
    return CONF_DIR / name


def load_yaml(path: str | Path) -> Any:
    try:
        with open(path, "r", encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from None
