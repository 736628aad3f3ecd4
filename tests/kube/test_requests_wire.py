"""Wire behaviour of session + requests against a scripted loopback server."""

from __future__ import annotations

import json

import pytest
from aiohttp import web

from hpactl import __version__
from hpactl.kube import errors
from hpactl.kube.paths import parse_path
from hpactl.kube.requests import (
    create_json,
    get_json,
    list_json,
    patch_json,
    watch_stream,
)
from hpactl.kube.session import KubeSession, TokenBucket

from .fakeserver import fake_server

PODS = "/api/v1/namespaces/ns/pods"
PM = "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"


async def test_get_sends_user_agent_and_reports_request() -> None:
    calls: list[tuple[str, str, str]] = []
    async with fake_server() as srv:
        srv.json("GET", PODS + "/p1", {"kind": "Pod", "metadata": {"name": "p1"}})
        async with KubeSession(
            master=srv.url, on_request=lambda v, r, c, s: calls.append((v, r, c))
        ) as s:
            obj = await get_json(s, PODS + "/p1")
    assert obj["metadata"]["name"] == "p1"
    assert srv.requests[0].headers["User-Agent"] == f"hpactl/{__version__}"
    assert calls == [("get", "pods", "200")]


async def test_status_body_message_is_kept_verbatim() -> None:
    async with fake_server() as srv:
        srv.json(
            "GET",
            "/apis/apps/v1/namespaces/ns/deployments/web/scale",
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": 'deployments.apps "web" not found',
                "reason": "NotFound",
                "code": 404,
            },
            status=404,
        )
        async with KubeSession(master=srv.url) as s:
            with pytest.raises(errors.NotFound) as ei:
                await get_json(s, "/apis/apps/v1/namespaces/ns/deployments/web/scale")
    assert str(ei.value) == 'deployments.apps "web" not found'
    assert ei.value.code == 404


async def test_text_503_reads_like_client_go() -> None:
    async def h(_: web.Request) -> web.StreamResponse:
        return web.Response(status=503, text="service unavailable\n")

    async with fake_server() as srv:
        srv.route("GET", PM, h)
        async with KubeSession(master=srv.url) as s:
            with pytest.raises(errors.ServiceUnavailable) as ei:
                await list_json(s, PM, label_selector="app=web")
    assert ei.value.message == (
        "the server is currently unable to handle the request (get pods.metrics.k8s.io)"
    )


async def test_generic_500_and_conflict_on_post() -> None:
    async def boom(_: web.Request) -> web.StreamResponse:
        return web.Response(status=500, text="boom")

    async def clash(_: web.Request) -> web.StreamResponse:
        return web.Response(status=409, body=b"{}", content_type="application/json")

    async with fake_server() as srv:
        srv.route("GET", PODS + "/x", boom)
        srv.route("POST", PODS, clash)
        async with KubeSession(master=srv.url) as s:
            with pytest.raises(errors.InternalError) as e1:
                await get_json(s, PODS + "/x")
            with pytest.raises(errors.AlreadyExists) as e2:
                await create_json(s, PODS, {"metadata": {"name": "x"}})
    assert e1.value.message == (
        'an error on the server ("boom") has prevented the request from succeeding (get pods x)'
    )
    assert e2.value.message == "the server reported a conflict (post pods)"
    assert not isinstance(e2.value, errors.Conflict)


async def test_list_pages_with_continue() -> None:
    async def pager(req: web.Request) -> web.StreamResponse:
        cont = req.query.get("continue", "")
        n = int(cont or 0)
        items = [{"metadata": {"name": f"p{n}"}}]
        meta = {"resourceVersion": "42"}
        if n < 2:
            meta["continue"] = str(n + 1)
        return web.json_response({"kind": "PodList", "metadata": meta, "items": items})

    async with fake_server() as srv:
        srv.route("GET", PODS, pager)
        async with KubeSession(master=srv.url) as s:
            res = await list_json(s, PODS, limit=1, resource_version="0")
    assert [i["metadata"]["name"] for i in res.items] == ["p0", "p1", "p2"]
    assert res.resource_version == "42"
    assert [r.query.get("limit") for r in srv.requests] == ["1", "1", "1"]
    # resourceVersion only on the first page
    assert [r.query.get("resourceVersion") for r in srv.requests] == ["0", None, None]


