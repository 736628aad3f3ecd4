"""``hpactl run``: the controller, configured with kube-controller-manager's flags.

Flag names, value syntax (Go durations, ``--flag`` / ``--flag=false`` booleans)
and defaults are kube-controller-manager's; the flags come from
``hpactl.config.SETTINGS``.  Bad configuration exits with status 2 and one line
on stderr: ``hpactl run: error: <flag or field>: <problem>``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import os
import sys
from typing import Any

from hpactl import __version__
from hpactl.config import ConfigError
from hpactl.flags import (
    DESCRIPTION,
    HELP_SECTION,
    PROG,
    build_run_parser,
    first_global,
    parse_run_config,
)

__all__ = ["HELP_SECTION", "add_parser", "build_run_parser", "parse_run_config"]


def _run(args: argparse.Namespace) -> int:
    argv: list[str] = list(args.run_argv)
    wanted = first_global(argv)
    if wanted == "--version":
        print(f"hpactl {__version__}")
        return 0
    if wanted is not None:
        build_run_parser().print_help()
        return 0
    try:
        config = parse_run_config(argv, os.environ)
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    for warning in config.warnings:
        print(warning, file=sys.stderr)
    try:
        # Imported late: it pulls in kubernetes_asyncio and the rest of the controller.
        module = importlib.import_module("hpactl.controller.run")
    except ModuleNotFoundError as exc:
        if exc.name not in ("hpactl.controller.run", "hpactl.controller"):
            raise
        print(
            f"{PROG}: the controller is not available in this build yet "
            "(hpactl.controller.run is missing); the configuration is valid.",
            file=sys.stderr,
        )
        return 1
    result: Any = module.run_controller(config)
    if inspect.iscoroutine(result):
        result = asyncio.run(result)
    return int(result or 0)


def add_parser(subparsers: Any) -> None:
    """Register ``run``. Its arguments are handed over untouched (``+`` is the only
    prefix argparse sees here) so that ``parse_run_config`` alone parses them and
    reports errors in one line."""
    parser = subparsers.add_parser(
        "run",
        help="run the HPA controller against a cluster (kube-controller-manager flags)",
        description=DESCRIPTION,
        add_help=False,
        prefix_chars="+",
    )
    parser.add_argument("run_argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.set_defaults(func=_run)
