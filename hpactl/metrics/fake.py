"""An in-memory ``MetricsClient`` for controller and core tests (no HTTP).

It holds raw items shaped like the APIs' answers and runs the same interpretation as
``RestMetricsClient``, so texts and values match the real client:

``FakeMetricsClient()``
    ``.set_pod_metrics(namespace, items)``: PodMetrics dicts (``metadata.labels``
    selects them, as metrics-server's copy of the pod labels does);
    ``.set_pod_custom(namespace, metric, items, labels={pod: labels})``: MetricValue
    dicts of pods (``describedObject.name``), with the pods' labels for selection;
    ``.set_object(namespace, kind, name, metric, item)``;
    ``.set_external(namespace, metric, items)``: ExternalMetricValue dicts
    (``metricLabels`` select them);
    ``.unavailable``: a set of "resource" / "custom" / "external": those APIs answer as
    an aggregated API that is down (``the server is currently unable to handle the
    request (get ...)``);
    ``.calls``: one entry per call, e.g. ``("resource", "default", "app=web")``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpactl.core.decide import MetricRequest
from hpactl.core.metrics_eval import MetricInput
from hpactl.metrics.client import (
    custom_fetch_error,
    external_fetch_error,
    external_values_from_items,
    fetch_metric,
    group_of,
    guessed_group_resource,
    object_value_from_items,
    raw_result,
    resource_fetch_error,
    resource_result,
)
from hpactl.model.hpa import CrossVersionObjectReference
from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetricsInfo,
)
from hpactl.model.selectors import Selector, parse_selector

__all__ = ["FakeMetricsClient"]

_DOWN = "the server is currently unable to handle the request"


def _server_selector(sel: Selector) -> Selector:
    text = str(sel)
    return parse_selector(text) if text else Selector.everything()


class FakeMetricsClient:
    """See the module docstring."""

    def __init__(self) -> None:
        self._pod_metrics: dict[str, list[dict[str, Any]]] = {}
        self._pod_custom: dict[tuple[str, str], tuple[list[dict[str, Any]], dict[str, Any]]] = {}
        self._objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self._external: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.unavailable: set[str] = set()
        self.calls: list[tuple[str, ...]] = []

    # -- data ----------------------------------------------------------------------------
    def set_pod_metrics(self, namespace: str, items: list[dict[str, Any]]) -> None:
        self._pod_metrics[namespace] = list(items)

    def set_pod_custom(
        self,
        namespace: str,
        metric: str,
        items: list[dict[str, Any]],
        labels: Mapping[str, Mapping[str, str]],
    ) -> None:
        self._pod_custom[(namespace, metric)] = (list(items), dict(labels))

    def set_object(
        self, namespace: str, kind: str, name: str, metric: str, item: dict[str, Any]
    ) -> None:
        self._objects[(namespace, kind, name, metric)] = item

    def set_external(self, namespace: str, metric: str, items: list[dict[str, Any]]) -> None:
        self._external[(namespace, metric)] = list(items)

    # -- MetricsClient --------------------------------------------------------------------
    async def get_resource_metric(
        self, resource: str, namespace: str, selector: Selector, container: str = ""
    ) -> PodMetricsInfo | MetricFetchError:
        self.calls.append(("resource", namespace, str(selector)))
        if "resource" in self.unavailable:
            return resource_fetch_error(f"{_DOWN} (get pods.metrics.k8s.io)")
        sel = _server_selector(selector)
        items = [
            i
            for i in self._pod_metrics.get(namespace, [])
            if sel.matches((i.get("metadata") or {}).get("labels") or {})
        ]
        return resource_result(items, resource, container)

    async def get_raw_metric(
        self, metric_name: str, namespace: str, selector: Selector, metric_selector: Selector
    ) -> PodMetricsInfo | MetricFetchError:
        self.calls.append(("pods", namespace, metric_name, str(selector), str(metric_selector)))
        if "custom" in self.unavailable:
            return custom_fetch_error(f"{_DOWN} (get pods.custom.metrics.k8s.io *)")
        items, labels = self._pod_custom.get((namespace, metric_name), ([], {}))
        sel = _server_selector(selector)
        chosen = []
        for i in items:
            name = str((i.get("describedObject") or {}).get("name") or "")
            if name in labels and sel.matches(labels[name]):
                chosen.append(i)
        return raw_result(chosen)

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        object_ref: CrossVersionObjectReference,
        metric_selector: Selector,
    ) -> ObjectMetricValue | MetricFetchError:
        self.calls.append(("object", namespace, object_ref.kind, object_ref.name, metric_name))
        if "custom" in self.unavailable:
            gr = guessed_group_resource(group_of(object_ref.api_version), object_ref.kind)
            return custom_fetch_error(f"{_DOWN} (get {gr}.custom.metrics.k8s.io {object_ref.name})")
        item = self._objects.get((namespace, object_ref.kind, object_ref.name, metric_name))
        return object_value_from_items([item] if item is not None else [])

    async def get_external_metric(
        self, metric_name: str, namespace: str, selector: Selector
    ) -> ExternalMetricValues | MetricFetchError:
        self.calls.append(("external", namespace, metric_name, str(selector)))
        if "external" in self.unavailable:
            return external_fetch_error(f"{_DOWN} (get {metric_name}.external.metrics.k8s.io)")
        sel = _server_selector(selector)
        items = [
            i
            for i in self._external.get((namespace, metric_name), [])
            if sel.matches(i.get("metricLabels") or {})
        ]
        return external_values_from_items(items)

    async def fetch(self, req: MetricRequest, selector: Selector) -> MetricInput:
        return await fetch_metric(self, req, selector)