async def test_list_falls_back_to_full_list_when_token_expires() -> None:
    async def pager(req: web.Request) -> web.StreamResponse:
        if req.query.get("continue"):
            return web.json_response(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "Expired",
                    "code": 410,
                    "message": "The provided continue parameter is too old",
                },
                status=410,
            )
        if "limit" in req.query:
            return web.json_response(
                {"metadata": {"continue": "t", "resourceVersion": "5"}, "items": [{"n": 1}]}
            )
        return web.json_response(
            {"metadata": {"resourceVersion": "6"}, "items": [{"n": 1}, {"n": 2}]}
        )

    async with fake_server() as srv:
        srv.route("GET", PODS, pager)
        async with KubeSession(master=srv.url) as s:
            res = await list_json(s, PODS, limit=1)
    assert res.items == [{"n": 1}, {"n": 2}]
    assert res.resource_version == "6"


@pytest.mark.parametrize(
    ("ptype", "ctype"),
    [
        ("merge", "application/merge-patch+json"),
        ("strategic", "application/strategic-merge-patch+json"),
        ("json", "application/json-patch+json"),
    ],
)
async def test_patch_content_types(ptype: str, ctype: str) -> None:
    async def echo(req: web.Request) -> web.StreamResponse:
        return web.json_response({"ct": req.headers["Content-Type"]})

    async with fake_server() as srv:
        srv.route("PATCH", PODS + "/p", echo)
        async with KubeSession(master=srv.url) as s:
            out = await patch_json(
                s, PODS + "/p", [{"op": "add"}] if ptype == "json" else {"a": 1}, patch_type=ptype
            )
    assert out["ct"] == ctype


async def test_request_timeout_raises() -> None:
    async def hang(_: web.Request) -> web.StreamResponse:
        await srv.release.wait()
        return web.json_response({})

    codes: list[str] = []
    async with fake_server() as srv:
        srv.route("GET", PODS + "/slow", hang)
        async with KubeSession(master=srv.url, on_request=lambda v, r, c, s: codes.append(c)) as s:
            with pytest.raises(errors.RequestTimeout) as ei:
                await get_json(s, PODS + "/slow", timeout=0.2)
    assert ei.value.message.startswith('Get "http://127.0.0.1:')
    assert codes == ["<error>"]


async def test_watch_stream_yields_events_and_raises_gone() -> None:
    async def w(req: web.Request) -> web.StreamResponse:
        assert req.query["watch"] == "true"
        assert req.query["allowWatchBookmarks"] == "true"
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(req)
        for ev in (
            {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "2"}}},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "3"}}},
            {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "status": "Failure",
                    "code": 410,
                    "reason": "Expired",
                    "message": "too old resource version: 1 (3)",
                },
            },
        ):
            await resp.write(json.dumps(ev).encode() + b"\n")
        await resp.write_eof()
        return resp

    seen: list[str] = []
    async with fake_server() as srv:
        srv.route("GET", PODS, w)
        async with KubeSession(master=srv.url) as s:
            with pytest.raises(errors.Gone) as ei:
                async for ev in watch_stream(s, PODS, resource_version="1"):
                    seen.append(ev["type"])
    assert seen == ["ADDED", "BOOKMARK"]
    assert ei.value.message == "too old resource version: 1 (3)"


