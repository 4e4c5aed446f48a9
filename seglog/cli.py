"""The `seglog` command (docs/spec.md §10): one program fronting the storage core, the sidecar and the demo.

    seglog dump FILE... [--deep-iteration] [--print-data]
    seglog verify ROOT                 seglog describe ROOT [--json]
    seglog offsets-for-times ROOT --topic T --time MS [--partition P]
    seglog recover ROOT [--topic T]    seglog truncate ROOT --topic T --partition P --to-offset N [--yes]
    seglog compact ROOT --topic T [--partition P]
    seglog merge ROOT [--topic T] [--partition P]
    seglog import SOURCE ROOT [--topic T] [--link] [--abort-open-transactions]
    seglog abort-transaction ROOT --topic T --partition P (--producer-id ID [--producer-epoch E] | --all-open)
    seglog compactor run --config FILE [--once]
    seglog demo [--root DIR]

Exit codes: 0 ok; 1 a fault was found or the operation failed; 2 bad arguments. Errors are one
line on stderr (`seglog: error: ...`), never a traceback for an error seglog raises on purpose.
Each subcommand lives in `seglog/commands/<name>.py`.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from seglog import __version__
from seglog.commands import (abort_transaction, compact, delegate, describe, dump, kafka_import, merge, offsets,
                             recover, truncate, verify)
from seglog.commands.common import EXIT_FAULT, EXIT_USAGE, UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seglog", description="A Kafka-format segment log for Spark Structured Streaming.",
        epilog="Exit codes: 0 ok, 1 a fault found or the operation failed, 2 bad arguments.")
    parser.add_argument("--version", action="version", version=f"seglog {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (dump, verify, describe, offsets, recover, truncate, compact, merge, kafka_import, abort_transaction):
        module.add_parser(sub)
    delegate.add_parsers(sub)
    return parser


def _error(message: str) -> None:
    # one line: a message spanning lines would be folded into this one
    print(f"seglog: error: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    # exits 2 on bad usage; `compactor run` and `demo` hand their unknown options to their owner
    args, extra = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    if extra:
        if not getattr(args, "passthrough", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.rest = list(args.rest) + extra
    from seglog.errors import ConfigError, InvalidTopicError, SeglogError

    try:
        return int(args.run(args) or 0)
    except UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except (InvalidTopicError, ConfigError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except SeglogError as exc:
        _error(str(exc))
        return EXIT_FAULT
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError) as exc:
        _error(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
        return EXIT_FAULT
    except BrokenPipeError:
        # `seglog dump ... | head`: the reader left; not an error of ours
        # point stdout at /dev/null so the interpreter's final flush does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("seglog: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
