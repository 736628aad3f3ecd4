"""One API client per process, rate-limited and timed out like client-go's rest client.

Public API
----------
``KubeSession(*, kubeconfig=None, master=None, context=None, qps=20.0, burst=30,
request_timeout=30.0, connect_timeout=10.0, on_request=None, user_agent=None,
limiter=None)``
    Async context manager. ``async with KubeSession(master=emu.url) as s:`` builds a
    kubernetes_asyncio ``ApiClient`` inside the running loop and closes it on exit.
    Configuration follows client-go's ``BuildConfigFromFlags``: ``master`` overrides the
    kubeconfig's server; with neither given, in-cluster config is tried, then the
    default kubeconfig (``$KUBECONFIG`` / ``~/.kube/config``).

``await s.send(method, path, *, query=None, body=None, content_type=None,
timeout=None, verb=None) -> Response``
    One request; reads the whole body. Never raises for HTTP statuses (see
    ``hpactl.kube.requests`` for the JSON helpers that do); raises
    ``errors.TransportError`` / ``errors.RequestTimeout`` when no response arrives.

    A response of 429, or of 5xx with a ``Retry-After`` header, is sent again after
    that many seconds, at most ``max_retries`` (10) times, as client-go's rest client
    does for every verb; the last response is returned.

``s.write_fence``
    ``Callable[[], bool] | None``. When set, every mutating request (create, update,
    patch, delete) outside leader election and access reviews is checked against it
    just before it is sent (after the rate limiter's wait) and refused with
    ``errors.NotLeader`` when it returns False: a replica that cannot prove it holds
    the leader lease writes nothing (``hpactl run`` sets it to
    ``LeaderElector.holds_lease``).

``task_fence`` (a ``ContextVar``)
    A second fence for the current task, checked the same way: with ``--shards`` the
    sync of an HPA sets it to the lease of that HPA's shard (``fenced_by``), so a
    write for a shard this replica no longer holds is refused even while it still
    holds others.

``s.last_success`` / ``s.last_failure``
    Monotonic time of the last request that got an HTTP response, and
    ``(time, error)`` of the last one that got none; ``/readyz`` reads them.

``s.stream(path, *, query=None, read_timeout, verb="watch")``
    Async context manager yielding an open ``StreamResponse`` (status, headers,
    ``readline()``); each read waits at most ``read_timeout`` seconds.

``s.on_request``
    ``Callable[[verb, resource, code, seconds], None] | None``; called once per request
    after the response headers arrive (or the transport failed, code ``"<error>"``).
    ``verb`` is the Kubernetes verb (get, list, watch, create, update, patch, delete),
    ``resource`` the path's resource (``pods``, ``deployments.apps/scale``), ``code``
    the HTTP status as a string. Observability sets it; it must not raise.

``s.on_throttle``
    ``Callable[[verb, seconds], None] | None``; called with the time each request
    waited for its client-side rate limiter (client-go's
    ``rest_client_rate_limiter_duration_seconds``). It must not raise.

``TokenBucket(qps, burst, *, monotonic=time.monotonic, sleep=asyncio.sleep)``
    client-go's ``flowcontrol.NewTokenBucketRateLimiter``: ``await wait()`` blocks
    until a token is free; qps <= 0 disables limiting.

Rate limiting follows kube-controller-manager's clients, each of which has its own
client-side limiter at ``--kube-api-qps`` / ``--kube-api-burst``:

* ``s.limiter``, the HPA client (``hpaClient``): HPA status writes and Events (upstream's
  event broadcaster records through ``hpaClient.CoreV1()``), and any other single-object
  request;
* the scale client (``scale.NewForConfig``): every ``…/scale`` get and update;
* the shared informers' client (``shared-informers``): every list and watch;
* the discovery client (the REST mapper's): ``/api``, ``/apis`` and group-version
  documents;
* one per metrics API group (``metrics.k8s.io``, ``custom.metrics.k8s.io``,
  ``external.metrics.k8s.io``), the Lease client (leader election has its own
  client upstream, so sync traffic never starves a renew), and one each for the
  TokenReviews and SubjectAccessReviews of secure metrics serving.

``s.limiter_for(info, verb)`` returns the bucket a request uses.

Proxies: kubernetes_asyncio builds its aiohttp session with ``trust_env=True``, which
makes aiohttp look up netrc and the proxy variables in a worker thread on every
request (about 0.9 ms of CPU each). ``open`` replaces that session by one with
``trust_env=False`` on the same connector (same TLS context and pool), and resolves
``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``NO_PROXY`` for the API server's URL once, with
aiohttp's own rules except one of Go's: ``localhost`` and loopback addresses are never
proxied (net/http's ProxyFromEnvironment, which client-go uses); a proxy set in the
kubeconfig (``proxy-url``) wins. netrc is not consulted for the API server (client-go
does not read it either).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from hpactl import __version__
from hpactl.kube.errors import (
    CertificateError,
    ConnectFailed,
    KubeError,
    NotLeader,
    RequestTimeout,
    TransportError,
)
from hpactl.kube.paths import RequestInfo, parse_path

__all__ = [
    "JSON_CONTENT_TYPE",
    "KubeSession",
    "RequestHook",
    "Response",
    "StreamResponse",
    "ThrottleHook",
    "TokenBucket",
    "default_user_agent",
    "fenced_by",
    "task_fence",
]

JSON_CONTENT_TYPE = "application/json"

RequestHook = Callable[[str, str, str, float], None]
"""on_request(verb, resource, code, seconds)."""

ThrottleHook = Callable[[str, float], None]
"""on_throttle(verb, seconds waited for the rate limiter)."""

QueryParams = Mapping[str, str | int | bool] | Sequence[tuple[str, str]]


# Groups upstream reaches through a client of their own (own rate limiter).
_OWN_CLIENT_GROUPS = frozenset(
    {
        "metrics.k8s.io",
        "custom.metrics.k8s.io",
        "external.metrics.k8s.io",
        "coordination.k8s.io",
        # Delegated authentication / authorization of /metrics scrapes (their own
        # clients in kube-controller-manager): scrapes never starve HPA writes.
        "authentication.k8s.io",
        "authorization.k8s.io",
    }
)


# Writes that leader election itself and access reviews make: never fenced.
_UNFENCED_GROUPS = frozenset(
    {"coordination.k8s.io", "authentication.k8s.io", "authorization.k8s.io"}
)
_MUTATING_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})

#: client-go ``rest.Request`` maxRetries.
DEFAULT_MAX_RETRIES = 10


def _retry_after_seconds(status: int, headers: Mapping[str, str]) -> float | None:
    """client-go ``checkWait``: 429 or any 5xx, with an integer ``Retry-After``."""
    if status != 429 and status < 500:
        return None
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = int(value.strip())
    except ValueError:
        return None
    return float(max(0, seconds))


#: The write fence of the current task (see the module docstring), or None.
task_fence: ContextVar[Callable[[], bool] | None] = ContextVar("hpactl_task_fence", default=None)


@contextlib.contextmanager
def fenced_by(fence: Callable[[], bool] | None) -> Iterator[None]:
    """Fence every write of the enclosed code (and the tasks it starts) with ``fence``."""
    token = task_fence.set(fence)
    try:
        yield
    finally:
        task_fence.reset(token)


def default_user_agent() -> str:
    return f"hpactl/{__version__}"


class TokenBucket:
    """A token bucket like golang.org/x/time/rate as client-go uses it.

    ``wait()`` reserves a token (the balance may go negative) and sleeps until that
    reservation is due, so waiters are served in arrival order at exactly ``qps``.
    """

    __slots__ = ("_burst", "_last", "_monotonic", "_qps", "_sleep", "_tokens")

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._qps = float(qps)
        self._burst = max(1, int(burst))
        self._monotonic = monotonic
        self._sleep = sleep
        self._tokens = float(self._burst)
        self._last = monotonic()

    @property
    def qps(self) -> float:
        return self._qps

    @property
    def burst(self) -> int:
        return self._burst

    def sibling(self) -> TokenBucket:
        """A new, full bucket with the same rate and the same clock."""
        return TokenBucket(self._qps, self._burst, monotonic=self._monotonic, sleep=self._sleep)

    def reserve(self) -> float:
        """Take one token; return how many seconds the caller must wait for it."""
        if self._qps <= 0:
            return 0.0
        now = self._monotonic()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self._burst), self._tokens + elapsed * self._qps)
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self._qps

    async def wait(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)


@dataclass(frozen=True, slots=True)
class Response:
    """A complete HTTP response."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    method: str
    info: RequestInfo

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "")


