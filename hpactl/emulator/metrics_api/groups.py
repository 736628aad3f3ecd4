"""The three metrics API groups and the kinds the emulator lets clients write in them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CUSTOM_GROUP",
    "CUSTOM_VERSION",
    "DEFAULT_WINDOW",
    "EXTERNAL_GROUP",
    "EXTERNAL_VALUE",
    "EXTERNAL_VERSION",
    "METRICS_GROUP",
    "METRICS_GROUPS",
    "METRICS_VERSION",
    "METRIC_VALUE",
    "POD_METRICS",
    "WRITABLE_KINDS",
    "WRITE_VERBS",
    "MetricsKind",
]

METRICS_GROUP = "metrics.k8s.io"
METRICS_VERSION = "v1beta1"
CUSTOM_GROUP = "custom.metrics.k8s.io"
CUSTOM_VERSION = "v1beta2"
EXTERNAL_GROUP = "external.metrics.k8s.io"
EXTERNAL_VERSION = "v1beta1"
METRICS_GROUPS: dict[str, str] = {
    METRICS_GROUP: METRICS_VERSION,
    CUSTOM_GROUP: CUSTOM_VERSION,
    EXTERNAL_GROUP: EXTERNAL_VERSION,
}

# metrics-server's window when a PodMetrics was scripted without one.
DEFAULT_WINDOW = "30s"
WRITE_VERBS: tuple[str, ...] = ("create", "delete", "get", "list", "patch", "update")


@dataclass(frozen=True, slots=True)
class MetricsKind:
    """One writable kind: its group, version, kind and resource (plural)."""

    group: str
    version: str
    kind: str
    resource: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def qualified(self) -> str:
        return f"{self.resource}.{self.group}"


POD_METRICS = MetricsKind(METRICS_GROUP, METRICS_VERSION, "PodMetrics", "pods")
# Emulator-only kinds, so that custom and external values can be written over HTTP.
METRIC_VALUE = MetricsKind(CUSTOM_GROUP, CUSTOM_VERSION, "MetricValue", "metricvalues")
EXTERNAL_VALUE = MetricsKind(
    EXTERNAL_GROUP, EXTERNAL_VERSION, "ExternalMetricValue", "externalmetricvalues"
)
WRITABLE_KINDS: tuple[MetricsKind, ...] = (POD_METRICS, METRIC_VALUE, EXTERNAL_VALUE)
