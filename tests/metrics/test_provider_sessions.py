"""Provider sessions: the kubeconfig built for a provider, and its rotating token."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace

import pytest

from hpactl.metrics import providers
from hpactl.metrics.providers import _token_refresher, provider_kubeconfig
from hpactl.model.metric_providers import MetricProvider


def test_kubeconfig_carries_tls_and_client_certificate_never_a_token() -> None:
    p = MetricProvider(
        "prom",
        "https://prom.monitoring.svc",
        api_group="prom.example.com",
        ca_data="-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
        auth="clientCertificate",
        client_certificate="/c.crt",
        client_key="/c.key",
    )
    cfg = provider_kubeconfig(p)
    (cluster,) = cfg["clusters"]
    assert cluster["cluster"]["server"] == "https://prom.monitoring.svc"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]).decode() == p.ca_data
    assert "insecure-skip-tls-verify" not in cluster["cluster"]
    (user,) = cfg["users"]
    assert user["user"] == {"client-certificate": "/c.crt", "client-key": "/c.key"}
    sa = provider_kubeconfig(MetricProvider("k", "https://k", external_metrics=("q",)))
    assert sa["users"][0]["user"] == {}  # the token is set after loading, from tokenFile


def test_token_is_read_stripped_and_again_after_rotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    configuration = SimpleNamespace(api_key={})
    refresh = _token_refresher(str(token))
    refresh(configuration)
    assert configuration.api_key == {"BearerToken": "Bearer first"}
    token.write_text("second")
    refresh(configuration)  # within the minute: not read again
    assert configuration.api_key == {"BearerToken": "Bearer first"}
    monkeypatch.setattr(providers, "TOKEN_REFRESH_SECONDS", 0.0)
    refresh(configuration)
    assert configuration.api_key == {"BearerToken": "Bearer second"}
    token.write_text("evil\r\nX-Remote-User: admin")  # never a header injection
    refresh(configuration)
    assert configuration.api_key == {"BearerToken": "Bearer second"}
