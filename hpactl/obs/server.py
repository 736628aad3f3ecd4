"""The health and metrics HTTP servers.

As controller-runtime does, metrics (``/metrics``) and probes (``/healthz``,
``/livez``, ``/readyz``) listen on separate addresses, so a NetworkPolicy can expose
one without the other; an address of ``0`` turns that server off.

Probes answer as Kubernetes components do:

* ``/healthz`` (and ``/livez``): liveness. ``ok`` whenever the process's event loop
  answers; nothing else is checked, so a kubelet restarts the container only when
  the process is wedged.
* ``/readyz``: every named check of :class:`Readiness`. All passing: 200 ``ok``
  (``?verbose`` lists them, ``[+]name ok``). Any failing: 500 and the full list,
  ``[-]name failed: reason``, ending ``readyz check failed``. ``?exclude=name``
  skips a check; ``/readyz/<name>`` runs one (200 ``ok`` or 500
  ``internal server error: reason``).

Secure metrics (:class:`SecureServing`), as kube-controller-manager's secure port and
controller-runtime's ``filters.WithAuthenticationAndAuthorization``: the metrics
address speaks HTTPS; a request needs a bearer token (401 without), which the
``authorize`` callable reviews (in ``hpactl run``: TokenReview and
SubjectAccessReview at the API server), answering 401, 403, 500 or letting it
through. Paths in ``always_allow_paths`` (``/healthz``, ``/readyz``, ``/livez`` by
default, also served there) need no token. This module stays a leaf: the callable
comes from the caller.

Debug endpoints (:class:`DebugEndpoints`, ``hpactl run --enable-debug-endpoints``):
``GET /debug/hpa/{namespace}/{name}`` answers the HPA's decision records as JSON
(404 with a JSON error for an HPA without records) and ``GET /debug/hpa`` lists the
HPAs that have some. They are served on the metrics address, behind the same
authentication and authorization as ``/metrics`` (the reviewed path is the request
path, verb ``get``); without ``debug`` the routes do not exist.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web
from aiohttp.typedefs import Handler

from hpactl.obs.metrics import CONTENT_TYPE, ControllerMetrics
from hpactl.obs.tls import ServingCertificate

__all__ = [
    "DEFAULT_ALWAYS_ALLOW_PATHS",
    "AccessDecision",
    "Check",
    "DebugEndpoints",
    "ObservabilityServer",
    "Readiness",
    "RequestAuthorizer",
    "SecureServing",
    "parse_bind_address",
]

log = logging.getLogger(__name__)

DEFAULT_ALWAYS_ALLOW_PATHS: tuple[str, ...] = ("/healthz", "/readyz", "/livez")

Check = Callable[[], tuple[bool, str]]
"""A readiness check: (passing, reason when failing)."""


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``:8080`` → (``0.0.0.0``, 8080); ``127.0.0.1:0`` → ephemeral; ``0`` → disabled."""
    if address.strip() == "0":
        return None
    host, sep, port = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must be host:port")
    host = host.strip("[]") or "0.0.0.0"
    try:
        port_no = int(port)
    except ValueError:
        raise ValueError(f"bind address {address!r} has an invalid port") from None
    if not 0 <= port_no <= 65535:
        raise ValueError(f"bind address {address!r} has an invalid port")
    return host, port_no


# --------------------------------------------------------------------------- readiness

# What a leader-election state that is not ready means (any state but leader/standby).
_LEADER_STATES = {
    "starting": "no leader observed yet",
    "lost": "the lease was lost; standing by once the caches are relisted",
    "resyncing": "leading again once the caches are relisted",
}


