"""Subcommands that hand over to another part: `seglog compactor run ...` (the sidecar) and
`seglog demo ...`. Both are imported lazily, so the rest of the command never pays for them."""
from __future__ import annotations

import argparse
import importlib
import sys

from seglog.commands.common import EXIT_FAULT


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "compactor", help="the sidecar: `seglog compactor run --config FILE [--once]`",
        description="The sidecar that seals, rolls, enforces retention and recovers (docs/spec.md §9).")
    p.add_argument("action", choices=["run"], help="run the sidecar")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="--config FILE [--once]")
    p.set_defaults(run=run_compactor, passthrough=True)

    # Every argument (even --help) goes to seglog.demo.main: the demo owns its options.
    p = subparsers.add_parser("demo", help="write and replay a small demo log ([--root DIR])", add_help=False,
                              description="A small end-to-end demonstration.")
    p.set_defaults(run=run_demo, passthrough=True, rest=[])


def _load(module: str, what: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name in (module, module.rpartition(".")[0]):
            print(f"seglog: {what} is not available in this installation ({module} is missing)", file=sys.stderr)
            return None
        raise


def _rest(args) -> list[str]:
    rest = list(args.rest)
    return rest[1:] if rest[:1] == ["--"] else rest


def run_compactor(args) -> int:
    mod = _load("seglog.compactor.service", "the sidecar")
    if mod is None:
        return EXIT_FAULT
    return int(mod.main(_rest(args)) or 0)


def run_demo(args) -> int:
    mod = _load("seglog.demo", "the demo")
    if mod is None:
        return EXIT_FAULT
    return int(mod.main(_rest(args)) or 0)