async def test_watch_read_inactivity_times_out() -> None:
    async def w(req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(req)
        await resp.write(b'{"type":"ADDED","object":{}}\n')
        await srv.release.wait()
        return resp

    async with fake_server() as srv:
        srv.route("GET", PODS, w)
        async with KubeSession(master=srv.url) as s:
            got = []
            with pytest.raises(errors.RequestTimeout):
                async for ev in watch_stream(s, PODS, read_timeout=0.3):
                    got.append(ev)
    assert len(got) == 1


async def test_every_request_waits_for_a_token_and_leases_have_their_own_bucket() -> None:
    waits: list[float] = []

    async def fake_sleep(s: float) -> None:
        waits.append(s)

    bucket = TokenBucket(1.0, 1, monotonic=lambda: 0.0, sleep=fake_sleep)
    async with fake_server() as srv:
        srv.json("GET", PODS + "/p", {"kind": "Pod"})
        lease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x"
        srv.json("GET", lease, {"kind": "Lease"})
        async with KubeSession(master=srv.url, limiter=bucket) as s:
            for _ in range(3):
                await get_json(s, PODS + "/p")
            await get_json(s, lease)
            assert s.limiter_for(parse_path(lease)) is not s.limiter
    assert waits == [1.0, 2.0]


async def test_connection_refused_reads_like_go() -> None:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    codes: list[str] = []
    async with KubeSession(
        master=f"http://127.0.0.1:{port}", on_request=lambda v, r, c, s: codes.append(c)
    ) as s:
        with pytest.raises(errors.TransportError) as ei:
            await list_json(s, PODS, label_selector="app=web", limit=None)
    assert ei.value.message == (
        f'Get "http://127.0.0.1:{port}{PODS}?labelSelector=app%3Dweb": '
        f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    )
    assert codes == ["<error>"]


async def test_buckets_follow_kube_controller_managers_clients() -> None:
    # hpaClient: status writes and Events share one limiter; the scale client, the
    # shared informers' client and the discovery client each have their own.
    waits: list[float] = []

    async def fake_sleep(s: float) -> None:
        waits.append(s)

    bucket = TokenBucket(1.0, 1, monotonic=lambda: 0.0, sleep=fake_sleep)
    hpa = "/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers/h"
    scale = "/apis/apps/v1/namespaces/ns/deployments/web/scale"
    events = "/api/v1/namespaces/ns/events"
    async with fake_server() as srv:
        srv.json("GET", scale, {"kind": "Scale"})
        srv.json("PUT", scale, {"kind": "Scale"})
        srv.json("PUT", hpa + "/status", {"kind": "HorizontalPodAutoscaler"})
        srv.json("POST", events, {"kind": "Event"}, status=201)
        srv.json("GET", PODS, {"kind": "PodList", "items": [], "metadata": {}})
        srv.json("GET", "/apis", {"kind": "APIGroupList", "groups": []})
        async with KubeSession(master=srv.url, limiter=bucket) as s:
            await s.send("GET", scale)
            await s.send("PUT", scale, body={})
            assert waits == [1.0]  # the scale client's own bucket
            waits.clear()
            await s.send("PUT", hpa + "/status", body={})
            await s.send("POST", events, body={})
            assert waits == [1.0]  # status and the Event share the HPA client's bucket
            await s.send("GET", PODS)
            await s.send("GET", "/apis")
            assert waits == [1.0]
            limiters = {
                "status": s.limiter_for(parse_path(hpa + "/status"), "update"),
                "event": s.limiter_for(parse_path(events), "create"),
                "scale": s.limiter_for(parse_path(scale), "update"),
                "list": s.limiter_for(parse_path(PODS), "list"),
                "watch": s.limiter_for(parse_path(PODS), "watch"),
                "discovery": s.limiter_for(parse_path("/apis"), "get"),
            }
    assert limiters["status"] is limiters["event"] is s.limiter
    assert limiters["list"] is limiters["watch"]
    distinct = {id(limiters[k]) for k in ("status", "scale", "list", "discovery")}
    assert len(distinct) == 4


_PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


@pytest.mark.parametrize("case", ["proxied", "no_proxy", "loopback", "localhost"])
async def test_proxy_from_the_environment_resolved_at_open(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The environment's proxy is read once at open; as in Go (client-go), ``localhost``
    and loopback addresses never go through it, whatever ``NO_PROXY`` says."""
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.upper(), raising=False)
    async with fake_server() as api, fake_server() as proxy:
        for srv in (api, proxy):
            srv.json("GET", PODS + "/p", {"kind": "Pod", "metadata": {"name": "p"}})
        port = api.url.rsplit(":", 1)[1]
        # A name that is not loopback reaches the fake API server only through the
        # proxy (which answers itself; nothing resolves kube.test).
        master = {
            "proxied": f"http://kube.test:{port}",
            "no_proxy": api.url,
            "loopback": api.url,
            "localhost": f"http://localhost:{port}",
        }[case]
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        if case == "no_proxy":
            monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        async with KubeSession(master=master) as s:
            # read once at open: a later change of the environment does not matter
            monkeypatch.delenv("HTTP_PROXY")
            monkeypatch.delenv("HTTPS_PROXY")
            for _ in range(2):
                await get_json(s, PODS + "/p")
    via_proxy, direct = (2, 0) if case == "proxied" else (0, 2)
    assert len(proxy.requests) == via_proxy
    assert len(api.requests) == direct
    if case == "proxied":  # the proxy is asked for the API server's URL
        assert proxy.requests[0].headers["Host"] == f"kube.test:{port}"
