"""The three metrics APIs an HPA controller reads, served by the emulator.

- ``metrics.k8s.io/v1beta1`` shaped as metrics-server answers it (PodMetrics,
  PodMetricsList, an always-empty NodeMetricsList);
- ``custom.metrics.k8s.io/v1beta2`` shaped as custom-metrics-apiserver based
  adapters answer it (object metrics, ``namespaces/{ns}/metrics/{metric}`` for the
  Namespace kind, ``{resource}/*/{metric}`` with a label selector);
- ``external.metrics.k8s.io/v1beta1`` (``namespaces/{ns}/{metric}``).

Values are scripted from Python (:class:`MetricsState`) or, unlike a real cluster,
written over HTTP: PodMetrics objects on the metrics-server paths, and two
emulator-only kinds, ``MetricValue`` (``custom.metrics.k8s.io/v1beta2``, resource
``metricvalues``) and ``ExternalMetricValue`` (``external.metrics.k8s.io/v1beta1``,
resource ``externalmetricvalues``), so ``kubectl apply -f`` works for all three.

A group made unavailable answers every request below ``/apis/{group}/{version}``
with 503 and the plain-text body ``service unavailable``, which is what
kube-aggregator's proxy handler writes for an APIService whose Available condition
is False (client-go turns it into "the server is currently unable to handle the
request"). The group document ``/apis/{group}`` and the group's entry in ``/apis``
stay, as they do in a real cluster.

Modules, one job each:

- :mod:`.groups`: the groups, versions and writable kinds;
- :mod:`.plurals`: a describedObject's kind → the resource its values are served under;
- :mod:`.normalize`: checking and canonicalizing scripted or written objects;
- :mod:`.state`: :class:`MetricsState`, storage, the scripting API and writes;
- :mod:`.queries`: the answers to reads;
- :mod:`.discovery`: APIGroup, APIResourceList and OpenAPI documents;
- :mod:`.tables`: server-side tables for kubectl;
- :mod:`.routes`: HTTP routing.
"""

from __future__ import annotations

from hpactl.emulator.metrics_api.discovery import (
    metrics_api_group_discovery,
    metrics_api_openapi_v3,
    metrics_api_resource_lists,
)
from hpactl.emulator.metrics_api.groups import (
    CUSTOM_GROUP,
    CUSTOM_VERSION,
    EXTERNAL_GROUP,
    EXTERNAL_VERSION,
    METRICS_GROUP,
    METRICS_GROUPS,
    METRICS_VERSION,
)
from hpactl.emulator.metrics_api.plurals import KindMapping, KindResolver, registry_kinds
from hpactl.emulator.metrics_api.routes import register_metrics_routes
from hpactl.emulator.metrics_api.state import MetricsState

__all__ = [
    "CUSTOM_GROUP",
    "CUSTOM_VERSION",
    "EXTERNAL_GROUP",
    "EXTERNAL_VERSION",
    "METRICS_GROUP",
    "METRICS_GROUPS",
    "METRICS_VERSION",
    "KindMapping",
    "KindResolver",
    "MetricsState",
    "metrics_api_group_discovery",
    "metrics_api_openapi_v3",
    "metrics_api_resource_lists",
    "register_metrics_routes",
    "registry_kinds",
]
