"""Aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) for /api and /apis.

kubectl 1.32 and client-go ask for it first; the documents are built from the same
APIResourceLists the unaggregated endpoints serve, so both views always agree. A
metrics group the MetricsState marks unavailable is listed with freshness "Stale",
which is how a real server reports an aggregated API it could not reach.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from hpactl.emulator import errors
from hpactl.emulator.metrics_api import METRICS_GROUPS
from hpactl.emulator.store import dumps

if TYPE_CHECKING:
    from hpactl.emulator.server import ApiServer

Obj = dict[str, Any]


def requested_version(accept: str) -> str | None:
    """'v2' / 'v2beta1' when the client asked for aggregated discovery first."""
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields[0] != "application/json":
            continue
        params = dict(f.partition("=")[::2] for f in fields[1:])
        if params.get("as") != "APIGroupDiscoveryList":
            return None
        if params.get("g") == "apidiscovery.k8s.io" and params.get("v") in ("v2", "v2beta1"):
            return params["v"]
    return None


def _resource_discovery(resources: list[Obj]) -> list[Obj]:
    """APIResourceList entries -> APIResourceDiscovery (subresources folded in)."""
    out: dict[str, Obj] = {}
    for r in resources:
        name = str(r.get("name", ""))
        if "/" in name:
            continue
        entry: Obj = {
            "resource": name,
            "responseKind": {"group": "", "version": "", "kind": r.get("kind", "")},
            "scope": "Namespaced" if r.get("namespaced") else "Cluster",
            "singularResource": r.get("singularName") or "",
            "verbs": list(r.get("verbs") or []),
        }
        if r.get("shortNames"):
            entry["shortNames"] = list(r["shortNames"])
        if r.get("categories"):
            entry["categories"] = list(r["categories"])
        out[name] = entry
    for r in resources:
        name = str(r.get("name", ""))
        if "/" not in name:
            continue
        parent, _, sub = name.partition("/")
        if parent not in out:
            continue
        kind = {
            "group": r.get("group", ""),
            "version": r.get("version", ""),
            "kind": r.get("kind", ""),
        }
        out[parent].setdefault("subresources", []).append(
            {"subresource": sub, "responseKind": kind, "verbs": list(r.get("verbs") or [])}
        )
    return list(out.values())


def _group(server: ApiServer, group: str) -> Obj:
    versions: list[Obj] = []
    metrics = server.hooks.metrics
    unavailable: frozenset[str] = (
        frozenset(getattr(metrics, "unavailable", ())) if metrics is not None else frozenset()
    )
    for version in server._ordered_versions(group) if group else ["v1"]:
        if group in unavailable:
            versions.append({"version": version, "freshness": "Stale"})
            continue
        try:
            resources = _resources(server, group, version)
        except errors.ApiError:
            resources = []
        entry: Obj = {"version": version, "freshness": "Current"}
        if resources:
            entry["resources"] = resources
        versions.append(entry)
    return {"metadata": {"name": group, "creationTimestamp": None}, "versions": versions}


def _resources(server: ApiServer, group: str, version: str) -> list[Obj]:
    metrics = server.hooks.metrics
    if metrics is not None and METRICS_GROUPS.get(group) == version:
        lst: Obj = metrics.resource_list(group)
        return _resource_discovery(list(lst.get("resources") or []))
    return _resource_discovery(list(server._resource_list(group, version)["resources"]))


def aggregated_response(server: ApiServer, legacy: bool, version: str) -> web.Response:
    groups = [""] if legacy else [g for g in server.registry.groups() if g]
    body = {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": [_group(server, g) for g in groups],
    }
    resp = web.Response(text=dumps(body))
    # Set as a raw header: aiohttp's content_type would drop the parameters.
    resp.headers["Content-Type"] = (
        f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    )
    return resp
