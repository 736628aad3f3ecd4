"""Security of a running hpactl: no secret in any output, and servers that serve only
what they must.

* ``hpactl run`` at the most verbose level (-v=10), JSON and console logging, tracing
  exported to an in-test OTLP receiver, with a ServiceAccount's bearer token over TLS,
  under the manifests' RBAC, through a sync that scales, a metrics API answering 503,
  a 403 (a rule dropped while it runs), a failing scrape of the secure /metrics, and a
  401 (a token the server does not know): the token never shows in stdout, stderr,
  any span, any Event or HPA status written, or the /metrics body — nor its base64,
  nor an Authorization header. Same for ``hpactl explain``'s output and errors.
* The probes server answers /healthz, /livez, /readyz and /readyz/<check> only; the
  metrics server /metrics only (and /debug/hpa with --enable-debug-endpoints); every
  other path is 404; a loopback bind address listens on loopback only; "0" disables
  a server.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
import socket
import ssl
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultRule

from .support import (
    APP_NAMESPACE,
    HPACTL_NAMESPACE,
    HPACTL_SA,
    HpactlProcess,
    events,
    hpactl_argv,
    load_docs,
    poll,
    poll_async,
    rbac_files,
    run_flags,
    seed_cluster,
    unmet,
)

pytestmark = pytest.mark.timeout(180)

Obj = dict[str, Any]
HPACTL = str(Path(sys.executable).parent / "hpactl")


# --------------------------------------------------------------------------- helpers


@dataclass
class Receiver:
    """An OTLP/HTTP trace receiver keeping every export request whole (text form)."""

    url: str = ""
    exports: list[str] = field(default_factory=list)
    spans: int = 0


@pytest.fixture
async def otlp() -> AsyncIterator[Receiver]:
    rec = Receiver()

    async def traces(request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        msg = ExportTraceServiceRequest()
        msg.ParseFromString(body)
        # Every field: names, attributes, events, status messages, resource attributes.
        rec.exports.append(str(msg))
        rec.spans += sum(len(ss.spans) for rs in msg.resource_spans for ss in rs.scope_spans)
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    rec.url = f"http://127.0.0.1:{port}/v1/traces"
    yield rec
    await runner.cleanup()


def _needles(*tokens: str) -> list[str]:
    """What must never show: each token, its base64 (as a kubeconfig or a basic-auth
    header would carry it) and an Authorization header's scheme."""
    out = ["Bearer ", "bearer "]
    for token in tokens:
        out += [token, base64.b64encode(token.encode()).decode().rstrip("=")]
        out.append(base64.urlsafe_b64encode(token.encode()).decode().rstrip("="))
    return out


def _leaks(texts: dict[str, str], needles: list[str]) -> list[tuple[str, str]]:
    return [(where, n) for where, text in texts.items() for n in needles if n in text]


def _apply_rbac(emu: Emulator, drop: tuple[str, str] | None = None) -> None:
    """The manifests' namespace, account, roles and bindings, written to the store;
    without the ClusterRole rule for (apiGroup, resource) `drop`, if given."""
    for path in rbac_files():
        for doc in load_docs(path):
            if drop is not None and doc["kind"] == "ClusterRole":
                if doc["metadata"]["name"] != "hpactl":
                    emu.apply_object(doc)
                    continue
                doc["rules"] = [
                    r for r in doc["rules"] if (r["apiGroups"][0], r["resources"][0]) != drop
                ]
            emu.store.ensure_namespace(doc)
            emu.apply_object(doc)


def _scraper_token(emu: Emulator, name: str = "prometheus") -> str:
    """A ServiceAccount bound to hpactl-metrics-reader (as Prometheus would be)."""
    emu.apply_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}})
    emu.apply_object(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"hpactl-metrics-reader-{name}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "hpactl-metrics-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "monitoring"}],
        }
    )
    return emu.token_for_service_account("monitoring", name)


async def _get(
    port: int, path: str, *, token: str | None = None, tls: bool = False
) -> tuple[int, str]:
    """A raw HTTP/1.1 GET of exactly `path` (no client-side normalisation of "..")."""
    context = None
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection("127.0.0.1", port, ssl=context), 10
    )
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n".encode()
    )
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.decode(errors="replace").partition("\r\n\r\n")
    return int(head.split()[1]), body


