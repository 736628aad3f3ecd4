"""Several metrics providers: route each Pods/Object/External metric (KEP-6382, KEP-4261).

``RoutedMetricsSource(default, providers, clients, group_client)`` is the
controller's ``MetricsSource``: for each ``MetricRequest``

1. a provider of ``--metrics-providers-config`` (``hpactl.model.metric_providers.route``:
   the one declaring the API group the HPA names, else the first whose metric name
   patterns match) is asked directly, at its URL, over the same paths
   (``/apis/custom.metrics.k8s.io/v1beta2/...``, ``/apis/external.metrics.k8s.io/v1beta1/...``);
2. else, when the HPA names an API group no provider declares, the API server is
   asked at that group's paths (``/apis/<group>/v1beta2/...`` for custom metrics,
   ``/apis/<group>/v1beta1/...`` for external ones), where the provider's own
   APIService serves it: KEP-6382 as written. Never the default group instead
   (KEP-4261: a tenant's metric must not be answered by another provider);
3. else the default path, unchanged (``SharedMetricsFetcher``).

``ProviderSessions(providers, ...)`` opens one ``KubeSession`` per provider, with
the provider's TLS settings (its CA, or explicitly ``insecureSkipTLSVerify``) and
hpactl's credentials for it:

* ``serviceAccountToken``: hpactl's service account token as a bearer token, read
  from ``tokenFile`` and read again every minute (projected tokens rotate). An
  aggregated API server (KEDA's, prometheus-adapter's: k8s.io/apiserver with
  delegated authentication) verifies it with a TokenReview and authorizes hpactl's
  service account with a SubjectAccessReview; grant it ``get`` on the provider's
  metrics resources.
* ``clientCertificate``: a client certificate (mTLS) the provider trusts.
* ``none``.

hpactl never sends the aggregator's ``X-Remote-User`` / ``X-Remote-Group`` headers:
an extension API server believes them only over a connection authenticated with the
front-proxy client certificate (``--requestheader-client-ca-file``), which only the
API server holds; asserting a user that way would be impersonation.

Errors read as upstream's metrics clients put them (``unable to fetch metrics from
external metrics API: <err>``), so a provider that is down gives the usual
``FailedGetExternalMetric`` / ``FailedGetPodsMetric`` / ``FailedGetObjectMetric``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import structlog

from hpactl.core.decide import MetricRequest
from hpactl.core.metrics_eval import MetricInput
from hpactl.kube.session import KubeSession
from hpactl.metrics.client import KindMapper, RestMetricsClient
from hpactl.model.metric_providers import MetricProvider, route
from hpactl.model.selectors import Selector

__all__ = ["MetricsSource", "ProviderSessions", "RoutedMetricsSource", "provider_kubeconfig"]

_log = structlog.get_logger("hpactl.metrics")

_ROUTABLE = ("pods", "object", "external")
# How often a rotating service account token is read again (client-go: one minute).
TOKEN_REFRESH_SECONDS = 60.0


class MetricsSource(Protocol):
    async def fetch(self, req: MetricRequest, selector: Selector) -> MetricInput: ...


def provider_kubeconfig(p: MetricProvider) -> dict[str, Any]:
    """A kubeconfig for one provider: its URL, TLS settings and hpactl's credentials."""
    cluster: dict[str, Any] = {"server": p.url}
    if p.ca_file:
        cluster["certificate-authority"] = p.ca_file
    elif p.ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(p.ca_data.encode()).decode()
    if p.insecure_skip_tls_verify:
        cluster["insecure-skip-tls-verify"] = True
    user: dict[str, Any] = {}  # a token is set after loading (_token_refresher)
    if p.auth == "clientCertificate":
        user["client-certificate"] = p.client_certificate
        user["client-key"] = p.client_key
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": p.name, "cluster": cluster}],
        "users": [{"name": "hpactl", "user": user}],
        "contexts": [{"name": p.name, "context": {"cluster": p.name, "user": "hpactl"}}],
        "current-context": p.name,
    }


