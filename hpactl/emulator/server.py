"""HTTP API of the emulator: discovery, CRUD, patch, status/scale subresources, watch.

All resource requests go through one catch-all handler that resolves the request the
way the apiserver's RequestInfoFactory does (`request_attributes`) and dispatches on
the verb.  Metrics API routes (hpactl.emulator.metrics_api) are registered before it.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml
from aiohttp import web
from aiohttp.typedefs import Handler

from hpactl.emulator import errors, patch, rbac, reviews, schema, tables
from hpactl.emulator.convert import from_storage, to_storage
from hpactl.emulator.filters import (
    FieldSelector,
    LabelMatcher,
    parse_field_selector,
    parse_label_selector,
)
from hpactl.emulator.metrics_api import register_metrics_routes
from hpactl.emulator.rbac import NAMESPACE_SUBRESOURCES, VERB_BY_METHOD, RequestAttributes
from hpactl.emulator.registry import Registry, ResourceType, crd_resource_types
from hpactl.emulator.store import (
    Entry,
    Store,
    WatchEvent,
    decode_continue,
    dumps,
    encode_continue,
)
from hpactl.emulator.validation import drop_unknown_fields
from hpactl.emulator.validation import validate as validate
from hpactl.model.selectors import selector_from_label_selector

Obj = dict[str, Any]

JSON = "application/json"
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


# ---- request attributes ---------------------------------------------------------------


def parse_bool(value: str, param: str = "") -> bool:
    """Go strconv.ParseBool."""
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _watch_requested(query: Any) -> bool:
    v = query.get("watch")
    if v is None:
        return False
    try:
        return parse_bool(v) if v != "" else False
    except errors.ApiError:
        return False


def _split(method: str, path: str, query: Any) -> tuple[RequestAttributes, int]:
    """RequestInfoFactory.NewRequestInfo; also returns how many resource parts followed."""
    method = method.upper()
    parts = [p for p in path.split("/") if p]
    non_resource = RequestAttributes(False, method.lower(), path)
    if not parts or parts[0] not in ("api", "apis"):
        return non_resource, 0
    if parts[0] == "api":
        if len(parts) < 3:
            return non_resource, 0
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return non_resource, 0
        group, version, rest = parts[1], parts[2], parts[3:]
    verb = VERB_BY_METHOD.get(method, method.lower())
    if rest[0] == "watch":  # deprecated /watch/ prefix paths
        verb = "watch"
        rest = rest[1:]
        if not rest:
            return non_resource, 0
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if not name:
        if verb == "get":
            verb = "watch" if _watch_requested(query) else "list"
        elif verb == "delete":
            verb = "deletecollection"
    elif verb == "get" and _watch_requested(query):
        verb = "watch"
    attrs = RequestAttributes(True, verb, path, group, version, resource, sub, namespace, name)
    return attrs, len(rest)


_ATTRS_KEY = web.RequestKey("hpactl.attributes", RequestAttributes)
_NPARTS_KEY = web.RequestKey("hpactl.nparts", int)
_USER_KEY = web.RequestKey("hpactl.user", tuple)
_WARNINGS_KEY = web.RequestKey("hpactl.warnings", list)


def request_attributes(request: web.Request) -> RequestAttributes:
    """Resolve an aiohttp request (cached on the request)."""
    cached = request.get(_ATTRS_KEY)
    if isinstance(cached, RequestAttributes):
        return cached
    attrs, nparts = _split(request.method, request.path, request.query)
    request[_ATTRS_KEY] = attrs
    request[_NPARTS_KEY] = nparts
    return attrs


# ---- helpers ----------------------------------------------------------------------------


def json_response(body: Any, status: int = 200) -> web.Response:
    text = body if isinstance(body, str) else dumps(body)
    return web.Response(text=text, status=status, content_type=JSON)


def error_response(err: errors.ApiError) -> web.Response:
    return json_response(err.status(), err.code)


def accept_table(accept: str) -> str | None:
    """ "v1"/"v1beta1" when the client asked for a meta.k8s.io Table first."""
    for part in accept.split(","):
        params = {}
        for p in part.split(";")[1:]:
            k, _, v = p.strip().partition("=")
            params[k] = v
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return params.get("v", "v1")
        if params.get("as") in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            return "meta:" + params.get("v", "v1")
        if part.strip().split(";")[0] in (JSON, "*/*", "application/*"):
            return None
    return None


@dataclass
class ServerConfig:
    bookmark_interval: float = 60.0
    # Watch duration when the client gives no timeoutSeconds: [min, 2*min) like
    # --min-request-timeout.
    min_request_timeout: float = 1800.0
    git_version: str = "v1.32.0"
    # How often an idle watch checks whether its client is still connected.
    disconnect_check: float = 5.0
    # Streaming lists (sendInitialEvents=true). False answers as a server with the
    # WatchList feature gate off does: 422 for any watch that asks for them.
    watch_list: bool = True


@dataclass
class ServerHooks:
    """Optional collaborators (from modules that may not exist yet)."""

    faults: Any = None
    audit: Any = None  # an audit.AuditLog: its middleware goes first
    authorizer: Any = None
    metrics: Any = None
    # token -> (user, groups); None disables authentication.
    tokens: dict[str, tuple[str, list[str]]] | None = None
    extra_groups: list[Callable[[], list[Obj]]] = field(default_factory=list)


class ApiServer:
    def __init__(
        self, store: Store, registry: Registry, config: ServerConfig, hooks: ServerHooks
    ) -> None:
        self.store = store
        self.registry = registry
        self.config = config
        self.hooks = hooks
        self.address = "127.0.0.1:0"
        self._stopping = asyncio.Event()
        store.on_write.append(self._crd_hook)

    def stop_watches(self) -> None:
        self._stopping.set()
        self.store.close_watchers()

    # ---- app --------------------------------------------------------------------------

    def make_app(self) -> web.Application:
        middlewares: list[Any] = []
        if self.hooks.audit is not None:
            middlewares.append(self.hooks.audit.middleware)
        if self.hooks.faults is not None and getattr(self.hooks.faults, "middleware", None):
            middlewares.append(self.hooks.faults.middleware)
        if self.hooks.tokens is not None:
            middlewares.append(self._auth_middleware)
        app = web.Application(middlewares=middlewares, client_max_size=64 * 1024 * 1024)
        if self.hooks.metrics is not None:
            register_metrics_routes(app, self.hooks.metrics)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    @web.middleware
    async def _auth_middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in ("/healthz", "/livez", "/readyz"):
            return await handler(request)
        tokens = self.hooks.tokens or {}
        header = request.headers.get("Authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else ""
        who = tokens.get(token) if token else None
        if who is None:
            return error_response(errors.unauthorized())
        user, groups = who
        imp_user = request.headers.get("Impersonate-User")
        if imp_user:
            if "system:masters" not in groups:
                return error_response(
                    errors.forbidden(user, "impersonate", "", "users", "", "", imp_user)
                )
            user, groups = (
                imp_user,
                _impersonated_groups(imp_user, request.headers.getall("Impersonate-Group", [])),
            )
        request[_USER_KEY] = (user, list(groups))
        authz = self.hooks.authorizer
        if authz is not None and "system:masters" not in groups:
            denied = self._authorize(authz, request, user, groups)
            if denied is not None:
                return denied
        return await handler(request)

    def _authorize(
        self, authz: Any, request: web.Request, user: str, groups: list[str]
    ) -> web.Response | None:
        attrs = request_attributes(request)
        if not attrs.resource_request:
            if authz.authorize_path(
                user,
                groups,
                request.method.lower() if request.method != "HEAD" else "get",
                request.path,
            ):
                return None
            body = rbac.forbidden_status(user, "get", "", "", "", "", "", path=request.path)
            return json_response(body, 403)
        ok = authz.authorize(
            user,
            groups,
            attrs.verb,
            attrs.api_group,
            attrs.resource,
            attrs.subresource,
            attrs.namespace,
            attrs.name,
        )
        if ok:
            return None
        body = rbac.forbidden_status(
            user,
            attrs.verb,
            attrs.api_group,
            attrs.resource,
            attrs.subresource,
            attrs.namespace,
            attrs.name,
        )
        return json_response(body, 403)

    # ---- entry point ------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            attrs = request_attributes(request)
            if not attrs.resource_request:
                return await self._non_resource(request)
            resp = await self._resource(request, attrs)
            for w in request.get(_WARNINGS_KEY, []):
                escaped = w.replace("\\", "\\\\").replace('"', '\\"')
                resp.headers.add("Warning", f'299 - "{escaped}"')
            return resp
        except errors.ApiError as err:
            return error_response(err)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            # A malformed body the emulator did not anticipate: a 500 like the real
            # server's "Internal error occurred", never a dropped connection.
            return error_response(
                errors.ApiError(500, "InternalError", f"Internal error occurred: {exc!r}")
            )

    # ---- discovery ----------------------------------------------------------------------

    async def _non_resource(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed()
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/version":
            return json_response(self._version())
        if path in ("/api", "/apis"):
            from hpactl.emulator.discovery import aggregated_response, requested_version

            version = requested_version(request.headers.get("Accept", ""))
            if version is not None:
                return aggregated_response(self, path == "/api", version)
        if path == "/api":
            return json_response(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": self.address}
                    ],
                }
            )
        if path == "/apis":
            return json_response(
                {
                    "kind": "APIGroupList",
                    "apiVersion": "v1",
                    "groups": [self._group_doc(g) for g in self.registry.groups() if g],
                }
            )
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            return json_response(self._resource_list("", parts[1]))
        if parts[0] == "apis" and len(parts) == 2:
            if parts[1] not in self.registry.groups():
                raise errors.path_not_found()
            return json_response(
                self._group_doc(parts[1]) | {"kind": "APIGroup", "apiVersion": "v1"}
            )
        if parts[0] == "apis" and len(parts) == 3:
            return json_response(self._resource_list(parts[1], parts[2]))
        if parts[0] == "openapi":
            from hpactl.emulator.openapi import openapi_response

            return openapi_response(self, request, parts[1:])
        raise errors.path_not_found()

    def _version(self) -> Obj:
        gv = self.config.git_version
        major, minor = gv.lstrip("v").split(".")[:2]
        return {
            "major": major,
            "minor": minor,
            "emulationMajor": major,
            "emulationMinor": minor,
            "gitVersion": gv,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.23.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    def _group_doc(self, group: str) -> Obj:
        versions = [
            {"groupVersion": f"{group}/{v}", "version": v} for v in self._ordered_versions(group)
        ]
        pref = self.registry.preferred_version(group)
        return {
            "name": group,
            "versions": versions,
            "preferredVersion": {"groupVersion": f"{group}/{pref}", "version": pref},
        }

    def _ordered_versions(self, group: str) -> list[str]:
        versions = self.registry.versions(group)
        pref = self.registry.preferred_version(group)
        return [pref] + [v for v in versions if v != pref]

    def _resource_list(self, group: str, version: str) -> Obj:
        rts = self.registry.resources(group, version)
        if not rts:
            raise errors.path_not_found()
        gv = f"{group}/{version}" if group else version
        resources: list[Obj] = []
        for rt in sorted(rts, key=lambda r: r.plural):
            if rt.plural == "*":
                continue
            entry: Obj = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            resources.append(entry)
            if rt.status:
                resources.append(
                    {
                        "name": f"{rt.plural}/status",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": rt.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
            if rt.scale is not None:
                resources.append(
                    {
                        "name": f"{rt.plural}/scale",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "group": "autoscaling",
                        "version": "v1",
                        "kind": "Scale",
                        "verbs": ["get", "patch", "update"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": gv,
            "resources": resources,
        }

    # ---- resources ----------------------------------------------------------------------

    def _resolve(self, attrs: RequestAttributes) -> ResourceType:
        rt = self.registry.get(attrs.api_group, attrs.api_version, attrs.resource)
        if rt is None or rt.external:
            raise errors.path_not_found()
        if attrs.namespace and not rt.namespaced and attrs.resource != "namespaces":
            raise errors.path_not_found()
        if (
            rt.namespaced
            and not attrs.namespace
            and attrs.verb not in ("list", "watch", "deletecollection")
        ):
            raise errors.path_not_found()
        return rt

    async def _resource(self, request: web.Request, attrs: RequestAttributes) -> web.StreamResponse:
        if request.get(_NPARTS_KEY, 0) > 3:
            raise errors.path_not_found()
        if attrs.api_group == "authorization.k8s.io" and attrs.verb == "create":
            if attrs.resource == "subjectaccessreviews":
                return await self._subject_access_review(request, attrs)
            return await self._access_review(request, attrs)
        if attrs.api_group == "authentication.k8s.io" and attrs.verb == "create":
            return await self._token_review(request, attrs)
        rt = self._resolve(attrs)
        ns = attrs.namespace if rt.namespaced else ""
        if rt.plural == "namespaces" and not rt.group:
            ns = ""
        verb = attrs.verb
        sub = attrs.subresource
        if request.query.get("watch"):
            parse_bool(request.query["watch"])  # 400 on a value Go's ParseBool rejects
        if sub and sub not in ("status", "scale"):
            raise errors.path_not_found()
        if sub == "status" and not rt.status:
            raise errors.path_not_found()
        if sub == "scale" and rt.scale is None:
            raise errors.path_not_found()
        allowed = ("get", "patch", "update") if sub else rt.verbs
        if verb not in allowed:
            raise errors.method_not_allowed()
        if verb == "list":
            return self._list(request, rt, ns if rt.namespaced and attrs.namespace else None)
        if verb == "watch":
            from hpactl.emulator.watch import serve_watch

            return await serve_watch(
                self, request, rt, ns if rt.namespaced and attrs.namespace else None, attrs.name
            )
        if verb == "get":
            return self._get(request, rt, ns, attrs.name, sub)
        if verb == "create":
            if sub or attrs.name:
                raise errors.method_not_allowed()
            return await self._create(request, rt, ns)
        if verb == "update":
            return await self._update(request, rt, ns, attrs.name, sub)
        if verb == "patch":
            return await self._patch(request, rt, ns, attrs.name, sub)
        if verb == "delete":
            if sub:
                raise errors.method_not_allowed()
            return await self._delete(request, rt, ns, attrs.name)
        if verb == "deletecollection":
            return await self._delete_collection(request, rt, ns if attrs.namespace else None)
        raise errors.method_not_allowed()

    # ---- review APIs (hpactl.emulator.reviews) -------------------------------------------

    async def _access_review(self, request: web.Request, attrs: RequestAttributes) -> web.Response:
        if attrs.resource != "selfsubjectaccessreviews" or attrs.name or attrs.namespace:
            raise errors.path_not_found()
        spec = reviews.review_spec(await self._body(request), check_namespace=False)
        user, groups = request.get(_USER_KEY, ("system:admin", ["system:masters"]))
        out = reviews.self_subject_access_review(spec, user, groups, self.hooks.authorizer)
        return json_response(out, 201)

    async def _token_review(self, request: web.Request, attrs: RequestAttributes) -> web.Response:
        if attrs.resource != "tokenreviews" or attrs.name or attrs.namespace:
            raise errors.path_not_found()
        spec = reviews.review_spec(await self._body(request))
        out = reviews.token_review(spec, self.hooks.tokens, self._service_account_uid)
        return json_response(out, 201)

    def _service_account_uid(self, user: str) -> str:
        parts = user.split(":")
        if len(parts) != 4 or parts[:2] != ["system", "serviceaccount"]:
            return ""
        entry = self.store.get_entry(("", "serviceaccounts"), parts[2], parts[3])
        return str(entry.obj["metadata"].get("uid", "")) if entry is not None else ""

    async def _subject_access_review(
        self, request: web.Request, attrs: RequestAttributes
    ) -> web.Response:
        if attrs.name or attrs.namespace:
            raise errors.path_not_found()
        spec = reviews.review_spec(await self._body(request))
        out = reviews.subject_access_review(spec, self.hooks.authorizer)
        return json_response(out, 201)

    # ---- serialization ------------------------------------------------------------------

    def served_raw(self, rt: ResourceType, entry: Entry) -> str:
        if rt.custom and schema.defaults_on_read(rt.schema_key, rt.schema):
            # Custom resources are defaulted on read from storage too: a default added to
            # the CRD later shows on objects stored before (cached per schema).
            key = f"{rt.group_version}#{rt.schema_key}"
            cached = entry.alt.get(key)
            if cached is None:
                obj = copy.deepcopy(from_storage(rt, entry.obj))
                schema.apply_defaults(obj, rt.schema)
                cached = entry.alt[key] = dumps(obj)
            return cached
        if rt.version == rt.stored_version and rt.group != "events.k8s.io":
            return entry.raw
        cached = entry.alt.get(rt.group_version)
        if cached is None:
            cached = entry.alt[rt.group_version] = dumps(from_storage(rt, entry.obj))
        return cached

    def served_obj(self, rt: ResourceType, entry: Entry) -> Obj:
        if (
            rt.version == rt.stored_version
            and rt.group != "events.k8s.io"
            and not (rt.custom and schema.defaults_on_read(rt.schema_key, rt.schema))
        ):
            return entry.obj
        out: Obj = json.loads(self.served_raw(rt, entry))
        return out

    def _single(
        self, request: web.Request, rt: ResourceType, entry: Entry, status: int = 200
    ) -> web.Response:
        mode = accept_table(request.headers.get("Accept", ""))
        if mode is None:
            return json_response(self.served_raw(rt, entry), status)
        if mode.startswith("meta:"):
            return json_response(
                tables.partial_metadata(entry.obj) | {"apiVersion": "meta.k8s.io/" + mode[5:]},
                status,
            )
        t = tables.table(
            rt,
            [(entry.obj, self.served_obj(rt, entry))],
            self.store.now(),
            request.query.get("includeObject", "Metadata"),
            list_meta={"resourceVersion": str(entry.rv)},
        )
        t["apiVersion"] = "meta.k8s.io/" + mode
        return json_response(t, status)

    # ---- get / list -----------------------------------------------------------------------

    def _get(
        self, request: web.Request, rt: ResourceType, ns: str, name: str, sub: str
    ) -> web.Response:
        entry = self.store.get_entry(rt.storage_key, ns, name)
        if entry is None:
            raise errors.not_found(rt.group, rt.plural, name)
        if sub == "scale":
            return json_response(self._scale_of(rt, entry.obj))
        return self._single(request, rt, entry)

    def _selectors(
        self, request: web.Request, rt: ResourceType
    ) -> tuple[LabelMatcher | None, FieldSelector | None]:
        ls = parse_label_selector(request.query.get("labelSelector", ""))
        fs = parse_field_selector(request.query.get("fieldSelector", ""), rt)
        return ls, fs

    @staticmethod
    def _matches(obj: Obj, ls: LabelMatcher | None, fs: FieldSelector | None) -> bool:
        if ls is not None and not ls.matches(obj.get("metadata", {}).get("labels") or {}):
            return False
        return fs is None or fs.matches(obj)

    def _list(self, request: web.Request, rt: ResourceType, ns: str | None) -> web.Response:
        q = request.query
        ls, fs = self._selectors(request, rt)
        key = rt.storage_key
        rv_param = q.get("resourceVersion", "")
        match = q.get("resourceVersionMatch", "")
        limit_s = q.get("limit", "")
        try:
            limit = int(limit_s) if limit_s else 0
        except ValueError:
            raise errors.bad_request(f'limit: Invalid value: "{limit_s}"') from None
        cont = q.get("continue", "")
        if match and match not in ("Exact", "NotOlderThan"):
            raise errors.bad_request(
                f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"'
            )
        if match and not rv_param:
            raise errors.bad_request(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
            )
        if cont and rv_param:
            raise errors.bad_request(
                "specifying resource version is not allowed when using continue"
            )
        faults = self.hooks.faults
        if (
            faults is not None
            and rv_param not in ("", "0")
            and call_bool_hook(faults, "force_gone", request.path)
        ):
            raise errors.gone("The resourceVersion for the provided list is too old.")
        current = self.store.rv
        start_after: tuple[str, str] | None = None
        if cont:
            at_rv, start_after = decode_continue(cont)
            if self.store.too_old(key, at_rv):
                raise errors.gone(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter, or use "
                    "the continue token in this response to retrieve the remainder of the "
                    "results. Continuing with the provided token results in an inconsistent "
                    "list - objects that were created, modified, or deleted between the time "
                    "the first chunk was returned and now may show up in the list."
                )
            entries = self.store.snapshot(key, ns, at_rv, after=start_after)
            list_rv = at_rv
        elif rv_param and rv_param != "0":
            want = errors.parse_resource_version(rv_param)
            exact = match == "Exact" or (not match and limit > 0)
            if want > current:
                raise errors.ApiError(
                    504,
                    "Timeout",
                    f"Too large resource version: {want}, current: {current}",
                    {
                        "causes": [
                            {
                                "reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version",
                            }
                        ],
                        "retryAfterSeconds": 1,
                    },
                )
            if exact:
                if self.store.too_old(key, want):
                    raise errors.gone("The resourceVersion for the provided list is too old.")
                entries = self.store.snapshot(key, ns, want)
                list_rv = want
            else:
                entries = list(self.store.iter_entries(key, ns))
                list_rv = current
        else:
            if rv_param == "0":
                limit = 0  # served from the watch cache: limit is ignored
            entries = list(self.store.iter_entries(key, ns))
            list_rv = current

        selected: list[Entry] = []
        next_token = ""
        remaining: int | None = None
        for i, e in enumerate(entries):
            if (ls is not None or fs is not None) and not self._matches(e.obj, ls, fs):
                continue
            if limit and len(selected) == limit:
                last = selected[-1]
                next_token = encode_continue(list_rv, *_entry_key(last))
                if ls is None and fs is None:
                    remaining = len(entries) - i
                break
            selected.append(e)
        meta: Obj = {"resourceVersion": str(list_rv)}
        if next_token:
            meta["continue"] = next_token
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        mode = accept_table(request.headers.get("Accept", ""))
        if mode is not None and not mode.startswith("meta:"):
            t = tables.table(
                rt,
                [(e.obj, self.served_obj(rt, e)) for e in selected],
                self.store.now(),
                q.get("includeObject", "Metadata"),
                list_meta=meta,
            )
            t["apiVersion"] = "meta.k8s.io/" + mode
            return json_response(t)
        if mode is not None:
            body = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/" + mode[5:],
                "metadata": meta,
                "items": [tables.partial_metadata(e.obj) for e in selected],
            }
            return json_response(body)
        head = dumps({"kind": f"{rt.kind}List", "apiVersion": rt.group_version, "metadata": meta})
        items = ",".join(self.served_raw(rt, e) for e in selected)
        return json_response(f'{head[:-1]},"items":[{items}]}}')

    # ---- writes ---------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> Any:
        ctype = request.content_type
        if ctype == "application/vnd.kubernetes.protobuf":
            from hpactl.emulator.protobuf import decode

            return decode(await request.read())
        if ctype not in (
            JSON,
            "application/yaml",
            "text/yaml",
            "application/x-yaml",
            "",
            "application/octet-stream",
        ):
            # No protobuf/CBOR: client-go falls back to JSON on 415.
            raise errors.unsupported_media_type(ctype, [JSON, "application/yaml"])
        raw = await request.read()
        if not raw:
            raise errors.bad_request("the body of the request was empty")
        try:
            if "yaml" in ctype:
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(
                f"the body of the request could not be decoded: {exc}"
            ) from exc

    def _check_body(self, rt: ResourceType, body: Any, ns: str, name: str = "") -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        av = body.get("apiVersion")
        kind = body.get("kind")
        if av is not None and av != rt.group_version:
            raise errors.bad_request(
                f"the API version in the data ({av}) does not match the expected API version ({rt.group_version})"
            )
        if kind is not None and kind != rt.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        body["apiVersion"] = rt.group_version
        body["kind"] = rt.kind
        meta = body.get("metadata")
        if meta is None:
            meta = body["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if rt.namespaced:
            bns = meta.get("namespace")
            if bns and bns != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
        if name and meta.get("name") and meta.get("name") != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        return body

    def _field_validation(self, request: web.Request, rt: ResourceType, body: Obj) -> None:
        """fieldValidation: Strict rejects unknown fields, Warn (the default) and
        Ignore drop them, Warn with a Warning header per field."""
        mode = request.query.get("fieldValidation", "Warn") or "Warn"
        if mode not in ("Strict", "Warn", "Ignore"):
            raise errors.bad_request(
                f'fieldValidation: Unsupported value: "{mode}": supported values: '
                '"Ignore", "Strict", "Warn"'
            )
        unknown = drop_unknown_fields(rt, body)
        if not unknown:
            return
        if mode == "Strict":
            listed = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                f"strict decoding error: {listed}"
            )
        if mode == "Warn":
            request[_WARNINGS_KEY] = [f'unknown field "{u}"' for u in unknown]

    def _require_namespace(self, rt: ResourceType, ns: str) -> None:
        if rt.namespaced and self.store.get_entry(("", "namespaces"), "", ns) is None:
            raise errors.not_found("", "namespaces", ns)

    def _storage_rt(self, rt: ResourceType) -> ResourceType:
        return self.registry.get(rt.group, rt.stored_version, rt.plural) or rt

    def _to_storage(self, rt: ResourceType, body: Obj) -> Obj:
        if rt.version == rt.stored_version and rt.group != "events.k8s.io":
            return body
        return to_storage(rt, body)

    async def _create(self, request: web.Request, rt: ResourceType, ns: str) -> web.Response:
        body = self._check_body(rt, await self._body(request), ns)
        self._field_validation(request, rt, body)
        self._require_namespace(rt, ns)
        dry = request.query.get("dryRun") == "All"
        entry = self.store.create_entry(
            self._storage_rt(rt), ns, self._to_storage(rt, body), dry_run=dry, validate=True
        )
        return self._single(request, rt, entry, 201)

    async def _update(
        self, request: web.Request, rt: ResourceType, ns: str, name: str, sub: str
    ) -> web.Response:
        body = await self._body(request)
        if sub == "scale":
            return self._write_scale(rt, ns, name, body, check_rv=True)
        body = self._check_body(rt, body, ns, name)
        self._field_validation(request, rt, body)
        if not body["metadata"].get("name"):
            body["metadata"]["name"] = name
        entry = self.store.update_entry(
            self._storage_rt(rt),
            ns,
            name,
            self._to_storage(rt, body),
            subresource=sub,
            dry_run=request.query.get("dryRun") == "All",
            validate=True,
        )
        return self._single(request, rt, entry)

    async def _patch(
        self, request: web.Request, rt: ResourceType, ns: str, name: str, sub: str
    ) -> web.Response:
        ctype = request.content_type
        if ctype not in PATCH_TYPES or (rt.custom and ctype == PATCH_TYPES[2] and sub != "scale"):
            accepted = [t for t in PATCH_TYPES if not (rt.custom and t == PATCH_TYPES[2])]
            raise errors.unsupported_media_type(ctype, accepted)
        raw = await request.read()
        try:
            body = yaml.safe_load(raw) if ctype == PATCH_TYPES[3] else json.loads(raw or b"null")
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"error decoding patch: {exc}") from exc
        entry = self.store.get_entry(rt.storage_key, ns, name)
        if entry is None:
            if ctype == PATCH_TYPES[3] and not sub:
                obj = self._check_body(rt, body, ns, name)
                obj["metadata"].setdefault("name", name)
                self._require_namespace(rt, ns)
                created = self.store.create_entry(
                    self._storage_rt(rt), ns, self._to_storage(rt, obj), validate=True
                )
                return self._single(request, rt, created, 201)
            raise errors.not_found(rt.group, rt.plural, name)
        if sub == "scale":
            current = self._scale_of(rt, entry.obj)
            patched = _apply_patch(ctype, current, body)
            return self._write_scale(rt, ns, name, patched, check_rv=True)
        current_obj = copy.deepcopy(self.served_obj(rt, entry))
        patched = _apply_patch(ctype, current_obj, body)
        if not isinstance(patched, dict):
            raise errors.bad_request("patched object is not a JSON object")
        patched = self._check_body(rt, patched, ns, name)
        self._field_validation(request, rt, patched)
        new_entry = self.store.update_entry(
            self._storage_rt(rt),
            ns,
            name,
            self._to_storage(rt, patched),
            subresource=sub,
            dry_run=request.query.get("dryRun") == "All",
            validate=True,
        )
        return self._single(request, rt, new_entry)

    async def _delete_options(self, request: web.Request) -> Obj:
        raw = await request.read()
        if not raw:
            return {}
        try:
            opts = json.loads(raw)
        except ValueError as exc:
            raise errors.bad_request(
                f"the body of the request could not be decoded: {exc}"
            ) from exc
        if not isinstance(opts, dict):
            return {}
        policy = opts.get("propagationPolicy") or request.query.get("propagationPolicy")
        if policy and policy not in ("Orphan", "Background", "Foreground"):
            raise errors.bad_request(f'propagationPolicy: Unsupported value: "{policy}"')
        return opts

    async def _delete(
        self, request: web.Request, rt: ResourceType, ns: str, name: str
    ) -> web.Response:
        opts = await self._delete_options(request)
        pre = opts.get("preconditions") or {}
        dry = request.query.get("dryRun") == "All" or opts.get("dryRun") == ["All"]
        if rt.plural == "namespaces" and not rt.group and not dry:
            if self.store.get_entry(rt.storage_key, "", name) is None:
                raise errors.not_found("", "namespaces", name)
            if name in ("default", "kube-system", "kube-public"):
                # The NamespaceLifecycle admission plugin protects these.
                raise errors.ApiError(
                    403,
                    "Forbidden",
                    f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                    {"name": name, "kind": "namespaces"},
                )
            self.store.delete_namespace_contents(name)
        srt = self._storage_rt(rt)
        if srt.plural == "customresourcedefinitions" and not srt.custom and not dry:
            current = self.store.get_entry(srt.storage_key, "", name)
            if current is not None and not current.obj["metadata"].get("finalizers"):
                self._drop_custom_resources(current.obj)
        entry, gone = self.store.delete_entry(
            srt,
            ns,
            name,
            precondition_uid=pre.get("uid"),
            precondition_rv=pre.get("resourceVersion"),
            dry_run=dry,
        )
        if rt.delete_returns_object or not gone:
            return self._single(request, rt, entry, 200 if gone else 202)
        details: Obj = {"name": name, "kind": rt.plural, "uid": entry.obj["metadata"].get("uid")}
        if rt.group:
            details = {"name": name, "group": rt.group, "kind": rt.plural, "uid": details["uid"]}
        return json_response(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            }
        )

    async def _delete_collection(
        self, request: web.Request, rt: ResourceType, ns: str | None
    ) -> web.Response:
        await self._delete_options(request)
        ls, fs = self._selectors(request, rt)
        victims = [
            e for e in self.store.iter_entries(rt.storage_key, ns) if self._matches(e.obj, ls, fs)
        ]
        deleted: list[str] = []
        srt = self._storage_rt(rt)
        for e in victims:
            m = e.obj["metadata"]
            ent, _ = self.store.delete_entry(srt, m.get("namespace", ""), m["name"])
            deleted.append(self.served_raw(rt, ent))
        head = dumps(
            {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.group_version,
                "metadata": {"resourceVersion": str(self.store.rv)},
            }
        )
        return json_response(f'{head[:-1]},"items":[{",".join(deleted)}]}}')

    # ---- scale subresource ----------------------------------------------------------------

    def _scale_of(self, rt: ResourceType, obj: Obj) -> Obj:
        paths = rt.scale
        assert paths is not None
        meta = obj.get("metadata", {})
        spec_r = _get_path(obj, paths.spec_replicas)
        status_r = _get_path(obj, paths.status_replicas)
        scale: Obj = {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": int(spec_r or 0)} if not rt.custom or spec_r is not None else {},
            "status": {"replicas": int(status_r or 0)},
        }
        if rt.custom:
            if paths.label_selector:
                sel = _get_path(obj, paths.label_selector)
                if isinstance(sel, str) and sel:
                    scale["status"]["selector"] = sel
        else:
            sel_s = _selector_string(rt, obj)
            if sel_s is not None:
                scale["status"]["selector"] = sel_s
        return scale

    def _write_scale(
        self, rt: ResourceType, ns: str, name: str, body: Any, check_rv: bool
    ) -> web.Response:
        entry = self.store.get_entry(rt.storage_key, ns, name)
        if entry is None:
            raise errors.not_found(rt.group, rt.plural, name)
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a Scale object")
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        replicas = (body.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise errors.bad_request("spec.replicas must be an integer")
        if replicas < 0:
            raise errors.invalid(
                "Scale",
                "autoscaling",
                name,
                [
                    (
                        "spec.replicas",
                        "FieldValueInvalid",
                        f"Invalid value: {replicas}: must be greater than or equal to 0",
                    )
                ],
            )
        rv = meta.get("resourceVersion")
        if check_rv and rv not in (None, "") and str(rv) != str(entry.rv):
            raise errors.conflict(rt.group, rt.plural, name)
        obj = copy.deepcopy(entry.obj)
        assert rt.scale is not None
        _set_path(obj, rt.scale.spec_replicas, replicas)
        srt = self._storage_rt(rt)
        new = self.store.update_entry(srt, ns, name, obj, check_rv=False, keep_status=True)
        return json_response(self._scale_of(rt, new.obj))

    # ---- CRDs -------------------------------------------------------------------------------

    def _crd_hook(self, ev: WatchEvent) -> None:
        if ev.key != ("apiextensions.k8s.io", "customresourcedefinitions"):
            return
        if ev.prev is not None:
            old = ev.prev.obj.get("spec") or {}
            names = old.get("names") or {}
            self.registry.remove_group_resource(
                str(old.get("group", "")), str(names.get("plural", ""))
            )
        if ev.type != "DELETED":
            for rt in crd_resource_types(ev.entry.obj):
                self.registry.add(rt)

    def _drop_custom_resources(self, crd: Obj) -> None:
        """Delete the custom resources of a CRD (while its resource is still registered)."""
        spec = crd.get("spec") or {}
        key = (str(spec.get("group", "")), str((spec.get("names") or {}).get("plural", "")))
        rt = self.registry.storage_type(*key)
        if rt is None:
            return
        for e in list(self.store.iter_entries(key, None)):
            m = e.obj["metadata"]
            self.store.delete(rt.group, rt.plural, m.get("namespace", ""), m["name"])


def _impersonated_groups(user: str, groups: list[str]) -> list[str]:
    """Groups of an impersonated user (ServiceAccounts get theirs, everyone
    system:authenticated), as the impersonation filter adds them."""
    out = list(groups)
    if not out and user.startswith("system:serviceaccount:"):
        ns = user.split(":")[2]
        out = ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
    if "system:authenticated" not in out and user != "system:anonymous":
        out.append("system:authenticated")
    return out


def call_bool_hook(obj: Any, method: str, path: str) -> bool:
    fn = getattr(obj, method, None)
    return bool(fn(path)) if fn is not None else False


def _entry_key(e: Entry) -> tuple[str, str]:
    m = e.obj["metadata"]
    return (m.get("namespace", ""), m["name"])


def _apply_patch(ctype: str, doc: Any, body: Any) -> Any:
    kind = str(doc.get("kind", "")) if isinstance(doc, dict) else ""
    if ctype == PATCH_TYPES[0]:
        return patch.json_patch(doc, body)
    if ctype == PATCH_TYPES[1]:
        return patch.merge_patch(doc, body)
    if ctype == PATCH_TYPES[2]:
        return patch.strategic_merge_patch(doc, body, patch.merge_keys_for(kind))
    # Server-side apply, approximated: the applied configuration is merged like a
    # strategic merge patch (no managedFields, no field ownership conflicts).
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("status",)}
    return patch.strategic_merge_patch(doc, body, patch.merge_keys_for(kind))


def _get_path(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.strip().lstrip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.strip().lstrip(".").split(".")
    cur = obj
    for p in parts[:-1]:
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            nxt = cur[p] = {}
        cur = nxt
    cur[parts[-1]] = value


def _selector_string(rt: ResourceType, obj: Obj) -> str | None:
    sel = (obj.get("spec") or {}).get("selector")
    if rt.kind == "ReplicationController":
        if not isinstance(sel, dict):
            return ""
        return ",".join(f"{k}={v}" for k, v in sorted(sel.items()))
    if sel is None:
        return ""
    try:
        return str(selector_from_label_selector(sel))
    except ValueError:
        return ""
