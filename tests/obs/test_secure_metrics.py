"""Secure metrics: HTTPS, TokenReview and SubjectAccessReview at the emulator, as
kube-controller-manager's secure port (a real KubeSession, the server in-process)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from prometheus_client.parser import text_string_to_metric_families

from hpactl.emulator import Emulator
from hpactl.kube.authn import DelegatedAuth
from hpactl.kube.session import KubeSession
from hpactl.obs.metrics import ControllerMetrics
from hpactl.obs.server import ObservabilityServer, Readiness, SecureServing
from hpactl.obs.tls import ServingCertificate, serving_certificate

HPACTL = ("hpactl-system", "hpactl")
HPACTL_USER = "system:serviceaccount:hpactl-system:hpactl"
SCRAPER = ("monitoring", "prometheus")
NOBODY = ("monitoring", "nobody")


class CountingAuthorizer:
    """The emulator's RBAC authorizer, counting the reviews hpactl creates."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reviews: list[str] = []

    def authorize(
        self, user: str, groups: Any, verb: str, group: str, resource: str, *a: Any
    ) -> bool:
        if user == HPACTL_USER and verb == "create":
            self.reviews.append(resource)
        ok: bool = self.inner.authorize(user, groups, verb, group, resource, *a)
        return ok

    def authorize_path(self, *args: Any) -> bool:
        ok: bool = self.inner.authorize_path(*args)
        return ok

    def check(self, *args: Any) -> Any:
        return self.inner.check(*args)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cluster_role_binding(name: str, role: str, namespace: str, account: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


@dataclass
class Secure:
    emu: Emulator
    counter: CountingAuthorizer
    clock: FakeClock
    certificate: ServingCertificate
    server: ObservabilityServer
    tokens: dict[str, str]

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.server.ports['metrics']}"

    def ca_context(self) -> ssl.SSLContext:
        # The self-signed chain: serving certificate, then its CA.
        ca = self.certificate.cert_pem.split(b"-----END CERTIFICATE-----\n", 1)[1]
        return ssl.create_default_context(cadata=ca.decode())

    async def get(self, path: str, who: str | None = None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        connector = aiohttp.TCPConnector(ssl=self.ca_context())
        async with (
            aiohttp.ClientSession(connector=connector) as http,
            http.get(self.base + path, headers=headers) as r,
        ):
            return r.status, await r.text()


@pytest.fixture
async def secure(tmp_path: Path) -> AsyncIterator[Secure]:
    async with Emulator(auth=True, namespaces=("default", "hpactl-system", "monitoring")) as emu:
        counter = CountingAuthorizer(emu.server.hooks.authorizer)
        emu.server.hooks.authorizer = counter
        emu.store.create(cluster_role_binding("hpactl-auth", "system:auth-delegator", *HPACTL))
        emu.store.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "metrics-reader"},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            }
        )
        emu.store.create(cluster_role_binding("scrape", "metrics-reader", *SCRAPER))
        tokens = {
            "scraper": emu.token_for_service_account(*SCRAPER),
            "nobody": emu.token_for_service_account(*NOBODY),
        }
        kubeconfig = emu.write_kubeconfig(
            tmp_path / "hpactl.kubeconfig", token=emu.token_for_service_account(*HPACTL)
        )
        clock = FakeClock()
        certificate = serving_certificate(None, None, ["127.0.0.1"])
        metrics = ControllerMetrics()
        metrics.leader.set(1)
        async with KubeSession(kubeconfig=str(kubeconfig)) as session:
            auth = DelegatedAuth(session, monotonic=clock)
            server = ObservabilityServer(
                metrics,
                Readiness(lambda: True, lambda: "leader"),
                "127.0.0.1:0",
                "127.0.0.1:0",
                secure=SecureServing(authorize=auth.review, certificate=certificate),
            )
            await server.start()
            try:
                yield Secure(emu, counter, clock, certificate, server, tokens)
            finally:
                await server.stop()


async def test_who_may_scrape(secure: Secure) -> None:
    assert await secure.get("/metrics") == (401, "Unauthorized\n")
    secure.tokens["forged"] = "not-a-token"
    assert await secure.get("/metrics", "forged") == (401, "Unauthorized\n")
    assert await secure.get("/metrics", "nobody") == (
        403,
        'forbidden: User "system:serviceaccount:monitoring:nobody" cannot get path "/metrics"\n',
    )
    code, text = await secure.get("/metrics", "scraper")
    assert code == 200
    samples = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples["hpactl_leader"] == 1.0
    # Every non-exempt path needs a token, even one that does not exist.
    assert (await secure.get("/debug"))[0] == 401
    assert (await secure.get("/debug", "scraper"))[0] == 403


