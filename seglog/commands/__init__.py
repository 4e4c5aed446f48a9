"""The `seglog` subcommands, one module each. Each exposes `add_parser(subparsers)` and `run(args) -> int`."""