class StreamResponse:
    """An open streaming response (watch). Lines are read with an inactivity bound."""

    __slots__ = ("_resp", "info", "method")

    def __init__(self, resp: aiohttp.ClientResponse, method: str, info: RequestInfo) -> None:
        self._resp = resp
        self.method = method
        self.info = info

    @property
    def status(self) -> int:
        return self._resp.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._resp.headers

    async def read(self) -> bytes:
        """The whole remaining body (for error responses)."""
        try:
            return await self._resp.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _transport_error(self.method, str(self._resp.url), exc) from exc

    async def readline(self) -> bytes:
        """Next line; b"" at end of stream. Raises RequestTimeout on read inactivity."""
        try:
            return await self._resp.content.readline()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _transport_error(self.method, str(self._resp.url), exc) from exc
        except ValueError as exc:  # aiohttp: "Line is too long"
            raise TransportError(f"watch stream {self._resp.url}: {exc}") from exc


def _transport_error(method: str, url: str, exc: BaseException) -> TransportError:
    # Go's url.Error reads `Get "https://host/path?query": <cause>`.
    op = method[:1].upper() + method[1:].lower()
    if isinstance(exc, TimeoutError | aiohttp.ServerTimeoutError):
        return RequestTimeout(f'{op} "{url}": context deadline exceeded')
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        reason = getattr(exc.certificate_error, "verify_message", "") or str(exc.certificate_error)
        return CertificateError(
            f'{op} "{url}": tls: failed to verify certificate: {reason}; give the '
            "certificate-authority or certificate-authority-data of the cluster in the "
            "kubeconfig"
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            cause = f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
        else:
            cause = str(exc) or type(exc).__name__
        return ConnectFailed(f'{op} "{url}": {cause}')
    return TransportError(f'{op} "{url}": {str(exc) or type(exc).__name__}')


def _drop_trust_env(api: Any) -> None:
    """Swap the rest client's ``trust_env=True`` session for one without (module doc)."""
    rest = api.rest_client
    old: aiohttp.ClientSession = rest.pool_manager
    connector = old.connector
    old.detach()  # the connector (TLS context, pool) moves to the new session
    rest.pool_manager = aiohttp.ClientSession(
        connector=connector,
        trust_env=False,
        read_bufsize=2**21,  # as kubernetes_asyncio: large watch events
    )
    if rest.proxy:
        return  # kubeconfig proxy-url
    url = URL(api.configuration.host)
    if _is_loopback(url.host):
        return
    try:
        proxy, auth = get_env_proxy_for_url(url)
    except LookupError:
        return
    rest.proxy = str(proxy)
    if auth is not None:
        rest.proxy_headers = {**(rest.proxy_headers or {}), "Proxy-Authorization": auth.encode()}


def _is_loopback(host: str | None) -> bool:
    """Go never sends ``localhost`` or a loopback address through the environment's
    proxy, whatever ``NO_PROXY`` says (golang.org/x/net/http/httpproxy)."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _with_query(url: str, query: list[tuple[str, str]]) -> str:
    return f"{url}?{urlencode(query)}" if query else url


def _kube_verb(method: str, info: RequestInfo, query: QueryParams | None) -> str:
    m = method.upper()
    if m == "GET":
        watching = False
        if query is not None:
            items = query.items() if isinstance(query, Mapping) else query
            watching = any(k == "watch" and str(v).lower() in ("1", "t", "true") for k, v in items)
        if watching:
            return "watch"
        return "get" if info.name else "list"
    return {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete",
    }.get(m, m.lower())


def _query_list(query: QueryParams | None) -> list[tuple[str, str]]:
    if query is None:
        return []
    items = query.items() if isinstance(query, Mapping) else query
    out: list[tuple[str, str]] = []
    for k, v in items:
        if isinstance(v, bool):
            out.append((k, "true" if v else "false"))
        else:
            out.append((k, str(v)))
    return out


class KubeSession:
    """See the module docstring."""

    def __init__(
        self,
        *,
        kubeconfig: str | None = None,
        master: str | None = None,
        context: str | None = None,
        qps: float = 20.0,
        burst: int = 30,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        on_request: RequestHook | None = None,
        user_agent: str | None = None,
        limiter: TokenBucket | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._kubeconfig = kubeconfig
        self._master = master
        self._context = context
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.on_request = on_request
        self.on_throttle: ThrottleHook | None = None
        self.user_agent = user_agent or default_user_agent()
        self.limiter = limiter if limiter is not None else TokenBucket(qps, burst)
        self._side_limiters: dict[str, TokenBucket] = {}
        self._api: Any = None
        self.max_retries = max_retries
        self._sleep = sleep
        self.write_fence: Callable[[], bool] | None = None
        self.last_success: float | None = None
        self.last_failure: tuple[float, str] | None = None

    # -- lifecycle -------------------------------------------------------------
    async def __aenter__(self) -> KubeSession:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        # Imported lazily: the client package is heavy (~0.8 s) and only the shell needs it.
        from kubernetes_asyncio.client import ApiClient, Configuration
        from kubernetes_asyncio.config import load_incluster_config, load_kube_config

        cfg = Configuration()
        if self._kubeconfig:
            await load_kube_config(
                config_file=self._kubeconfig,
                context=self._context,
                client_configuration=cfg,
                persist_config=False,
            )
        elif not self._master:
            if os.environ.get("KUBERNETES_SERVICE_HOST"):
                load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            else:
                await load_kube_config(
                    context=self._context, client_configuration=cfg, persist_config=False
                )
        if self._master:
            cfg.host = self._master.rstrip("/")
        api = ApiClient(configuration=cfg)
        api.user_agent = self.user_agent
        _drop_trust_env(api)
        self._api = api

    async def close(self) -> None:
        if self._api is not None:
            api, self._api = self._api, None
            await api.close()

    @property
    def host(self) -> str:
        return str(self._require().configuration.host)

    @property
    def api_client(self) -> Any:
        """The underlying kubernetes_asyncio ApiClient (for the rare typed call)."""
        return self._require()

    def _require(self) -> Any:
        if self._api is None:
            raise RuntimeError("KubeSession is not open (use `async with KubeSession(...)`)")
        return self._api

    # -- requests --------------------------------------------------------------
    def raise_client_limit(self, group: str, qps: float, burst: int) -> None:
        """Let ``group``'s own client (e.g. coordination.k8s.io) send at least ``qps``.

        Leader election needs its renewals on time whatever the controller does;
        with ``--shards`` one replica may renew dozens of Leases per retry period.
        """
        if group not in _OWN_CLIENT_GROUPS:
            raise ValueError(f"{group} has no client of its own")
        current = self._side_limiters.get(group) or self.limiter.sibling()
        if current._qps <= 0 or current._qps >= qps:
            self._side_limiters[group] = current
            return
        self._side_limiters[group] = TokenBucket(
            qps, max(burst, current._burst), monotonic=current._monotonic, sleep=current._sleep
        )

    def limiter_for(self, info: RequestInfo, verb: str = "") -> TokenBucket:
        """The bucket of the client upstream would use for this request (module doc)."""
        if info.group in _OWN_CLIENT_GROUPS:
            client = info.group
        elif info.subresource == "scale":
            client = "scale"
        elif not info.resource:
            client = "discovery"
        elif verb in ("list", "watch"):
            client = "shared-informers"
        else:
            return self.limiter
        bucket = self._side_limiters.get(client)
        if bucket is None:
            bucket = self.limiter.sibling()
            self._side_limiters[client] = bucket
        return bucket

    async def _headers(self, query: list[tuple[str, str]], content_type: str) -> dict[str, str]:
        api = self._require()
        headers: dict[str, str] = dict(api.default_headers)
        headers["Accept"] = JSON_CONTENT_TYPE
        headers["Content-Type"] = content_type
        await api.update_params_for_auth(headers, query, ["BearerToken"])
        return headers

    def _report(self, verb: str, info: RequestInfo, code: str, started: float) -> None:
        hook = self.on_request
        if hook is None:
            return
        with contextlib.suppress(Exception):  # observability must never break a request
            hook(verb, info.metric_resource, code, time.monotonic() - started)

    async def _throttle(self, info: RequestInfo, verb: str) -> None:
        hook = self.on_throttle
        if hook is None:
            await self.limiter_for(info, verb).wait()
            return
        started = time.monotonic()
        await self.limiter_for(info, verb).wait()
        with contextlib.suppress(Exception):  # observability must never break a request
            hook(verb, time.monotonic() - started)

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: QueryParams | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
        verb: str | None = None,
    ) -> Response:
        api = self._require()
        info = parse_path(path)
        qlist = _query_list(query)
        kverb = verb or _kube_verb(method, info, qlist)
        fenced = kverb in _MUTATING_VERBS and info.group not in _UNFENCED_GROUPS
        headers = await self._headers(qlist, content_type or JSON_CONTENT_TYPE)
        total = self.request_timeout if timeout is None else timeout
        ctimeout = aiohttp.ClientTimeout(total=total, connect=min(self.connect_timeout, total))
        url = api.configuration.host + path
        retries = 0
        while True:
            await self._throttle(info, kverb)
            fence = self.write_fence
            if fenced and fence is not None and not fence():
                raise NotLeader(
                    f"not sending {method.upper()} {path}: "
                    "this replica does not hold the leader lease"
                )
            own = task_fence.get()
            if fenced and own is not None and not own():
                raise NotLeader(
                    f"not sending {method.upper()} {path}: "
                    "this replica does not hold the lease of that object's shard"
                )
            resp = await self._exchange(
                api, method, url, qlist, headers, body, ctimeout, total, kverb, info
            )
            wait = _retry_after_seconds(resp.status, resp.headers)
            if wait is None or retries >= self.max_retries:
                return resp
            retries += 1
            await self._sleep(wait)

    async def _exchange(
        self,
        api: Any,
        method: str,
        url: str,
        qlist: list[tuple[str, str]],
        headers: dict[str, str],
        body: Any,
        ctimeout: aiohttp.ClientTimeout,
        total: float,
        kverb: str,
        info: RequestInfo,
    ) -> Response:
        started = time.monotonic()
        reported = False
        try:
            # The whole exchange (headers and body) is bounded by `total`.
            async with asyncio.timeout(total):
                resp = await api.rest_client.request(
                    method.upper(),
                    url,
                    query_params=qlist,
                    headers=headers,
                    body=body,
                    _preload_content=False,
                    _request_timeout=ctimeout,
                )
                self._report(kverb, info, str(resp.status), started)
                reported = True
                try:
                    data = await resp.read()
                finally:
                    resp.release()
        except (TimeoutError, aiohttp.ClientError) as exc:
            if not reported:
                self._report(kverb, info, "<error>", started)
            err = _transport_error(method, _with_query(url, qlist), exc)
            self.last_failure = (time.monotonic(), str(err))
            raise err from exc
        self.last_success = time.monotonic()
        return Response(
            status=resp.status,
            headers=resp.headers.copy(),
            body=data,
            method=method.upper(),
            info=info,
        )

    @contextlib.asynccontextmanager
    async def stream(
        self,
        path: str,
        *,
        query: QueryParams | None = None,
        read_timeout: float,
        verb: str = "watch",
    ) -> AsyncIterator[StreamResponse]:
        api = self._require()
        info = parse_path(path)
        qlist = _query_list(query)
        headers = await self._headers(qlist, JSON_CONTENT_TYPE)
        ctimeout = aiohttp.ClientTimeout(
            total=None,
            connect=self.connect_timeout,
            sock_connect=self.connect_timeout,
            sock_read=read_timeout,
        )
        url = api.configuration.host + path
        await self._throttle(info, verb)
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.connect_timeout + read_timeout):
                resp = await api.rest_client.request(
                    "GET",
                    url,
                    query_params=qlist,
                    headers=headers,
                    _preload_content=False,
                    _request_timeout=ctimeout,
                )
        except (TimeoutError, aiohttp.ClientError) as exc:
            self._report(verb, info, "<error>", started)
            raise _transport_error("GET", _with_query(url, qlist), exc) from exc
        self._report(verb, info, str(resp.status), started)
        try:
            yield StreamResponse(resp, "GET", info)
        finally:
            resp.close()


async def check_server_certificate(
    *,
    kubeconfig: str | None,
    master: str | None,
    context: str | None = None,
    timeout: float = 5.0,
) -> None:
    """One GET /version: raise CertificateError when the server's certificate does not
    verify (a kubeconfig without the cluster's CA). Any other failure (a server not up
    yet, a 401) is left to the caller's own requests and their retries."""
    session = KubeSession(
        kubeconfig=kubeconfig, master=master, context=context, request_timeout=timeout
    )
    await session.open()
    try:
        await session.send("GET", "/version", timeout=timeout)
    except CertificateError:
        raise
    except (KubeError, OSError, ValueError):
        return
    finally:
        await session.close()
