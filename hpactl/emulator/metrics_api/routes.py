"""HTTP routing of the metrics groups: ``/apis/{group}[/...]`` and
``/openapi/v3/apis/{group}/{version}``, requests parsed and answered from a
:class:`MetricsState` (reads in :mod:`.queries`, writes on the state, patches by
:mod:`hpactl.emulator.patch`)."""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from hpactl.emulator import errors, patch
from hpactl.emulator.errors import ApiError
from hpactl.emulator.metrics_api import queries
from hpactl.emulator.metrics_api.discovery import group_document, metrics_api_openapi_v3
from hpactl.emulator.metrics_api.groups import (
    CUSTOM_GROUP,
    EXTERNAL_VALUE,
    METRIC_VALUE,
    METRICS_GROUP,
    METRICS_GROUPS,
    POD_METRICS,
    MetricsKind,
)
from hpactl.emulator.metrics_api.plurals import GroupResource
from hpactl.emulator.metrics_api.state import MetricsState
from hpactl.emulator.metrics_api.tables import as_table, table_version

__all__ = ["register_metrics_routes"]

_JSON_PATCH = "application/json-patch+json"
_MERGE_PATCH = "application/merge-patch+json"
_STRATEGIC_PATCH = "application/strategic-merge-patch+json"
_APPLY_PATCH = "application/apply-patch+yaml"
# The metrics types have no list merge keys (PodMetrics containers are atomic); only
# ObjectMeta's apply to a strategic merge patch.
_OBJECT_META_MERGE_KEYS = {"ownerReferences": "uid"}
_TRUE = ("1", "t", "T", "true", "TRUE", "True")


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status,
        content_type="application/json",
    )


def _unavailable_response() -> web.Response:
    # http.Error(w, "service unavailable", 503) in kube-aggregator's proxy handler.
    resp = web.Response(
        text="service unavailable\n", status=503, content_type="text/plain", charset="utf-8"
    )
    resp.headers["X-Content-Type-Options"] = "nosniff"
    return resp


def _respond(
    kind: MetricsKind, request: web.Request, body: dict[str, Any], status: int = 200
) -> web.Response:
    """The object or list as JSON, or as a meta.k8s.io Table when asked for one."""
    version = table_version(request.headers.get("Accept", ""))
    if version is None or status != 200:
        return _json(body, status)
    return _json(as_table(kind, body, version, request.query.get("includeObject", "Metadata")))


def _selector(request: web.Request, name: str) -> Any:
    return queries.label_selector(request.query.get(name, ""))


async def _read_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        raise errors.bad_request("the request body is empty")
    try:
        if request.content_type in ("application/yaml", _APPLY_PATCH):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc


def _patched(content_type: str, current: dict[str, Any], body: Any) -> Any:
    if content_type == _JSON_PATCH:
        return patch.json_patch(current, body)
    if content_type == _STRATEGIC_PATCH:
        return patch.strategic_merge_patch(current, body, _OBJECT_META_MERGE_KEYS)
    if content_type in (_MERGE_PATCH, _APPLY_PATCH):
        # Server-side apply, approximated: merged like a merge patch, no field ownership.
        return patch.merge_patch(current, body)
    raise errors.unsupported_media_type(content_type, [_JSON_PATCH, _MERGE_PATCH, _APPLY_PATCH])


