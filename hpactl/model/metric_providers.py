"""Metrics providers hpactl asks directly (``--metrics-providers-config``).

A cluster registers one APIService per metrics API group, so KEDA and
prometheus-adapter cannot both serve ``external.metrics.k8s.io`` (kedacore/keda#470,
KEP-4261). Under the gate ``HPAMetricSource`` hpactl can be given more providers:
each is a URL speaking the same custom/external metrics API, asked directly (TLS
verified, hpactl's own credentials) for the metrics routed to it: by metric name
pattern, or by the KEP-6382 ``apiGroup`` an HPA names for a metric. The default path
(through the API server's aggregator) is unchanged for every other metric.

The file (YAML or JSON)::

    providers:
      - name: keda
        url: https://keda-operator-metrics-apiserver.keda.svc:443
        apiGroup: keda.sh                 # optional: HPAs may name it (KEP-6382)
        externalMetrics: ["s0-*"]         # optional: External metric names (globs)
        customMetrics: []                 # optional: Pods and Object metric names
        caFile: /etc/hpactl/keda/ca.crt   # or caData (PEM), or insecureSkipTLSVerify
        auth: serviceAccountToken         # (default) | clientCertificate | none
        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token

:func:`providers_from_raw` checks the parsed document (``ValueError`` with a
``providers[<i>].<field>: <problem>`` message); :func:`route` picks a provider.
Pure: the caller reads the file and checks that the files it names exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

__all__ = [
    "DEFAULT_GROUPS",
    "SERVICE_ACCOUNT_TOKEN",
    "MetricProvider",
    "check_api_group",
    "providers_from_raw",
    "route",
]

#: The in-cluster service account token (what ``auth: serviceAccountToken`` sends
#: unless ``tokenFile`` says otherwise).
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"

#: The metrics API groups of the default path; a source cannot name them (KEP-6382).
DEFAULT_GROUPS = frozenset({"metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io"})

Auth = Literal["serviceAccountToken", "clientCertificate", "none"]

_KEYS = frozenset(
    {
        "name",
        "url",
        "apiGroup",
        "externalMetrics",
        "customMetrics",
        "caFile",
        "caData",
        "insecureSkipTLSVerify",
        "auth",
        "tokenFile",
        "clientCertificate",
        "clientKey",
    }
)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True, slots=True)
class MetricProvider:
    """One provider of the file, checked."""

    name: str
    url: str
    api_group: str = ""
    external_metrics: tuple[str, ...] = ()
    custom_metrics: tuple[str, ...] = ()
    ca_file: str = ""
    ca_data: str = ""
    insecure_skip_tls_verify: bool = False
    auth: Auth = "serviceAccountToken"
    token_file: str = SERVICE_ACCOUNT_TOKEN
    client_certificate: str = ""
    client_key: str = ""

    def serves(self, kind: str, metric_name: str) -> bool:
        """Whether a name pattern routes this metric (``kind``: pods, object, external)."""
        patterns = self.external_metrics if kind == "external" else self.custom_metrics
        return any(fnmatchcase(metric_name, p) for p in patterns)

    def files(self) -> tuple[tuple[str, str], ...]:
        """(field, path) of every file this provider reads (checked at startup)."""
        out = [("caFile", self.ca_file)] if self.ca_file else []
        if self.auth == "serviceAccountToken":
            out.append(("tokenFile", self.token_file))
        elif self.auth == "clientCertificate":
            out += [("clientCertificate", self.client_certificate), ("clientKey", self.client_key)]
        return tuple(out)


def check_api_group(group: str) -> str | None:
    """Why ``group`` cannot be a metric source (None: it can): KEP-6382's validation,
    a DNS subdomain that is not one of the default metrics groups."""
    if len(group) > 253 or not _DNS_SUBDOMAIN.match(group):
        return f'"{group}" is not a valid API group (a lowercase DNS subdomain)'
    if group in DEFAULT_GROUPS:
        return f'"{group}" is a default metrics API group (leave the source out instead)'
    return None


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: must be a list of non-empty strings")
    return tuple(value)


def _string(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key}: must be a string")
    return value


def _provider(raw: Any, where: str) -> MetricProvider:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be a mapping")
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    name = _string(raw, "name", where)
    if not _DNS_LABEL.match(name):
        raise ValueError(f"{where}.name: must be a DNS label (lowercase letters, digits, '-')")
    url = _string(raw, "url", where).rstrip("/")
    if not url.startswith("https://") or len(url) <= len("https://"):
        raise ValueError(f"{where}.url: must be an https:// URL (the metrics API over TLS)")
    group = _string(raw, "apiGroup", where)
    if group and (problem := check_api_group(group)):
        raise ValueError(f"{where}.apiGroup: {problem}")
    external = _strings(raw.get("externalMetrics"), f"{where}.externalMetrics")
    custom = _strings(raw.get("customMetrics"), f"{where}.customMetrics")
    if not (group or external or custom):
        raise ValueError(
            f"{where}: routes nothing (give apiGroup, externalMetrics or customMetrics)"
        )
    ca_file = _string(raw, "caFile", where)
    ca_data = _string(raw, "caData", where)
    insecure = raw.get("insecureSkipTLSVerify", False)
    if not isinstance(insecure, bool):
        raise ValueError(f"{where}.insecureSkipTLSVerify: must be true or false")
    if ca_file and ca_data:
        raise ValueError(f"{where}: give caFile or caData, not both")
    if insecure and (ca_file or ca_data):
        raise ValueError(f"{where}: insecureSkipTLSVerify cannot be combined with a CA")
    if ca_data and "-----BEGIN CERTIFICATE-----" not in ca_data:
        raise ValueError(f"{where}.caData: must be PEM (-----BEGIN CERTIFICATE-----)")
    auth = raw.get("auth", "serviceAccountToken")
    if auth not in ("serviceAccountToken", "clientCertificate", "none"):
        raise ValueError(
            f"{where}.auth: must be serviceAccountToken, clientCertificate or none, got {auth!r}"
        )
    token_file = _string(raw, "tokenFile", where)
    cert, key = _string(raw, "clientCertificate", where), _string(raw, "clientKey", where)
    if auth == "clientCertificate" and not (cert and key):
        raise ValueError(f"{where}: auth clientCertificate needs clientCertificate and clientKey")
    if auth != "clientCertificate" and (cert or key):
        raise ValueError(f"{where}: clientCertificate and clientKey need auth: clientCertificate")
    if token_file and auth != "serviceAccountToken":
        raise ValueError(f"{where}.tokenFile: needs auth: serviceAccountToken")
    return MetricProvider(
        name=name,
        url=url,
        api_group=group,
        external_metrics=external,
        custom_metrics=custom,
        ca_file=ca_file,
        ca_data=ca_data,
        insecure_skip_tls_verify=insecure,
        auth=auth,
        token_file=token_file or SERVICE_ACCOUNT_TOKEN,
        client_certificate=cert,
        client_key=key,
    )


def providers_from_raw(raw: Any) -> tuple[MetricProvider, ...]:
    """The checked providers of a parsed file (ValueError naming the field)."""
    if not isinstance(raw, Mapping):
        raise ValueError("must be a mapping with a providers list")
    unknown = sorted(str(k) for k in raw if k != "providers")
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (expected providers)")
    items = raw.get("providers")
    if not isinstance(items, list) or not items:
        raise ValueError("providers: must be a non-empty list")
    out = tuple(_provider(p, f"providers[{i}]") for i, p in enumerate(items))
    seen_names: set[str] = set()
    seen_groups: set[str] = set()
    for i, p in enumerate(out):
        if p.name in seen_names:
            raise ValueError(f"providers[{i}].name: {p.name!r} is given twice")
        seen_names.add(p.name)
        if p.api_group and p.api_group in seen_groups:
            raise ValueError(f"providers[{i}].apiGroup: {p.api_group!r} is given twice")
        seen_groups.add(p.api_group)
    return out


def route(
    providers: Sequence[MetricProvider], kind: str, metric_name: str, api_group: str = ""
) -> MetricProvider | None:
    """The provider to ask for one Pods/Object/External metric: the one declaring
    ``api_group`` when the HPA names one, else the first whose patterns match; None:
    the API server (at ``api_group``'s path when one is named, else the default)."""
    if kind not in ("pods", "object", "external"):
        return None
    if api_group:
        return next((p for p in providers if p.api_group == api_group), None)
    return next((p for p in providers if p.serves(kind, metric_name)), None)