@dataclass
class Readiness:
    """What ``/readyz`` checks. Each check is named as ``/readyz?verbose`` lists it:

    * ``api-server``: the API server answered the latest request (``api_server``);
    * ``informer-caches``: every cache has synced once (``caches_synced``);
    * ``informers``: every watch is connected, or reconnected within its bound
      (``informers``);
    * ``leader-election``: leading or standing by (``leader_state`` is "leader" or
      "standby"; "starting", "lost", "resyncing", anything else is not ready);
    * ``shards`` (``--shards`` > 1): the shard manager runs; ``?verbose`` says which
      shards this replica holds (``[+]shards ok: holding 0,3 of 8``).

    ``api_server``, ``informers`` and ``shards`` are optional (no check when None).
    """

    caches_synced: Callable[[], bool]
    leader_state: Callable[[], str]
    api_server: Check | None = None
    informers: Check | None = None
    shards: Check | None = None

    def checks(self) -> list[tuple[str, Check]]:
        out: list[tuple[str, Check]] = []
        if self.api_server is not None:
            out.append(("api-server", self.api_server))
        out.append(("informer-caches", self._caches))
        if self.informers is not None:
            out.append(("informers", self.informers))
        out.append(("leader-election", self._leader))
        if self.shards is not None:
            out.append(("shards", self.shards))
        return out

    def _caches(self) -> tuple[bool, str]:
        return (True, "") if self.caches_synced() else (False, "not synced")

    def _leader(self) -> tuple[bool, str]:
        state = self.leader_state()
        if state in ("leader", "standby"):
            return True, ""
        return False, f"{state}: {_LEADER_STATES.get(state, 'not leader or standby')}"


def _run_check(check: Check) -> tuple[bool, str]:
    """A check's outcome; one that raises fails with its error (the probe answers)."""
    try:
        ok, reason = check()
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    text = " ".join(str(reason).split())
    return bool(ok), text if ok else (text or "failed")


# --------------------------------------------------------------------------- secure serving


class AccessDecision(Protocol):
    """What the authorizer decides: ``status`` 200 lets the request through; any other
    status is answered with ``message`` (one line)."""

    @property
    def status(self) -> int: ...

    @property
    def message(self) -> str: ...


RequestAuthorizer = Callable[[str, str, str], Awaitable[AccessDecision]]
"""``await authorize(bearer_token, verb, path)``."""


@dataclass(frozen=True)
class SecureServing:
    """HTTPS with delegated authentication and authorization for the metrics server."""

    authorize: RequestAuthorizer
    certificate: ServingCertificate
    always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS

    def always_allowed(self, path: str) -> bool:
        """Exact paths, or prefixes ending in ``*`` (as the apiserver's path authorizer)."""
        for allowed in self.always_allow_paths:
            if allowed == path or (allowed.endswith("*") and path.startswith(allowed[:-1])):
                return True
        return False


@dataclass(frozen=True)
class DebugEndpoints:
    """What the debug endpoints serve: ``records(namespace, name)`` gives an HPA's
    records document (None: no records) and ``keys()`` the HPAs that have some."""

    records: Callable[[str, str], Mapping[str, Any] | None]
    keys: Callable[[], Sequence[str]]
    # Plain-text pages by path (component-base's /statusz and /flagz).
    pages: Mapping[str, Callable[[], str]] = field(default_factory=dict)


