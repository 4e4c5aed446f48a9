"""The seglog sidecar: scheduled jobs (recover, roll, seal, retention, purge) over every partition of a
root, a leader lock so one sidecar works per root, HTTP endpoints and JSON-line logs (docs/spec.md §9).

Entry points: ``compactor.service.main(argv)`` (``python -m seglog.compactor``) and
``compactor.service.run(config_path, once=False) -> int`` (``seglog compactor run``).
"""
from seglog.compactor.config import CompactorConfig, load_config, parse_config

__all__ = ["CompactorConfig", "load_config", "parse_config"]
