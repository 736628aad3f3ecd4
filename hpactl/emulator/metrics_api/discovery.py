"""Discovery documents of the metrics groups (the APIGroup entries, each version's
APIResourceList) and their OpenAPI v3 documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpactl.emulator.metrics_api.groups import (
    CUSTOM_GROUP,
    EXTERNAL_VALUE,
    METRIC_VALUE,
    METRICS_GROUP,
    METRICS_GROUPS,
    POD_METRICS,
    WRITABLE_KINDS,
    WRITE_VERBS,
    MetricsKind,
)
from hpactl.emulator.metrics_api.plurals import ROOT_SCOPED_KINDS
from hpactl.emulator.openapi import gv_document, patch_path_item

if TYPE_CHECKING:
    from hpactl.emulator.metrics_api.state import MetricsState

__all__ = [
    "group_document",
    "metrics_api_group_discovery",
    "metrics_api_openapi_v3",
    "metrics_api_resource_lists",
    "resource_list",
]


def metrics_api_group_discovery() -> list[dict[str, Any]]:
    """APIGroup entries for the three metrics groups, to merge into ``/apis``."""
    groups = []
    for group, version in METRICS_GROUPS.items():
        gv = {"groupVersion": f"{group}/{version}", "version": version}
        groups.append({"name": group, "versions": [gv], "preferredVersion": dict(gv)})
    return groups


def group_document(group: str) -> dict[str, Any]:
    """The APIGroup of ``/apis/{group}``."""
    entry = next(g for g in metrics_api_group_discovery() if g["name"] == group)
    return {"kind": "APIGroup", "apiVersion": "v1", **entry}


def metrics_api_resource_lists(state: MetricsState) -> dict[str, dict[str, Any]]:
    """groupVersion -> APIResourceList for the groups currently available (for an
    aggregated-discovery document; unavailable groups are left out)."""
    return {
        f"{group}/{version}": resource_list(state, group)
        for group, version in METRICS_GROUPS.items()
        if group not in state.unavailable
    }


def _resource(
    name: str, kind: str, verbs: tuple[str, ...], *, namespaced: bool = True
) -> dict[str, Any]:
    return {
        "name": name,
        "singularName": "",
        "namespaced": namespaced,
        "kind": kind,
        "verbs": list(verbs),
    }


def _writable(kind: MetricsKind) -> dict[str, Any]:
    # The emulator-only kinds are named like any resource; PodMetrics like metrics-server's.
    entry = _resource(kind.resource, kind.kind, WRITE_VERBS)
    if kind is not POD_METRICS:
        entry["singularName"] = kind.kind.lower()
    return entry


def resource_list(state: MetricsState, group: str) -> dict[str, Any]:
    """The APIResourceList of ``/apis/{group}/{version}``: the custom and external
    groups list every metric stored (``pods/requests``, ``queue_length``), as adapters
    do, then the emulator's writable kind."""
    resources: list[dict[str, Any]]
    if group == METRICS_GROUP:
        resources = [
            _resource("nodes", "NodeMetrics", ("get", "list"), namespaced=False),
            _writable(POD_METRICS),
        ]
    elif group == CUSTOM_GROUP:
        seen: dict[str, bool] = {}
        kinds = state.kind_cache()
        for item in state.objects(METRIC_VALUE).values():
            described = item["describedObject"]
            gr = kinds.resource_of(described)
            seen[f"{gr}/{item['metric']['name']}"] = described["kind"] not in ROOT_SCOPED_KINDS
        resources = [
            _resource(n, "MetricValueList", ("get",), namespaced=ns)
            for n, ns in sorted(seen.items())
        ]
        resources.append(_writable(METRIC_VALUE))
    else:
        names = sorted({item["metricName"] for item in state.objects(EXTERNAL_VALUE).values()})
        resources = [
            _resource(n, "ExternalMetricValueList", ("get",))
            for n in names
            if n != EXTERNAL_VALUE.resource
        ]
        resources.append(_writable(EXTERNAL_VALUE))
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{METRICS_GROUPS[group]}",
        "resources": resources,
    }


def metrics_api_openapi_v3(group: str) -> dict[str, Any]:
    """The ``/openapi/v3/apis/{group}/{version}`` document of a metrics group.

    It carries only what kubectl looks for: each writable kind's PATCH operation with
    its ``fieldValidation`` parameter (so validation is left to the server) and no
    strategic-merge content type (so ``kubectl apply`` sends JSON merge patches).
    """
    version = METRICS_GROUPS[group]
    prefix = f"/apis/{group}/{version}/namespaces/{{namespace}}"
    paths = {
        f"{prefix}/{k.resource}/{{name}}": patch_path_item(k.group, k.version, k.kind)
        for k in WRITABLE_KINDS
        if k.group == group
    }
    return gv_document(paths, version)