def _text(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", content_type="text/plain")


def _page(render: Callable[[], str]) -> Handler:
    async def handler(_request: web.Request) -> web.StreamResponse:
        return web.Response(text=render(), content_type="text/plain")

    return handler


# --------------------------------------------------------------------------- the server


class ObservabilityServer:
    def __init__(
        self,
        metrics: ControllerMetrics,
        readiness: Readiness,
        metrics_address: str = ":8080",
        health_address: str = ":8081",
        *,
        secure: SecureServing | None = None,
        debug: DebugEndpoints | None = None,
    ) -> None:
        self._metrics = metrics
        self._readiness = readiness
        self._secure = secure
        self._debug = debug
        self._addresses = {
            "metrics": parse_bind_address(metrics_address),
            "health": parse_bind_address(health_address),
        }
        self._runners: list[web.AppRunner] = []
        self.ports: dict[str, int] = {}

    @property
    def metrics_scheme(self) -> str:
        return "https" if self._secure is not None else "http"

    # ------------------------------------------------------------------ handlers

    async def _metrics_handler(self, _request: web.Request) -> web.Response:
        body = self._metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def _debug_hpa(self, request: web.Request) -> web.Response:
        assert self._debug is not None
        ns, name = request.match_info["namespace"], request.match_info["name"]
        doc = self._debug.records(ns, name)
        if doc is None:
            return web.json_response(
                {"hpa": f"{ns}/{name}", "error": f"no decision records for {ns}/{name}"},
                status=404,
            )
        return web.json_response(dict(doc))

    async def _debug_hpas(self, _request: web.Request) -> web.Response:
        assert self._debug is not None
        return web.json_response({"hpas": sorted(self._debug.keys())})

    async def _healthz(self, request: web.Request) -> web.Response:
        # Liveness: answering at all is the check.
        if "verbose" in request.query:
            name = request.path.strip("/").split("/")[0]
            return _text(200, f"[+]ping ok\n{name} check passed")
        return _text(200, "ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        excluded = {
            name.strip()
            for value in request.query.getall("exclude", [])
            for name in value.split(",")
            if name.strip()
        }
        checks = self._readiness.checks()
        lines: list[str] = []
        failed = False
        for name, check in checks:
            if name in excluded:
                lines.append(f"[+]{name} excluded: ok")
                continue
            ok, reason = _run_check(check)
            failed = failed or not ok
            if ok:
                # A passing check may say what it found (the shards held).
                lines.append(f"[+]{name} ok: {reason}" if reason else f"[+]{name} ok")
            else:
                lines.append(f"[-]{name} failed: {reason}")
        unknown = sorted(excluded - {name for name, _ in checks})
        if unknown:
            listed = ", ".join(f'"{n}"' for n in unknown)
            lines.append(f"warn: some health checks cannot be excluded: no matches for {listed}")
        if not failed and "verbose" not in request.query:
            return _text(200, "ok")
        lines.append("readyz check failed" if failed else "readyz check passed")
        return _text(500 if failed else 200, "\n".join(lines))

    async def _readyz_one(self, request: web.Request) -> web.Response:
        wanted = request.match_info["name"]
        for name, check in self._readiness.checks():
            if name == wanted:
                ok, reason = _run_check(check)
                return _text(200, "ok") if ok else _text(500, f"internal server error: {reason}")
        return _text(404, "404 page not found")

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        secure = self._secure
        assert secure is not None
        if secure.always_allowed(request.path):
            return await handler(request)
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return _text(401, "Unauthorized")
        verb = "get" if request.method in ("GET", "HEAD") else request.method.lower()
        try:
            decision = await secure.authorize(token, verb, request.path)
        except Exception as exc:  # the authorizer's own failure: an answer, not a traceback
            log.warning("metrics authorization failed: %s: %s", type(exc).__name__, exc)
            return _text(500, f"Internal Server Error: {type(exc).__name__}: {exc}")
        if decision.status != 200:
            return _text(decision.status, " ".join(decision.message.split()) or "Forbidden")
        return await handler(request)

    # ------------------------------------------------------------------ lifecycle

    def _add_probes(self, app: web.Application) -> None:
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/readyz/{name}", self._readyz_one)

    async def start(self) -> None:
        apps: dict[str, web.Application] = {}
        if self._secure is not None:
            metrics_app = web.Application(middlewares=[self._authenticate])
            self._add_probes(metrics_app)
        else:
            metrics_app = web.Application()
        metrics_app.router.add_get("/metrics", self._metrics_handler)
        if self._debug is not None:
            metrics_app.router.add_get("/debug/hpa", self._debug_hpas)
            metrics_app.router.add_get("/debug/hpa/{namespace}/{name}", self._debug_hpa)
            for path, render in self._debug.pages.items():
                metrics_app.router.add_get(path, _page(render))
        health_app = web.Application()
        self._add_probes(health_app)
        apps["metrics"], apps["health"] = metrics_app, health_app
        for name, app in apps.items():
            address = self._addresses[name]
            if address is None:
                continue
            ssl_context = None
            if name == "metrics" and self._secure is not None:
                ssl_context = self._secure.certificate.ssl_context()
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            self._runners.append(runner)
            site = web.TCPSite(runner, address[0], address[1], ssl_context=ssl_context)
            await site.start()
            # The bound port (port 0 asks the kernel for one), via the public API.
            bound = runner.addresses
            self.ports[name] = int(bound[0][1]) if bound else address[1]

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
