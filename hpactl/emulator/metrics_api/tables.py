"""Server-side tables (meta.k8s.io Table) of the writable metrics kinds, for
``kubectl get`` and ``kubectl top``: PodMetrics as metrics-server prints them,
emulator-only columns for MetricValue and ExternalMetricValue."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from hpactl.emulator.metrics_api.groups import (
    DEFAULT_WINDOW,
    EXTERNAL_VALUE,
    METRIC_VALUE,
    MetricsKind,
)
from hpactl.model.quantity import parse_quantity

__all__ = ["as_table", "table_version"]

Obj = dict[str, Any]

_NAME_COLUMN: Obj = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name of the resource",
    "priority": 0,
}

# Emulator-only kinds: (column, description, cell) after the name.
_STRING_COLUMNS: dict[MetricsKind, list[tuple[str, str, Callable[[Obj], str]]]] = {
    METRIC_VALUE: [
        (
            "Object",
            "The described object",
            lambda o: f"{o['describedObject']['kind']}/{o['describedObject']['name']}",
        ),
        ("Metric", "The metric name", lambda o: str(o["metric"]["name"])),
        ("Value", "The value", lambda o: str(o["value"])),
    ],
    EXTERNAL_VALUE: [
        ("Metric", "The metric name", lambda o: str(o["metricName"])),
        (
            "Labels",
            "The metric labels",
            lambda o: (
                ",".join(f"{k}={v}" for k, v in sorted(o.get("metricLabels", {}).items()))
                or "<none>"
            ),
        ),
        ("Value", "The value", lambda o: str(o["value"])),
    ],
}


def table_version(accept: str) -> str | None:
    """The meta.k8s.io version of the Table the client asks for first, if any
    (kubectl get sends ``application/json;as=Table;v=v1;g=meta.k8s.io,...``)."""
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            if params.get("v") in ("v1", "v1beta1"):
                return params["v"]
        elif fields[0] in ("application/json", "*/*"):
            return None
    return None


def _pod_metrics_table(objects: list[Obj]) -> tuple[list[Obj], list[list[Any]]]:
    # metrics-server's ConvertToTable: the usage summed over containers, one column
    # per resource of the first item (sorted), then the window.
    if not objects:
        return [], []
    totals = []
    for obj in objects:
        usage: dict[str, Any] = {}
        for c in obj.get("containers", []):
            for res, q in c.get("usage", {}).items():
                usage[res] = usage[res] + parse_quantity(q) if res in usage else parse_quantity(q)
        totals.append(usage)
    resources = sorted(totals[0])
    columns = [_NAME_COLUMN]
    columns += [
        {"name": r, "type": "string", "format": "quantity", "description": "", "priority": 0}
        for r in resources
    ]
    columns.append(
        {"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0}
    )
    rows = [
        [
            obj["metadata"]["name"],
            *(str(t[r]) if r in t else "0" for r in resources),
            obj.get("window", DEFAULT_WINDOW),
        ]
        for obj, t in zip(objects, totals, strict=True)
    ]
    return columns, rows


def _table_rows(kind: MetricsKind, objects: list[Obj]) -> tuple[list[Obj], list[list[Any]]]:
    string_columns = _STRING_COLUMNS.get(kind)
    if string_columns is None:
        return _pod_metrics_table(objects)
    columns = [_NAME_COLUMN]
    columns += [
        {"name": n, "type": "string", "format": "", "description": d, "priority": 0}
        for n, d, _cell in string_columns
    ]
    rows = [
        [obj["metadata"]["name"], *(cell(obj) for _n, _d, cell in string_columns)]
        for obj in objects
    ]
    return columns, rows


def as_table(kind: MetricsKind, body: Mapping[str, Any], version: str, include: str) -> Obj:
    """An object or list of ``kind`` as a Table of meta.k8s.io ``version``; rows carry
    the object, its PartialObjectMetadata or nothing (``includeObject``)."""
    objects = list(body.get("items", [body]))
    columns, cells = _table_rows(kind, objects)
    rows = []
    for obj, row in zip(objects, cells, strict=True):
        entry: Obj = {"cells": row}
        if include == "Object":
            entry["object"] = {
                "kind": kind.kind,
                "apiVersion": kind.api_version,
                **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")},
            }
        elif include != "None":
            entry["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": f"meta.k8s.io/{version}",
                "metadata": copy.deepcopy(obj["metadata"]),
            }
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    }
