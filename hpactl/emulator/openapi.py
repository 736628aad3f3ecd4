"""Minimal OpenAPI v3 documents, as far as kubectl needs them.

kubectl (1.32) asks `/openapi/v3` whether each kind's PATCH operation takes the
`fieldValidation` query parameter; when it does, validation is left to the server and
no schema is downloaded.  The documents here say exactly that, for every served
kind.  They deliberately do not list `application/strategic-merge-patch+json` for
PATCH, so `kubectl apply` computes strategic merge patches from its own built-in Go
types (custom resources: JSON merge patch), exactly what it sends to a real server.
`/openapi/v2` answers 404, which kubectl tolerates when v3 is served.
"""

from __future__ import annotations

import hashlib
from typing import Any

from aiohttp import web

from hpactl.emulator import errors
from hpactl.emulator.store import dumps

_PARAMS = [
    {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for name in ("dryRun", "fieldManager", "fieldValidation", "force")
]
_BODY_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


def patch_path_item(group: str, version: str, kind: str) -> dict[str, Any]:
    """The path item of an object's URL: its PATCH operation, as kubectl reads it."""
    gvk = {"group": group, "version": version, "kind": kind}
    return {
        "patch": {
            "operationId": f"patch{kind}",
            "parameters": list(_PARAMS),
            "requestBody": {
                "content": {t: {"schema": {"type": "object"}} for t in _BODY_TYPES},
                "required": True,
            },
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
        }
    }


def gv_document(paths: dict[str, Any], title_version: str) -> dict[str, Any]:
    """An OpenAPI v3 document of one group-version with these paths."""
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": title_version},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _gv_doc(server: Any, group: str, version: str) -> dict[str, Any]:
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Any] = {}
    for rt in server.registry.resources(group, version):
        if rt.plural == "*":
            continue
        path = (
            f"{prefix}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
            if rt.namespaced
            else f"{prefix}/{rt.plural}/{{name}}"
        )
        paths[path] = patch_path_item(group, version, rt.kind)
    return gv_document(paths, server.config.git_version)


def openapi_response(server: Any, request: web.Request, parts: list[str]) -> web.StreamResponse:
    if parts == ["v3"]:
        root: dict[str, Any] = {}
        for group in ["", *[g for g in server.registry.groups() if g]]:
            for version in server.registry.versions(group):
                key = f"apis/{group}/{version}" if group else f"api/{version}"
                digest = hashlib.sha256(dumps(_gv_doc(server, group, version)).encode()).hexdigest()
                root[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest.upper()}"}
        return web.Response(text=dumps({"paths": root}), content_type="application/json")
    if len(parts) >= 3 and parts[0] == "v3":
        rest = parts[1:]
        if rest[0] == "api" and len(rest) == 2:
            group, version = "", rest[1]
        elif rest[0] == "apis" and len(rest) == 3:
            group, version = rest[1], rest[2]
        else:
            raise errors.path_not_found()
        if version not in server.registry.versions(group):
            raise errors.path_not_found()
        return web.Response(
            text=dumps(_gv_doc(server, group, version)), content_type="application/json"
        )
    raise errors.path_not_found()