async def test_probe_paths_are_always_allowed(secure: Secure) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        assert await secure.get(path) == (200, "ok\n"), path
    # Exact paths only: a sub-path of /readyz is authorized like anything else.
    assert (await secure.get("/readyz/leader-election"))[0] == 401
    assert secure.counter.reviews == []
    # The plain probe port still answers without TLS.
    health = f"http://127.0.0.1:{secure.server.ports['health']}/readyz"
    async with aiohttp.ClientSession() as http, http.get(health) as r:
        assert r.status == 200


async def test_the_certificate_served(secure: Secure) -> None:
    # Verified against its CA, for 127.0.0.1 (ca_context checks the host name).
    assert (await secure.get("/healthz"))[0] == 200
    _reader, writer = await asyncio.open_connection(
        "127.0.0.1", secure.server.ports["metrics"], ssl=secure.ca_context()
    )
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    cert = x509.load_der_x509_certificate(der)
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    issuer = cert.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert isinstance(cn, str) and cn.startswith("127.0.0.1@")
    assert issuer == cn.replace("@", "-ca@")  # kube-controller-manager's naming
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    # Plain HTTP on the metrics port gets nowhere.
    url = f"http://127.0.0.1:{secure.server.ports['metrics']}/metrics"
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientError):
            async with http.get(url) as r:
                await r.read()


async def test_reviews_are_cached_and_shared(secure: Secure) -> None:
    results = await asyncio.gather(*(secure.get("/metrics", "scraper") for _ in range(5)))
    assert [code for code, _ in results] == [200] * 5
    for _ in range(3):
        assert (await secure.get("/metrics", "scraper"))[0] == 200
    # Eight scrapes, one TokenReview and one SubjectAccessReview.
    assert secure.counter.reviews == ["tokenreviews", "subjectaccessreviews"]
    secure.clock.now += 10.5  # past the 10 s TTLs
    assert (await secure.get("/metrics", "scraper"))[0] == 200
    assert secure.counter.reviews == ["tokenreviews", "subjectaccessreviews"] * 2


async def test_a_denial_is_cached_too(secure: Secure) -> None:
    assert (await secure.get("/metrics", "nobody"))[0] == 403
    secure.emu.store.create(cluster_role_binding("late", "metrics-reader", *NOBODY))
    # Within the unauthorized TTL the cached denial stands (as upstream's cache).
    assert (await secure.get("/metrics", "nobody"))[0] == 403
    assert secure.counter.reviews.count("subjectaccessreviews") == 1
    secure.clock.now += 10.5
    assert (await secure.get("/metrics", "nobody"))[0] == 200


async def test_hpactl_without_review_rights_answers_500_in_one_line(
    secure: Secure, caplog: pytest.LogCaptureFixture
) -> None:
    secure.emu.store.delete("rbac.authorization.k8s.io", "clusterrolebindings", "", "hpactl-auth")
    code, text = await secure.get("/metrics", "scraper")
    assert code == 500
    assert text == (
        "Internal Server Error: TokenReview failed: tokenreviews.authentication.k8s.io is "
        f'forbidden: User "{HPACTL_USER}" cannot create resource "tokenreviews" in API group '
        '"authentication.k8s.io" at the cluster scope\n'
    )
    assert any("cannot create resource" in r.getMessage() for r in caplog.records)
    # A failure is not cached: once the right is back, the next scrape works.
    secure.emu.store.create(cluster_role_binding("hpactl-auth", "system:auth-delegator", *HPACTL))
    assert (await secure.get("/metrics", "scraper"))[0] == 200


async def test_an_unreachable_api_server_answers_500_in_one_line(secure: Secure) -> None:
    await secure.emu.stop()
    code, text = await secure.get("/metrics", "scraper")
    assert code == 500
    assert text.startswith("Internal Server Error: TokenReview failed: Post ")
    assert "connect: connection refused" in text and text.count("\n") == 1
    # Probes on the metrics port still answer.
    assert (await secure.get("/healthz"))[0] == 200


def test_certificate_files(tmp_path: Path) -> None:
    made = serving_certificate(None, None, ["hpactl-0"])
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(made.cert_pem)
    key.write_bytes(made.key_pem)
    loaded = serving_certificate(str(cert), str(key))
    assert loaded.cert_pem == made.cert_pem and not loaded.self_signed
    loaded.ssl_context()
    with pytest.raises(ValueError, match="must be given together"):
        serving_certificate(str(cert), None)
    with pytest.raises(ValueError, match=r"cannot read .*missing.key: No such file"):
        serving_certificate(str(cert), str(tmp_path / "missing.key"))
    other = serving_certificate(None, None)
    key.write_bytes(other.key_pem)
    with pytest.raises(ValueError, match="not a usable certificate and key") as info:
        serving_certificate(str(cert), str(key))
    assert "\n" not in str(info.value)
