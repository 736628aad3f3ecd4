"""`hpactl emulator`: run the Kubernetes API emulator standalone until stopped."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import signal
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "emulator",
        help="serve an emulated Kubernetes API (for kubectl, hpactl run, demos)",
        description=(
            "Serve an in-memory Kubernetes API server on loopback, optionally pre-loaded "
            "with manifests, until SIGINT/SIGTERM. It is a test double, not a cluster: "
            "see docs/emulator.md."
        ),
    )
    p.add_argument(
        "files", nargs="*", metavar="FILE", help="YAML/JSON manifests to load ('-' = stdin)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    p.add_argument(
        "--kubeconfig-out",
        metavar="FILE",
        help="write a kubeconfig for kubectl / hpactl run --kubeconfig here",
    )
    p.add_argument(
        "--auth",
        action="store_true",
        help="require bearer tokens (admin token in the kubeconfig) and enforce stored RBAC "
        "for ServiceAccount tokens",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="serve https with a throw-away CA (implied by --auth: kubectl sends tokens "
        "only over https); the kubeconfig carries the CA",
    )
    p.add_argument(
        "--service-account-token",
        action="append",
        default=[],
        metavar="NS/NAME",
        help="with --auth: print a token for this ServiceAccount (repeatable)",
    )
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="inject a fault (syntax: docs/emulator-extras.md; repeatable)",
    )
    p.add_argument(
        "--history-size",
        type=int,
        metavar="N",
        default=10_000,
        help="watch history kept per resource; older resourceVersions get 410 Gone",
    )
    p.add_argument(
        "--bookmark-interval",
        type=float,
        metavar="SECONDS",
        default=60.0,
        help="seconds between watch BOOKMARK events (when the client allows them)",
    )
    p.add_argument(
        "--audit",
        nargs="?",
        type=int,
        const=200_000,
        default=0,
        metavar="SIZE",
        help="record every mutating request (times, method, path, User-Agent, status, the "
        "writes it committed) in a log of SIZE records (default 200000), served at "
        "GET /emulator/audit (docs/emulator-extras.md)",
    )
    p.set_defaults(func=run)


PROG = "hpactl emulator"


class _Mistake(Exception):
    """A user mistake: its one-line message and the exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _check_args(args: argparse.Namespace) -> None:
    """Argument combinations argparse cannot check (exit 2, as argparse's errors)."""
    if args.service_account_token and not args.auth:
        raise _Mistake("error: --service-account-token needs --auth", 2)
    for sa in args.service_account_token:
        ns, sep, name = sa.partition("/")
        if not sep or not ns or not name or "/" in name:
            raise _Mistake(f'error: --service-account-token "{sa}": want NAMESPACE/NAME', 2)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise _Mistake(f"{path}: no such file") from None
    except IsADirectoryError:
        raise _Mistake(f"{path}: is a directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _Mistake(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None


def _check_yaml(path: str, text: str) -> None:
    import yaml

    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise _Mistake(f"{path}: not valid YAML{where}: {problem}") from None
    for i, doc in enumerate(docs, 1):
        if doc is not None and not isinstance(doc, dict):
            raise _Mistake(f"{path}: document {i} is not an object (a {type(doc).__name__})")


def run(args: argparse.Namespace) -> int:
    try:
        _check_args(args)
        return asyncio.run(_serve(args))
    except KeyboardInterrupt:
        return 0
    except _Mistake as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.code
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1


async def _serve(args: argparse.Namespace) -> int:
    from hpactl.emulator import Emulator
    from hpactl.emulator.errors import ApiError

    texts: list[tuple[str, str]] = []
    for f in args.files:
        text = _read(f)
        _check_yaml("stdin" if f == "-" else f, text)
        texts.append(("stdin" if f == "-" else f, text))
    emu = Emulator(
        host=args.host,
        port=args.port,
        auth=args.auth,
        tls=args.tls or args.auth,
        faults=bool(args.fault),
        history_size=args.history_size,
        bookmark_interval=args.bookmark_interval,
        audit=args.audit,
    )
    if args.fault:
        emu.faults.add_specs(args.fault)
    loaded = 0
    for name, text in texts:
        try:
            loaded += emu.load_manifests([text])
        except (ApiError, ValueError, KeyError, TypeError) as exc:  # an invalid object
            raise _Mistake(f"{name}: {exc}") from None
    try:
        await emu.start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            where = f"{args.host}:{args.port}"
            raise _Mistake(f"--host/--port {where}: address already in use") from None
        raise
    try:
        print(f"hpactl emulator serving {emu.url} ({loaded} objects loaded)", flush=True)
        if args.kubeconfig_out:
            emu.write_kubeconfig(args.kubeconfig_out)
            print(f"kubeconfig written to {args.kubeconfig_out}", flush=True)
        for sa in args.service_account_token:
            ns, _, name = sa.partition("/")
            print(f"token for {ns}/{name}: {emu.token_for_service_account(ns, name)}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await emu.stop()
    return 0
