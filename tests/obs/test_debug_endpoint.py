"""The /debug/hpa endpoints of the observability server: absent unless given, JSON
answers, and with --metrics-secure the same TokenReview / SubjectAccessReview as
/metrics (path /debug/hpa/..., verb get), reviewed by the emulator's RBAC."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hpactl.cli import main
from hpactl.emulator import Emulator
from hpactl.kube.authn import DelegatedAuth
from hpactl.kube.session import KubeSession
from hpactl.obs.metrics import ControllerMetrics
from hpactl.obs.server import DebugEndpoints, ObservabilityServer, Readiness, SecureServing
from hpactl.obs.tls import serving_certificate

RECORDS: dict[str, Mapping[str, Any]] = {
    "default/web": {"hpa": "default/web", "records": [{"time": "2026-01-01T00:00:00Z"}]}
}
DEBUG = DebugEndpoints(
    records=lambda ns, name: RECORDS.get(f"{ns}/{name}"),
    keys=lambda: list(RECORDS),
)


async def get(url: str, token: str | None = None, ctx: ssl.SSLContext | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.TCPConnector(ssl=ctx) if ctx is not None else None
    async with (
        aiohttp.ClientSession(connector=connector) as http,
        http.get(url, headers=headers) as r,
    ):
        return r.status, await r.text()


@contextlib.asynccontextmanager
async def server(debug: DebugEndpoints | None) -> AsyncIterator[str]:
    s = ObservabilityServer(
        ControllerMetrics(),
        Readiness(lambda: True, lambda: "leader"),
        "127.0.0.1:0",
        "0",
        debug=debug,
    )
    await s.start()
    try:
        yield f"http://127.0.0.1:{s.ports['metrics']}"
    finally:
        await s.stop()


async def test_absent_unless_enabled() -> None:
    async with server(None) as base:
        for path in ("/debug/hpa/default/web", "/debug/hpa"):
            status, text = await get(base + path)
            assert status == 404 and text == "404: Not Found"  # the router's, not ours
        assert (await get(base + "/metrics"))[0] == 200


async def test_records_as_json_and_404_for_an_unknown_hpa() -> None:
    async with server(DEBUG) as base:
        status, text = await get(base + "/debug/hpa/default/web")
        assert status == 200 and json.loads(text) == RECORDS["default/web"]
        status, text = await get(base + "/debug/hpa/default/nope")
        assert status == 404
        assert json.loads(text) == {
            "hpa": "default/nope",
            "error": "no decision records for default/nope",
        }
        assert json.loads((await get(base + "/debug/hpa"))[1]) == {"hpas": ["default/web"]}


def _binding(name: str, role: str, namespace: str, account: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def _role(name: str, paths: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"nonResourceURLs": paths, "verbs": ["get"]}],
    }


@pytest.fixture
async def secure(tmp_path: Path) -> AsyncIterator[tuple[str, dict[str, str], ssl.SSLContext]]:
    async with Emulator(auth=True, namespaces=("default", "hpactl-system", "monitoring")) as emu:
        emu.store.create(
            _binding("hpactl-auth", "system:auth-delegator", "hpactl-system", "hpactl")
        )
        emu.store.create(_role("metrics-reader", ["/metrics"]))
        emu.store.create(_role("hpa-debugger", ["/debug/hpa/*"]))
        emu.store.create(_binding("scrape", "metrics-reader", "monitoring", "prometheus"))
        emu.store.create(_binding("debug", "hpa-debugger", "monitoring", "oncall"))
        tokens = {
            who: emu.token_for_service_account("monitoring", who)
            for who in ("prometheus", "oncall")
        }
        kubeconfig = emu.write_kubeconfig(
            tmp_path / "hpactl.kubeconfig",
            token=emu.token_for_service_account("hpactl-system", "hpactl"),
        )
        certificate = serving_certificate(None, None, ["127.0.0.1"])
        ca = certificate.cert_pem.split(b"-----END CERTIFICATE-----\n", 1)[1]
        ctx = ssl.create_default_context(cadata=ca.decode())
        async with KubeSession(kubeconfig=str(kubeconfig)) as session:
            auth = DelegatedAuth(session)
            s = ObservabilityServer(
                ControllerMetrics(),
                Readiness(lambda: True, lambda: "leader"),
                "127.0.0.1:0",
                "0",
                secure=SecureServing(authorize=auth.review, certificate=certificate),
                debug=DEBUG,
            )
            await s.start()
            try:
                yield f"https://127.0.0.1:{s.ports['metrics']}", tokens, ctx
            finally:
                await s.stop()


async def test_authorization_applies_when_secure(
    secure: tuple[str, dict[str, str], ssl.SSLContext],
) -> None:
    base, tokens, ctx = secure
    path = "/debug/hpa/default/web"
    assert await get(base + path, ctx=ctx) == (401, "Unauthorized\n")
    # Allowed to scrape /metrics is not allowed to read decision records.
    assert (await get(base + "/metrics", tokens["prometheus"], ctx))[0] == 200
    assert await get(base + path, tokens["prometheus"], ctx) == (
        403,
        f'forbidden: User "system:serviceaccount:monitoring:prometheus" cannot get path "{path}"\n',
    )
    status, text = await get(base + path, tokens["oncall"], ctx)
    assert status == 200 and json.loads(text) == RECORDS["default/web"]

    # hpactl explain passes the token (the self-signed certificate is not verified).
    def explain(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["explain", "default/web", "--server", base, "-o", "json", *argv])
        return code, out.getvalue(), err.getvalue()

    code, out, _ = await asyncio.to_thread(
        explain, "--token", tokens["oncall"], "--insecure-skip-tls-verify"
    )
    assert code == 0 and json.loads(out)["source"] == "server"
    # Without the token it says why, then falls back (here: no cluster to read).
    code, _, err = await asyncio.to_thread(
        explain, "--insecure-skip-tls-verify", "--kubeconfig", "/nonexistent"
    )
    assert code == 1
    assert "refused: 401 Unauthorized (pass --token)" in err.splitlines()[0]
