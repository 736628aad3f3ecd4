"""``hpactl explain NAMESPACE/NAME``: why an HPA did or did not scale, with the numbers.

The HPA is named as ``NAMESPACE/NAME`` (autoscaling/v2), or kubectl's way with
``-n NAMESPACE`` and ``[TYPE/]NAME``, where TYPE ``hhpa`` (or
``horizontalpodautoscalers.autoscaling.hpactl.dev``) names hpactl's own
HorizontalPodAutoscaler (``--hpa-sources=crd``) and ``hpa`` the built-in one; the
controller's key of an hpactl one, ``NAMESPACE/hhpa:NAME``, is accepted too.

Two sources, tried in order:

1. a running hpactl's decision records (``GET {server}/debug/hpa/{namespace}/{name}``,
   served by ``hpactl run --enable-debug-endpoints``): ``--server URL``, else
   ``$HPACTL_SERVER``, else ``http://127.0.0.1:8080`` (where ``kubectl port-forward``
   puts hpactl's metrics port); ``--server ''`` skips this step;
2. when no hpactl answers with records: a one-off decision computed now from the
   cluster's current state (read-only, through ``--kubeconfig`` / ``--context``), which
   says what it cannot know (the stabilization windows' history, past scale events).

``--feature-gates`` takes ``hpactl run``'s gates (same syntax and checks) for the
one-off decision, so that the opt-in extensions (docs/extensions.md) decide as in
the controller; a running hpactl's records already reflect its own gates.

``--output json`` prints the records document (``{"hpa", "source", "records"}``).
Also a kubectl plugin: the ``kubectl-hpactl`` entry point makes ``kubectl hpactl
explain ns/name`` work.

Exit status: 0 with an answer; 2 for a bad NAMESPACE/NAME; 1 when the HPA cannot be
explained (it does not exist, the cluster cannot be reached), with one line
``hpactl explain: error: ...`` on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpactl.core.decide import CoreConfig

PROG = "hpactl explain"
DEFAULT_SERVER = "http://127.0.0.1:8080"
SERVER_ENV = "HPACTL_SERVER"

# A DNS-1123 label (namespace) and subdomain (HPA name), as the API server validates.
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _error(message: str, code: int) -> int:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return code


# kubectl's names of the two resources (resource, singular, short name, qualified).
_BUILTIN_TYPES = frozenset(
    {
        "hpa",
        "horizontalpodautoscaler",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler.autoscaling",
        "horizontalpodautoscalers.autoscaling",
    }
)
_CRD_TYPES = frozenset(
    {
        "hhpa",
        "horizontalpodautoscaler.autoscaling.hpactl.dev",
        "horizontalpodautoscalers.autoscaling.hpactl.dev",
    }
)
_KEY_PREFIX = "hhpa:"  # hpactl.model.hpa.CR_KEY_PREFIX (the cli imports lazily)


def parse_target(text: str, namespace: str | None = None) -> tuple[str, str]:
    """``ns/name`` (or, with ``namespace``, ``[type/]name``) → (ns, name), the name
    of an hpactl HorizontalPodAutoscaler prefixed ``hhpa:`` (the controller's key);
    ValueError with a one-line message otherwise."""
    crd = False
    if namespace is None:
        ns, sep, name = text.partition("/")
        if not sep or not ns or not name:
            raise ValueError(f'expected NAMESPACE/NAME (or -n NAMESPACE TYPE/NAME), got "{text}"')
    else:
        ns = namespace
        kind, sep, name = text.rpartition("/")
        if sep:
            if kind.lower() in _CRD_TYPES:
                crd = True
            elif kind.lower() not in _BUILTIN_TYPES:
                raise ValueError(f'"{kind}" is not a HorizontalPodAutoscaler type (hpa or hhpa)')
    if name.startswith(_KEY_PREFIX):
        crd, name = True, name[len(_KEY_PREFIX) :]
    if not _NAMESPACE.match(ns):
        raise ValueError(f'"{ns}" is not a valid namespace name')
    if not _NAME.match(name):
        raise ValueError(f'"{name}" is not a valid HorizontalPodAutoscaler name')
    return ns, (_KEY_PREFIX + name if crd else name)


def core_config(gate_values: list[str] | None) -> CoreConfig:
    """The decision settings ``hpactl run`` would use with these ``--feature-gates``
    values (joined by commas, as run joins repeated flags; the other HPA flags at
    their defaults); ValueError with run's one-line message."""
    from hpactl.core.decide import CoreConfig
    from hpactl.model.featuregates import FeatureGateError, parse_feature_gates

    try:
        gates = parse_feature_gates(",".join(gate_values or ()))
    except FeatureGateError as exc:
        raise ValueError(f"--feature-gates: {exc}") from None
    return CoreConfig.from_flags(gates)


async def _explain(
    args: argparse.Namespace, ns: str, name: str, config: CoreConfig
) -> tuple[dict[str, Any], str]:
    """(document, source) — records from a server, else a one-off decision."""
    from hpactl.controller.explain import explain_once, fetch_records

    server = args.server
    if server is None:
        server = os.environ.get(SERVER_ENV, DEFAULT_SERVER)
    if server:
        answer = await fetch_records(
            server,
            ns,
            name,
            token=args.token,
            insecure=args.insecure_skip_tls_verify,
            timeout=args.timeout,
        )
        if answer.doc is not None:
            return {**answer.doc, "source": "server", "server": server}, "server"
        if args.server is not None:  # asked for explicitly: say why it was not used
            print(f"{PROG}: {answer.note}; computing a one-off decision", file=sys.stderr)
    crd = name.startswith(_KEY_PREFIX)
    doc = await explain_once(
        ns,
        name[len(_KEY_PREFIX) :] if crd else name,
        kubeconfig=args.kubeconfig,
        context=args.context,
        config=config,
        timeout=args.timeout,
        crd=crd,
    )
    return {"hpa": doc["hpa"], "source": "one-off", "records": [doc]}, "one-off"


def _run(args: argparse.Namespace) -> int:
    from hpactl.controller.explain import ExplainError
    from hpactl.controller.explain_text import render_one_off, render_records

    try:
        ns, name = parse_target(args.target, args.namespace)
    except ValueError as exc:
        return _error(str(exc), 2)
    try:
        config = core_config(args.feature_gates)
    except ValueError as exc:
        return _error(str(exc), 2)
    try:
        doc, source = asyncio.run(_explain(args, ns, name, config))
    except ExplainError as exc:
        return _error(exc.message, exc.code)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # anything unexpected: one line, not a traceback
        return _error(f"{type(exc).__name__}: {exc}", 1)
    if args.output == "json":
        print(json.dumps(doc, indent=2))
    elif source == "server":
        sys.stdout.write(render_records(doc))
    else:
        sys.stdout.write(render_one_off(doc["records"][0]))
    return 0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="say why an HPA did or did not scale, with the numbers",
        description=(
            "Explain an HPA's latest decisions: from a running hpactl's decision records "
            "(hpactl run --enable-debug-endpoints), or, when none answers, from a one-off "
            "decision computed from the cluster's current state."
        ),
    )
    parser.add_argument(
        "target",
        metavar="NAMESPACE/NAME",
        help=(
            "the HorizontalPodAutoscaler; with -n, [TYPE/]NAME where TYPE hhpa names "
            "hpactl's own (autoscaling.hpactl.dev) and hpa the built-in one"
        ),
    )
    parser.add_argument(
        "--namespace",
        "-n",
        metavar="NAMESPACE",
        help="the HPA's namespace; the target is then [TYPE/]NAME (e.g. hhpa/web)",
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        help=(
            "a running hpactl's metrics address, e.g. http://127.0.0.1:8080 after "
            f"kubectl port-forward (default: ${SERVER_ENV}, else {DEFAULT_SERVER}; "
            "'' computes a one-off decision directly)"
        ),
    )
    parser.add_argument(
        "--token", metavar="TOKEN", help="bearer token for a server run with --metrics-secure"
    )
    parser.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="do not verify the server's certificate (self-signed --metrics-secure)",
    )
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig for the one-off decision")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")
    parser.add_argument(
        "--feature-gates",
        action="append",
        metavar="NAME=BOOL,...",
        help=(
            "hpactl run's feature gates, for the one-off decision (e.g. "
            "HPASuspend=true,HPASelectionStrategy=true); may be repeated"
        ),
    )
    parser.add_argument(
        "--output", "-o", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="for each request (default 5)",
    )
    parser.set_defaults(func=_run)