def _token_refresher(path: str) -> Any:
    """A kubernetes_asyncio ``refresh_api_key_hook`` reading the token file at the first
    request and again each minute after (projected tokens rotate); surrounding white
    space is dropped (a hand-written file often ends in a newline)."""
    state = {"read": -TOKEN_REFRESH_SECONDS - 1.0}

    def refresh(configuration: Any) -> None:
        now = time.monotonic()
        if now - state["read"] < TOKEN_REFRESH_SECONDS:
            return
        state["read"] = now
        try:
            with open(path, encoding="utf-8") as f:
                token = f.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            _log.warning("metrics.provider_token_unreadable", path=path, error=str(exc))
            return
        if token and "\n" not in token and "\r" not in token:
            configuration.api_key["BearerToken"] = f"Bearer {token}"

    return refresh


class ProviderSessions:
    """One open ``KubeSession`` (and metrics client) per provider."""

    def __init__(
        self,
        providers: Sequence[MetricProvider],
        *,
        mapper: KindMapper | None,
        qps: float,
        burst: int,
        timeout: float,
    ) -> None:
        self.providers = tuple(providers)
        self._mapper = mapper
        self._qps = qps
        self._burst = burst
        self._timeout = timeout
        self.sessions: dict[str, KubeSession] = {}
        self.clients: dict[str, RestMetricsClient] = {}

    async def open(self) -> None:
        for p in self.providers:
            fd, path = tempfile.mkstemp(prefix="hpactl-provider-", suffix=".kubeconfig")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:  # mode 0600
                    json.dump(provider_kubeconfig(p), f)
                session = KubeSession(
                    kubeconfig=path,
                    qps=self._qps,
                    burst=self._burst,
                    request_timeout=self._timeout,
                )
                await session.open()
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            if p.auth == "serviceAccountToken":
                refresh = _token_refresher(p.token_file)
                configuration = session.api_client.configuration
                refresh(configuration)  # now: the client sends only keys it already has
                configuration.refresh_api_key_hook = refresh
            self.sessions[p.name] = session
            self.clients[p.name] = RestMetricsClient(
                session, mapper=self._mapper, timeout=self._timeout
            )
            _log.info("metrics.provider", provider=p.name, url=p.url, api_group=p.api_group)

    async def close(self) -> None:
        sessions, self.sessions = self.sessions, {}
        self.clients = {}
        for s in sessions.values():
            await s.close()


class RoutedMetricsSource:
    """See the module docstring."""

    def __init__(
        self,
        default: MetricsSource,
        providers: Sequence[MetricProvider],
        clients: Mapping[str, RestMetricsClient],
        api_server: KubeSession,
        *,
        mapper: KindMapper | None,
        timeout: float,
    ) -> None:
        self._default = default
        self._providers = tuple(providers)
        self._clients = clients
        self._api_server = api_server
        self._mapper = mapper
        self._timeout = timeout
        self._group_clients: dict[str, RestMetricsClient] = {}

    def _group_client(self, group: str) -> RestMetricsClient:
        client = self._group_clients.get(group)
        if client is None:
            client = RestMetricsClient(
                self._api_server,
                mapper=self._mapper,
                timeout=self._timeout,
                custom_prefix=f"/apis/{group}/v1beta2",
                external_prefix=f"/apis/{group}/v1beta1",
            )
            self._group_clients[group] = client
        return client

    async def fetch(self, req: MetricRequest, selector: Selector) -> MetricInput:
        provider = route(self._providers, req.kind, req.metric_name, req.source)
        if provider is not None:
            return await self._clients[provider.name].fetch(req, selector)
        if req.source and req.kind in _ROUTABLE:
            return await self._group_client(req.source).fetch(req, selector)
        return await self._default.fetch(req, selector)
