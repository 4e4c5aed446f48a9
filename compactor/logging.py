"""JSON-line logs on stderr: one object per line with ``ts``, ``level``, ``event`` and the event's fields.

``event(name, **fields)`` is what the sidecar's code calls; records from other libraries (APScheduler)
go through the same formatter, with their message as the event.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, TextIO

LOGGER_NAME = "seglog.compactor"
_FIELDS = "seglog_fields"
_EVENT = "seglog_event"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    return repr(value)


class JsonLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        out: dict[str, Any] = {
            "ts": f"{ts}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "event": getattr(record, _EVENT, None) or record.getMessage(),
        }
        if record.name != LOGGER_NAME:
            out["logger"] = record.name
        for key, value in (getattr(record, _FIELDS, None) or {}).items():
            out.setdefault(key, _jsonable(value))
        if record.exc_info and record.exc_info[0] is not None:
            out["error"] = f"{record.exc_info[0].__name__}: {record.exc_info[1]}"
            out["traceback"] = self.formatException(record.exc_info)
        # One object per line, whatever the fields hold (json escapes newlines).
        return json.dumps(out, separators=(",", ":"), default=repr)


_handler: logging.Handler | None = None


def setup(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Send the sidecar's and APScheduler's logs to ``stream`` (stderr) as JSON lines. Idempotent."""
    global _handler
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    # APScheduler warns on every coalesced or skipped run, which is by design here (max_instances=1).
    # uvicorn logs its start and stop at INFO, and a client's bad request at WARNING.
    for name, lvl in ((LOGGER_NAME, level), ("apscheduler", logging.ERROR), ("uvicorn", logging.ERROR)):
        logger = logging.getLogger(name)
        if _handler is not None:
            logger.removeHandler(_handler)
        logger.addHandler(handler)
        logger.setLevel(lvl)
        logger.propagate = False
    _handler = handler


def event(name: str, level: int = logging.INFO, exc_info: Any = None, **fields: Any) -> None:
    """Log one event: ``event("segment.sealed", topic="t", partition=0, bases=[...])``."""
    logging.getLogger(LOGGER_NAME).log(level, name, exc_info=exc_info,
                                       extra={_EVENT: name, _FIELDS: fields})