async def _ready(port: int, path: str, timeout: float = 30) -> bool:
    """Whether a tokenless GET of `path` over TLS answers 200 within `timeout` s."""
    return await poll_async(lambda: _status(port, path), 200, timeout)


async def _status(port: int, path: str) -> int:
    return (await _get(port, path, tls=True))[0]


async def _run(*args: str, timeout: float = 60) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        HPACTL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _written(emu: Emulator) -> dict[str, str]:
    """Everything hpactl writes to the server that people read: Events and HPAs."""
    hpas = emu.store.list("autoscaling", "horizontalpodautoscalers", APP_NAMESPACE)
    return {
        "events": json.dumps(events(emu)) + json.dumps(events(emu, HPACTL_NAMESPACE)),
        "hpas": json.dumps(list(hpas)),
        "leases": json.dumps(list(emu.store.list("coordination.k8s.io", "leases", None))),
    }


def _has_event(emu: Emulator, reason: str, text: str = "") -> bool:
    return any(e.get("reason") == reason and text in str(e.get("message", "")) for e in events(emu))


# --------------------------------------------------------------------------- no secret anywhere


async def test_no_token_in_any_output_at_the_most_verbose_level(
    tmp_path: Path, otlp: Receiver
) -> None:
    async with Emulator(auth=True, tls=True, faults=True, bookmark_interval=0.5) as emu:
        _apply_rbac(emu)
        seed_cluster(emu)
        token = emu.token_for_service_account(HPACTL_NAMESPACE, HPACTL_SA)
        scraper = _scraper_token(emu)
        # A second scraper: hpactl caches authentication answers for a while, so the
        # failing scrape below uses a token it has not seen.
        scraper2 = _scraper_token(emu, "prometheus-2")
        stranger = "sa.bm90LWtub3du.not-a-token-this-server-issued"
        kubeconfig = emu.write_kubeconfig(tmp_path / "hpactl.kubeconfig", token=token)
        argv = [
            *hpactl_argv(),
            *run_flags(kubeconfig, leader_elect=True),
            "-v=10",
            "--metrics-secure",
            "--enable-debug-endpoints",
        ]
        env = {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": otlp.url,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        }
        texts: dict[str, str] = {}
        async with HpactlProcess(argv, env={**os.environ, **env}) as proc:
            # 1. Syncs that scale (every HPA of the seeded cluster reaches its size).
            assert await poll(lambda: not unmet(emu), 40), f"{unmet(emu)}\n{proc.output()}"
            serving = await proc.wait_for_record("hpactl.serving", 5)
            port = serving["metrics_port"]
            code, body = await _get(port, "/metrics", token=scraper, tls=True)
            assert code == 200 and "hpactl_leader 1.0" in body
            texts["metrics"] = body
            # The debug records need more than the metrics reader's role (an admin's here).
            code, body = await _get(port, "/debug/hpa/default/web", token=scraper, tls=True)
            assert code == 403, body
            texts["forbidden debug"] = body
            admin = emu.admin_token
            code, body = await _get(port, "/debug/hpa/default/web", token=admin, tls=True)
            assert code == 200, body
            texts["debug"] = body
            # 2. The resource metrics API answers 503.
            fault = emu.faults.add(FaultRule.error(503, path="/apis/metrics.k8s.io/*"))
            assert await poll(lambda: _has_event(emu, "FailedGetResourceMetric"), 20)
            emu.faults.remove(fault)
            # 3. A 403: the custom metrics rule dropped while hpactl runs.
            _apply_rbac(emu, drop=("custom.metrics.k8s.io", "*"))
            assert await poll(lambda: _has_event(emu, "FailedGetObjectMetric", "forbidden"), 20)
            # 4. A failing scrape of the secure metrics (no rule for TokenReviews), and
            # scrapes with a token the server does not know and with none.
            _apply_rbac(emu, drop=("authentication.k8s.io", "tokenreviews"))
            code, body = await _get(port, "/metrics", token=scraper2, tls=True)
            assert code == 500 and "tokenreviews" in body, (code, body)
            texts["failed scrape"] = body
            _apply_rbac(emu)
            code, body = await _get(port, "/metrics", token=stranger, tls=True)
            assert code == 401, (code, body)
            texts["unknown-token scrape"] = body
            # 5. hpactl explain: from the running hpactl, and computed one-off.
            server = f"https://127.0.0.1:{port}"
            kc = f"--kubeconfig={kubeconfig}"
            akc = f"--kubeconfig={emu.write_kubeconfig(tmp_path / 'admin.kubeconfig')}"
            codes = []
            # --token=VALUE: the admin token is random URL-safe base64, which starts with
            # "-" one time in 64; as a separate word argparse reads it as an option (exit 2).
            for i, args in enumerate(
                (
                    ("--server", server, f"--token={admin}", "--insecure-skip-tls-verify"),
                    ("--server", server, f"--token={stranger}", "--insecure-skip-tls-verify", kc),
                    ("--server", server, f"--token={admin}", kc),  # no CA for hpactl's cert
                    ("--server", "", kc),  # 403: the ServiceAccount may not get HPAs
                    ("--server", "", akc),
                    ("--server", "", akc, "-o", "json"),
                )
            ):
                code, out, err = await _run("explain", "default/web", *args)
                codes.append(code)
                texts[f"explain {i} stdout"] = out
                texts[f"explain {i} stderr"] = err
            assert codes == [0, 1, 1, 1, 0, 0], texts
            assert await proc.terminate() == 0, proc.output()
        texts["run (json) output"] = "\n".join(proc.lines)
        assert len(proc.lines) > 20 and any('"v":4' in x for x in proc.lines)
        assert any("forbidden" in x for x in proc.lines), "the 403 was not logged"

        # 6. A 401: a kubeconfig whose token the server does not know; console format.
        unknown = emu.write_kubeconfig(tmp_path / "unknown.kubeconfig", token=stranger)
        argv = [*hpactl_argv(), *run_flags(unknown, leader_elect=False), "-v=10"]
        argv = [a for a in argv if a != "--logging-format=json"] + ["--logging-format=console"]
        async with HpactlProcess(argv, env={**os.environ, **env}) as proc:
            assert await poll(lambda: any("Unauthorized" in x for x in proc.lines), 20), (
                proc.output()
            )
            assert await proc.terminate() == 0, proc.output()
        texts["run (console, 401) output"] = "\n".join(proc.lines)
        code, out, err = await _run(
            "explain", "default/web", "--server", "", "--kubeconfig", str(unknown)
        )
        assert code == 1 and "Unauthorized" in err, (code, out, err)
        texts["explain 401 stderr"] = out + err

        texts.update(_written(emu))
        texts["spans"] = "\n".join(otlp.exports)
        assert otlp.spans > 0, "no span exported"
        leaks = _leaks(texts, _needles(token, scraper, scraper2, stranger, emu.admin_token))
        assert leaks == [], leaks


# --------------------------------------------------------------------------- what is served, where


PROBES = ["/healthz", "/livez", "/readyz", "/readyz?verbose", "/readyz/informer-caches"]
NOT_SERVED = [
    "/",
    "/debug/pprof/",
    "/debug/pprof/heap",
    "/metrics/extra",
    "/readyz/../metrics",
    "/healthz/../metrics",
    "/%2e%2e/metrics",
    "/metrics/",
    "/debug/vars",
    "/config",
    "/env",
]


async def _probe_all(port: int, paths: list[str], **kw: Any) -> dict[str, int]:
    return {p: (await _get(port, p, **kw))[0] for p in paths}


@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug-endpoints"])
async def test_servers_serve_only_their_routes(tmp_path: Path, debug: bool) -> None:
    async with Emulator(bookmark_interval=0.5) as emu:
        seed_cluster(emu)
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        argv = [*hpactl_argv(), *run_flags(kubeconfig, leader_elect=False)]
        if debug:
            argv.append("--enable-debug-endpoints")
        async with HpactlProcess(argv) as proc:
            serving = await proc.wait_for_record("hpactl.serving", 30)
            health, metrics = serving["health_port"], serving["metrics_port"]
            assert await poll(lambda: not unmet(emu, leader_elect=False), 30), unmet(emu)
            # The probes server: probes only.
            codes = await _probe_all(health, PROBES)
            assert codes == dict.fromkeys(PROBES, 200)
            codes = await _probe_all(
                health, ["/metrics", "/debug/hpa", "/readyz/nope", *NOT_SERVED]
            )
            assert set(codes.values()) == {404}, codes
            # The metrics server: /metrics, and the debug endpoints only when enabled.
            assert (await _get(metrics, "/metrics"))[0] == 200
            debug_paths = ["/debug/hpa", "/debug/hpa/default/web"]
            codes = await _probe_all(metrics, debug_paths)
            assert codes == dict.fromkeys(debug_paths, 200 if debug else 404)
            codes = await _probe_all(metrics, [*PROBES[:3], *NOT_SERVED])
            assert set(codes.values()) == {404}, codes
            # Only HTTP GET (and HEAD) is answered; anything else is refused.
            reader, writer = await asyncio.open_connection("127.0.0.1", metrics)
            writer.write(
                b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            data = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            assert data.split()[1] == b"405"
            assert await proc.terminate() == 0, proc.output()


def _other_address() -> str | None:
    """A local, non-loopback IPv4 address of this machine, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent
            address = str(s.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


async def _connects(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True


async def test_servers_listen_only_where_the_flags_say(tmp_path: Path) -> None:
    other = _other_address()
    if other is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    async with Emulator() as emu:
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        argv = [*hpactl_argv(), *run_flags(kubeconfig, leader_elect=False)]
        async with HpactlProcess(argv) as proc:
            serving = await proc.wait_for_record("hpactl.serving", 30)
            for port in (serving["metrics_port"], serving["health_port"]):
                assert await _connects("127.0.0.1", port)
                assert not await _connects(other, port), f"{port} answers on {other}"
            assert await proc.terminate() == 0, proc.output()


async def test_zero_disables_a_server(tmp_path: Path) -> None:
    async with Emulator() as emu:
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        argv = [*hpactl_argv(), *run_flags(kubeconfig, leader_elect=False)]
        argv = [a for a in argv if not a.startswith("--metrics-bind-address=")]
        async with HpactlProcess([*argv, "--metrics-bind-address=0"]) as proc:
            serving = await proc.wait_for_record("hpactl.serving", 30)
            assert "metrics_port" not in serving and "health_port" in serving, serving
            assert await proc.terminate() == 0, proc.output()
        argv = [a for a in argv if not a.startswith("--health-probe-bind-address=")]
        async with HpactlProcess(
            [*argv, "--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=0"]
        ) as proc:
            serving = await proc.wait_for_record("hpactl.serving", 30)
            assert "health_port" not in serving and "metrics_port" in serving, serving
            assert await proc.terminate() == 0, proc.output()


async def test_secure_metrics_server_serves_only_its_routes(tmp_path: Path) -> None:
    async with Emulator(auth=True, tls=True, bookmark_interval=0.5) as emu:
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")  # an admin's token
        argv = [*hpactl_argv(), *run_flags(kubeconfig, leader_elect=False), "--metrics-secure"]
        async with HpactlProcess(argv) as proc:
            serving = await proc.wait_for_record("hpactl.serving", 30)
            port, admin = serving["metrics_port"], emu.admin_token
            # hpactl.serving is logged before the informers' first list ends: /readyz
            # says 500 until then (a slow list, a loaded machine), so wait for it.
            assert await _ready(port, "/readyz"), proc.output()
            assert (await _get(port, "/metrics", token=admin, tls=True))[0] == 200
            # The probes, for checks over HTTPS, need no token; nothing else is served,
            # to anyone, and an unknown path tells a client without a token nothing.
            assert await _probe_all(port, PROBES[:3], tls=True) == dict.fromkeys(PROBES[:3], 200)
            paths = ["/debug/hpa", *NOT_SERVED]
            codes = await _probe_all(port, paths, token=admin, tls=True)
            assert set(codes.values()) == {404}, codes
            codes = await _probe_all(port, paths, tls=True)
            assert set(codes.values()) == {401}, codes
        # A prefix in --authorization-always-allow-paths lets no other route through.
        argv.append("--authorization-always-allow-paths=/healthz,/livez,/readyz*")
        async with HpactlProcess(argv) as proc:
            serving = await proc.wait_for_record("hpactl.serving", 30)
            port = serving["metrics_port"]
            # Without a token: 401 for ever if the prefix did not let it through.
            assert await _ready(port, "/readyz/informer-caches"), proc.output()
            sneaky = ["/readyz/../metrics", "/readyz/%2e%2e/metrics", "/readyz/..%2fmetrics"]
            codes = await _probe_all(port, sneaky, tls=True)
            assert set(codes.values()) == {404}, codes
            assert (await _get(port, "/metrics", tls=True))[0] == 401
            assert await proc.terminate() == 0, proc.output()