async def _patch(
    state: MetricsState, kind: MetricsKind, request: web.Request, namespace: str, name: str
) -> web.Response:
    dry_run = request.query.get("dryRun") == "All"
    body = await _read_body(request)
    ctype = request.content_type
    old = state.objects(kind).get((namespace, name))
    if old is None:
        if ctype != _APPLY_PATCH:
            raise errors.not_found(kind.group, kind.resource, name)
        checked = state.check_body(kind, body, namespace, name)
        out, _ = state.update(kind, checked, namespace, name, dry_run, create=True)
        return _json(out, 201)
    patched = _patched(ctype, state.render_stored(kind, old), body)
    if not isinstance(patched, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    checked = state.check_body(kind, patched, namespace, name)
    out, _ = state.update(kind, checked, namespace, name, dry_run, create=False)
    return _json(out)


async def _writable(
    state: MetricsState,
    kind: MetricsKind,
    request: web.Request,
    namespace: str | None,
    name: str | None,
) -> web.Response:
    """Collection (name None) or item endpoints of a writable kind."""
    dry_run = request.query.get("dryRun") == "All"
    method = request.method
    if name is None:
        if method == "GET":
            field_ok = queries.field_selector(request.query.get("fieldSelector", ""))
            listed = queries.list_stored(
                state, kind, namespace, _selector(request, "labelSelector"), field_ok
            )
            return _respond(kind, request, listed)
        if namespace is None:
            raise errors.method_not_allowed()
        if method == "POST":
            body = state.check_body(kind, await _read_body(request), namespace, None)
            return _json(state.create(kind, body, namespace, dry_run), 201)
        if method == "DELETE":
            state.delete_collection(kind, namespace, dry_run)
            return _json(
                {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
            )
        raise errors.method_not_allowed()
    assert namespace is not None
    if method == "GET":
        if kind is POD_METRICS:
            return _respond(kind, request, queries.pod_metrics(state, namespace, name))
        item = state.objects(kind).get((namespace, name))
        if item is None:
            raise errors.not_found(kind.group, kind.resource, name)
        return _respond(kind, request, state.render_stored(kind, item))
    if method == "PUT":
        body = state.check_body(kind, await _read_body(request), namespace, name)
        out, created = state.update(kind, body, namespace, name, dry_run, create=True)
        return _json(out, 201 if created else 200)
    if method == "PATCH":
        return await _patch(state, kind, request, namespace, name)
    if method == "DELETE":
        return _json(state.delete(kind, namespace, name, dry_run))
    raise errors.method_not_allowed()


def _item_path(rest: list[str], resource: str) -> tuple[str | None, str | None] | None:
    """(namespace, name) of ``{resource}``, ``namespaces/{ns}/{resource}[/{name}]``."""
    if rest == [resource]:
        return None, None
    if len(rest) in (3, 4) and rest[0] == "namespaces" and rest[2] == resource:
        return rest[1], rest[3] if len(rest) == 4 else None
    return None


async def _dispatch(state: MetricsState, group: str, request: web.Request) -> web.Response:
    version = METRICS_GROUPS[group]
    tail = request.match_info.get("tail", "")
    segments = [s for s in tail.split("/") if s]
    if not segments:
        if request.method != "GET":
            raise errors.method_not_allowed()
        return _json(group_document(group))
    if segments[0] != version:
        raise errors.path_not_found()
    if group in state.unavailable:
        return _unavailable_response()
    rest = segments[1:]
    if not rest:
        if request.method != "GET":
            raise errors.method_not_allowed()
        return _json(state.resource_list(group))
    if request.method == "GET" and request.query.get("watch") in _TRUE:
        # No metrics API implements watch (errors.NewMethodNotSupported).
        resource = rest[2] if rest[0] == "namespaces" and len(rest) > 2 else rest[0]
        raise ApiError(
            405,
            "MethodNotAllowed",
            f'watch is not supported on resources of kind "{resource}.{group}"',
            {"group": group, "kind": resource},
        )
    if group == METRICS_GROUP:
        return await _dispatch_resource_metrics(state, request, rest)
    if group == CUSTOM_GROUP:
        return await _dispatch_custom(state, request, rest)
    return await _dispatch_external(state, request, rest)


def _get_only(request: web.Request) -> None:
    if request.method != "GET":
        raise errors.method_not_allowed()


async def _dispatch_resource_metrics(
    state: MetricsState, request: web.Request, rest: list[str]
) -> web.Response:
    if rest[0] == "nodes" and len(rest) <= 2:
        _get_only(request)
        if len(rest) == 2:
            raise errors.not_found(METRICS_GROUP, "nodemetrics", rest[1])
        empty = {"kind": "NodeMetricsList", "apiVersion": POD_METRICS.api_version}
        return _json({**empty, "metadata": {}, "items": []})
    where = _item_path(rest, POD_METRICS.resource)
    if where is None:
        raise errors.path_not_found()
    namespace, name = where
    if name is None and (namespace is None or request.method == "GET"):
        _get_only(request)
        field_ok = queries.field_selector(request.query.get("fieldSelector", ""))
        listed = queries.pod_metrics_list(
            state, namespace, _selector(request, "labelSelector"), field_ok
        )
        return _respond(POD_METRICS, request, listed)
    return await _writable(state, POD_METRICS, request, namespace, name)


async def _dispatch_custom(
    state: MetricsState, request: web.Request, rest: list[str]
) -> web.Response:
    where = _item_path(rest, METRIC_VALUE.resource)
    if where is not None:
        return await _writable(state, METRIC_VALUE, request, *where)
    _get_only(request)
    if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "metrics":
        # Metrics describing a Namespace: /namespaces/{ns}/metrics/{metric}.
        namespace, requested, name, metric = None, GroupResource("", "namespaces"), rest[1], rest[3]
    elif len(rest) == 5 and rest[0] == "namespaces":
        namespace, requested, name, metric = rest[1], GroupResource.parse(rest[2]), rest[3], rest[4]
    elif len(rest) == 3:
        namespace, requested, name, metric = None, GroupResource.parse(rest[0]), rest[1], rest[2]
    else:
        raise errors.path_not_found()
    metric_selector = _selector(request, "metricLabelSelector")
    # labelSelector is read only by the "*" query.
    selector = _selector(request, "labelSelector") if name == "*" else None
    return _json(
        queries.custom_query(
            state,
            namespace,
            requested,
            name,
            metric,
            selector=selector,
            metric_selector=metric_selector,
        )
    )


async def _dispatch_external(
    state: MetricsState, request: web.Request, rest: list[str]
) -> web.Response:
    where = _item_path(rest, EXTERNAL_VALUE.resource)
    if where is not None:
        return await _writable(state, EXTERNAL_VALUE, request, *where)
    if len(rest) == 3 and rest[0] == "namespaces":
        _get_only(request)
        selector = _selector(request, "labelSelector")
        return _json(queries.external_query(state, rest[1], rest[2], selector))
    raise errors.path_not_found()


def register_metrics_routes(app: web.Application, state: MetricsState) -> None:
    """Add ``/apis/{metrics group}[/...]`` and ``/openapi/v3/apis/{group}/{version}``
    for the three groups to ``app``.

    Register these before any generic ``/apis/...`` or ``/openapi/...`` route: aiohttp
    picks the first matching resource in registration order. The ``/openapi/v3`` root
    document (the server's) should list ``apis/{group}/{version}`` for the three groups.
    """
    for group, version in METRICS_GROUPS.items():

        async def handler(request: web.Request, group: str = group) -> web.Response:
            try:
                return await _dispatch(state, group, request)
            except ApiError as err:
                return _json(err.status(), err.code)

        async def openapi(request: web.Request, group: str = group) -> web.Response:
            return _json(metrics_api_openapi_v3(group))

        app.router.add_route("*", "/apis/" + group + "{tail:(/.*)?}", handler)
        app.router.add_get(f"/openapi/v3/apis/{group}/{version}", openapi)
