"""`hpactl emulator`: run the Kubernetes API emulator standalone until stopped."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_serve(args))
    except KeyboardInterrupt:
        return 0
    except (OSError, ValueError) as exc:
        print(f"hpactl emulator: {exc}", file=sys.stderr)
        return 1


async def _serve(args: argparse.Namespace) -> int:
    from hpactl.emulator import Emulator

    texts = []
    for f in args.files:
        texts.append(sys.stdin.read() if f == "-" else Path(f).read_text())
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
    loaded = emu.load_manifests(texts)
    await emu.start()
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
