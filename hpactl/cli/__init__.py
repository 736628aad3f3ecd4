"""Command-line entry point: `hpactl <command>`.

Each subcommand lives in its own module exposing ``add_parser(subparsers)``;
the parser it adds sets ``func`` (taking the parsed namespace, returning an
exit code).  Modules are imported here, but heavy dependencies
(kubernetes_asyncio, opentelemetry) are imported only inside ``func``, so
``hpactl --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from hpactl import __version__

# Order is the order shown in `hpactl --help`.
SUBCOMMANDS: tuple[str, ...] = ("run", "simulate", "demo", "emulator", "explain", "convert")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hpactl",
        description="A drop-in replacement for the Kubernetes HorizontalPodAutoscaler controller.",
    )
    parser.add_argument("--version", action="version", version=f"hpactl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"hpactl.cli.{name}_cmd")
        except ModuleNotFoundError as exc:
            if exc.name != f"hpactl.cli.{name}_cmd":
                raise
            continue  # subcommand not built yet
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0
    result: int = func(args)
    return result
