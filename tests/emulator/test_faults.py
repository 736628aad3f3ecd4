"""Fault rules: spec parsing, matching and counting, and the aiohttp middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from hpactl.emulator.faults import FaultInjector, FaultRule, parse_fault_spec
from hpactl.emulator.metrics_api import MetricsState, register_metrics_routes

# ------------------------------------------------------------------ parsing

PARSE_CASES: list[Any] = [
    pytest.param(
        "path=/apis/metrics.k8s.io/*,verb=GET,status=500,rate=0.5",
        FaultRule(
            kind="error",
            path="/apis/metrics.k8s.io/*",
            verbs=frozenset({"GET"}),
            status=500,
            rate=0.5,
        ),
        id="error-rate",
    ),
    pytest.param(
        "latency=200ms,path=/apis/autoscaling/v2/*",
        FaultRule(kind="latency", path="/apis/autoscaling/v2/*", latency=0.2),
        id="latency",
    ),
    pytest.param(
        "status=503,latency=1.5s,verb=PUT|patch",
        FaultRule(kind="error", status=503, latency=1.5, verbs=frozenset({"PUT", "patch"})),
        id="error-with-latency",
    ),
    pytest.param(
        "watch-drop=/api/v1/pods",
        FaultRule(kind="watch-drop", path="/api/v1/pods"),
        id="watch-drop",
    ),
    pytest.param(
        "gone=/apis/autoscaling/v2/*",
        FaultRule(kind="gone", path="/apis/autoscaling/v2/*"),
        id="gone",
    ),
    pytest.param(
        "unavailable=custom.metrics.k8s.io,after=2,count=3",
        FaultRule(kind="unavailable", group="custom.metrics.k8s.io", after=2, count=3),
        id="unavailable",
    ),
    pytest.param(
        " status=429 , message=slow down ",
        FaultRule(kind="error", status=429, message="slow down"),
        id="spaces-and-message",
    ),
]


@pytest.mark.parametrize(("spec", "rule"), PARSE_CASES)
def test_parse_fault_spec(spec: str, rule: FaultRule) -> None:
    parsed = parse_fault_spec(spec)
    assert parsed == rule
    assert parsed.spec == spec


PARSE_ERRORS: list[Any] = [
    pytest.param("", "empty fault spec", id="empty"),
    pytest.param("status", "expected key=value", id="no-equals"),
    pytest.param("status=500,colour=red", "unknown key 'colour'", id="unknown-key"),
    pytest.param("status=500,status=503", "status= given twice", id="twice"),
    pytest.param("path=/x", "needs exactly one of", id="no-effect"),
    pytest.param("gone=/x,watch-drop=/y", "needs exactly one of", id="two-effects"),
    pytest.param("status=200", "400..599", id="not-an-error"),
    pytest.param("status=abc", "status= needs an integer", id="status-not-int"),
    pytest.param("status=500,rate=2", "rate must be in (0, 1]", id="rate-too-big"),
    pytest.param("status=500,rate=0", "rate must be in (0, 1]", id="rate-zero"),
    pytest.param("status=500,rate=half", "rate= needs a number", id="rate-not-number"),
    pytest.param("latency=200", 'missing unit in duration "200"', id="latency-no-unit"),
    pytest.param("gone=/x,path=/y", "drop path=", id="path-twice"),
    pytest.param("unavailable=metrics.example.com", "takes a metrics API group", id="bad-group"),
    pytest.param("status=500,count=0", "count >= 1", id="count-zero"),
    pytest.param(
        "gone=/x,message=m", "message= only applies to status=", id="message-without-status"
    ),
    pytest.param("watch-drop=", "watch-drop= needs a path glob", id="empty-glob"),
    pytest.param(
        "gone=/x,events=2", "events= only applies to watch-drop=", id="events-without-drop"
    ),
    pytest.param("watch-drop=/x,events=-1", "events must be >= 0", id="negative-events"),
    pytest.param("status=500,verb=|", "verb= is empty", id="empty-verb"),
]


@pytest.mark.parametrize(("spec", "fragment"), PARSE_ERRORS)
def test_parse_fault_spec_errors(spec: str, fragment: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_fault_spec(spec)
    assert fragment in str(exc.value)
    if spec:
        assert repr(spec) in str(exc.value)


# ------------------------------------------------------------------ matching, counting


def test_watch_drop_and_gone_match_path_globs() -> None:
    faults = FaultInjector()
    faults.add("watch-drop=/api/v1/pods")
    faults.add("gone=/apis/autoscaling/v2/*")
    assert faults.should_drop_watch("/api/v1/pods")
    assert not faults.should_drop_watch("/api/v1/namespaces/default/pods")
    assert faults.force_gone("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers")
    assert faults.force_gone("/apis/autoscaling/v2/horizontalpodautoscalers")
    assert not faults.force_gone("/apis/autoscaling/v1/horizontalpodautoscalers")
    assert not faults.force_gone("/api/v1/pods")


def test_watch_drop_after_events() -> None:
    faults = FaultInjector()
    faults.add("watch-drop=/api/v1/pods,events=2,count=1")
    assert faults.watch_drop_after("/api/v1/pods") == 2
    assert faults.watch_drop_after("/api/v1/pods") is None  # count spent
    assert FaultInjector().watch_drop_after("/api/v1/pods") is None


def test_after_and_count_window() -> None:
    faults = FaultInjector()
    rule = faults.add("gone=/api/v1/pods,after=2,count=3")
    results = [faults.force_gone("/api/v1/pods") for _ in range(8)]
    assert results == [False, False, True, True, True, False, False, False]
    assert faults.hits(rule) == 3


def test_rate_is_reproducible_for_a_seed() -> None:
    def run(seed: int) -> list[bool]:
        faults = FaultInjector(seed=seed)
        faults.add("gone=*,rate=0.5")
        return [faults.force_gone("/api/v1/pods") for _ in range(64)]

    first = run(7)
    assert first == run(7)
    assert first != run(8)
    # About half fire; with 64 draws anything outside 16..48 would mean the rate is ignored.
    assert 16 <= sum(first) <= 48


def test_remove_and_clear() -> None:
    faults = FaultInjector()
    rule = faults.add(FaultRule.gone("/api/v1/pods"))
    assert faults.rules == (rule,)
    faults.remove(rule)
    assert not faults.force_gone("/api/v1/pods")
    with pytest.raises(ValueError, match="not installed"):
        faults.remove(rule)
    faults.add_specs(["gone=*", "watch-drop=*"])
    faults.clear()
    assert faults.rules == ()


def test_rule_constructors_validate() -> None:
    with pytest.raises(ValueError, match=r"400\.\.599"):
        FaultRule.error(302)
    with pytest.raises(ValueError, match="negative"):
        FaultRule.slow(-1.0)
    with pytest.raises(ValueError, match="unknown fault kind"):
        FaultRule(kind="explode")


# ------------------------------------------------------------------ over HTTP


@dataclass
class Served:
    faults: FaultInjector
    sleeps: list[float]
    state: MetricsState
    http: aiohttp.ClientSession
    base: str

    async def request(self, method: str, path: str, **params: str) -> tuple[int, Any, str]:
        async with self.http.request(method, self.base + path, params=params) as resp:
            text = await resp.text()
            if resp.content_type == "application/json":
                return resp.status, await resp.json(), resp.content_type
            return resp.status, text, resp.content_type


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    state = MetricsState(lambda ns, name: {"app": "web"}, lambda: datetime(2026, 1, 1, tzinfo=UTC))
    faults = FaultInjector(seed=1, sleep=fake_sleep)

    async def ok(request: web.Request) -> web.Response:
        return web.json_response(
            {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}
        )

    app = web.Application(middlewares=[faults.middleware])
    register_metrics_routes(app, state)
    app.router.add_route("*", "/{tail:.*}", ok)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            yield Served(faults, sleeps, state, http, str(server.make_url("")).rstrip("/"))
    finally:
        await server.close()


async def test_no_rules_passes_through(served: Served) -> None:
    status, body, _ = await served.request("GET", "/api/v1/pods")
    assert (status, body["kind"]) == (200, "PodList")
    assert served.sleeps == []


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (500, "InternalError"),
        (503, "ServiceUnavailable"),
        (409, "Conflict"),
        (404, "NotFound"),
        (410, "Expired"),
        (504, "Timeout"),
    ],
)
async def test_error_rule_answers_status(served: Served, code: int, reason: str) -> None:
    served.faults.add(f"path=/api/v1/*,status={code}")
    status, body, _ = await served.request("GET", "/api/v1/pods")
    assert status == code
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"injected fault: HTTP {code}",
        "reason": reason,
        "code": code,
    }
    assert (await served.request("GET", "/apis/apps/v1/deployments"))[0] == 200


async def test_too_many_requests_carries_retry_after(served: Served) -> None:
    served.faults.add("status=429,message=slow down")
    async with served.http.get(served.base + "/api/v1/pods") as resp:
        assert resp.status == 429
        assert resp.headers["Retry-After"] == "1"
        body = await resp.json()
    assert body["message"] == "slow down"
    assert body["details"] == {"retryAfterSeconds": 1}


@pytest.mark.parametrize(
    ("verbs", "method", "path", "query", "fails"),
    [
        ("GET", "GET", "/api/v1/pods", {}, True),
        ("GET", "PUT", "/api/v1/namespaces/d/pods/p", {}, False),
        ("list", "GET", "/api/v1/pods", {}, True),
        ("list", "GET", "/api/v1/pods", {"watch": "true"}, False),
        ("watch", "GET", "/api/v1/pods", {"watch": "1"}, True),
        ("get", "GET", "/api/v1/namespaces/d/pods/p", {}, True),
        ("get", "GET", "/api/v1/namespaces/d/pods", {}, False),
        ("PUT|patch", "PATCH", "/api/v1/namespaces/d/pods/p", {}, True),
        ("PUT|patch", "PUT", "/api/v1/namespaces/d/pods/p", {}, True),
        ("PUT|patch", "POST", "/api/v1/namespaces/d/pods", {}, False),
    ],
)
async def test_verb_filter(
    served: Served, verbs: str, method: str, path: str, query: dict[str, str], fails: bool
) -> None:
    served.faults.add(f"status=500,verb={verbs}")
    status, _, _ = await served.request(method, path, **query)
    assert (status == 500) is fails


async def test_latency_rules_add_up_and_precede_the_error(served: Served) -> None:
    served.faults.add("latency=200ms,path=/api/*")
    served.faults.add("latency=1s,path=/api/v1/pods")
    served.faults.add("latency=5s,path=/apis/*")
    status, _, _ = await served.request("GET", "/api/v1/pods")
    assert status == 200
    assert served.sleeps == [pytest.approx(1.2)]
    served.faults.add("status=500,latency=300ms,path=/api/v1/pods")
    status, _, _ = await served.request("GET", "/api/v1/pods")
    assert status == 500
    assert served.sleeps[-1] == pytest.approx(1.5)


async def test_error_rate_over_http_is_reproducible(served: Served) -> None:
    served.faults.add("path=/apis/metrics.k8s.io/*,verb=GET,status=500,rate=0.5")
    codes = [
        (await served.request("GET", "/apis/metrics.k8s.io/v1beta1/pods"))[0] for _ in range(20)
    ]
    assert set(codes) == {200, 500}
    # The same seed replays the same decisions.
    again = FaultInjector(seed=1)
    again.add("path=/apis/metrics.k8s.io/*,verb=GET,status=500,rate=0.5")
    replay = []
    for _ in range(20):
        resp = await again.apply("GET", "/apis/metrics.k8s.io/v1beta1/pods", {})
        replay.append(200 if resp is None else resp.status)
    assert replay == codes


async def test_metrics_group_goes_away_and_comes_back_by_count(served: Served) -> None:
    served.faults.add("unavailable=custom.metrics.k8s.io,after=1,count=2")
    path = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/rps"
    served.state.set_custom(
        [
            {
                "describedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
                "metric": {"name": "rps"},
                "value": "1",
            }
        ]
    )
    results = [await served.request("GET", path) for _ in range(4)]
    assert [r[0] for r in results] == [200, 503, 503, 200]
    assert results[1][1:] == ("service unavailable\n", "text/plain")
    # Other groups and the group document are untouched.
    served.faults.add("unavailable=metrics.k8s.io")
    assert (await served.request("GET", "/apis/metrics.k8s.io"))[0] == 200
    assert (await served.request("GET", "/apis/metrics.k8s.io/v1beta1"))[0] == 503
    assert (await served.request("GET", "/apis/external.metrics.k8s.io/v1beta1"))[0] == 200


async def test_set_group_unavailable_delegates_to_metrics_state(served: Served) -> None:
    faults = FaultInjector(metrics_state=served.state)
    faults.set_group_unavailable("external.metrics.k8s.io")
    faults.set_group_unavailable("metrics.k8s.io")
    assert served.state.unavailable == {"external.metrics.k8s.io", "metrics.k8s.io"}
    assert (await served.request("GET", "/apis/external.metrics.k8s.io/v1beta1/namespaces/d/q"))[
        0
    ] == 503
    faults.set_group_unavailable("external.metrics.k8s.io", False)
    assert served.state.unavailable == {"metrics.k8s.io"}
    assert (await served.request("GET", "/apis/external.metrics.k8s.io/v1beta1/namespaces/d/q"))[
        0
    ] == 200
    with pytest.raises(ValueError, match="unknown metrics API group"):
        faults.set_group_unavailable("apps")


async def test_set_group_unavailable_without_state_uses_a_rule(served: Served) -> None:
    served.faults.set_group_unavailable("metrics.k8s.io")
    served.faults.set_group_unavailable("metrics.k8s.io")  # idempotent: one rule
    assert [r.kind for r in served.faults.rules] == ["unavailable"]
    assert (await served.request("GET", "/apis/metrics.k8s.io/v1beta1/pods"))[0] == 503
    served.faults.set_group_unavailable("metrics.k8s.io", False)
    assert served.faults.rules == ()
    assert (await served.request("GET", "/apis/metrics.k8s.io/v1beta1/pods"))[0] == 200
