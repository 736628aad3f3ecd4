"""Pure parts of hpactl.kube: paths, error mapping, token bucket."""

from __future__ import annotations

import pytest

from hpactl.kube import errors
from hpactl.kube.paths import parse_path, resource_path
from hpactl.kube.session import TokenBucket


def test_resource_path_roundtrip() -> None:
    p = resource_path("apps", "v1", "deployments", namespace="ns", name="web", subresource="scale")
    assert p == "/apis/apps/v1/namespaces/ns/deployments/web/scale"
    info = parse_path(p)
    assert (
        info.group,
        info.version,
        info.namespace,
        info.resource,
        info.name,
        info.subresource,
    ) == ("apps", "v1", "ns", "deployments", "web", "scale")
    assert info.qualified_resource == "deployments.apps"
    assert info.metric_resource == "deployments.apps/scale"
    assert resource_path("", "v1", "pods", namespace="a") == "/api/v1/namespaces/a/pods"


@pytest.mark.parametrize(
    ("path", "qr", "name"),
    [
        (
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*/qps",
            "pods.custom.metrics.k8s.io",
            "*",
        ),
        (
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/metrics/qps",
            "metrics.custom.metrics.k8s.io",
            "qps",
        ),
        (
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue_len",
            "queue_len.external.metrics.k8s.io",
            "",
        ),
        ("/api/v1/namespaces/kube-system", "namespaces", "kube-system"),
        ("/api/v1/nodes", "nodes", ""),
    ],
)
def test_parse_path_qualified_resource(path: str, qr: str, name: str) -> None:
    info = parse_path(path)
    assert info.qualified_resource == qr
    assert info.name == name


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        ({"reason": "NotFound", "code": 404}, errors.NotFound),
        ({"reason": "AlreadyExists", "code": 409}, errors.AlreadyExists),
        ({"reason": "Conflict", "code": 409}, errors.Conflict),
        ({"reason": "Expired", "code": 410}, errors.Gone),
        ({"reason": "", "code": 410}, errors.Gone),
        ({"reason": "Timeout", "code": 504}, errors.Timeout),
        ({"reason": "ServiceUnavailable", "code": 503}, errors.ServiceUnavailable),
        (
            {"reason": "TooManyRequests", "code": 429, "details": {"retryAfterSeconds": 3}},
            errors.TooManyRequests,
        ),
        ({"reason": "Forbidden", "code": 403}, errors.Forbidden),
        ({"reason": "", "code": 502}, errors.ServerError),
    ],
)
def test_error_from_status_class(status: dict[str, object], cls: type[errors.ApiError]) -> None:
    err = errors.error_from_status(
        {"kind": "Status", "status": "Failure", "message": "m", **status}
    )
    assert type(err) is cls
    assert err.message == "m"


def test_retry_after_from_status() -> None:
    err = errors.error_from_status(
        {
            "reason": "TooManyRequests",
            "code": 429,
            "message": "x",
            "details": {"retryAfterSeconds": 3},
        }
    )
    assert err.retry_after == 3


def test_generic_messages() -> None:
    info = parse_path("/apis/apps/v1/namespaces/ns/deployments/web")
    assert errors.generic_server_message(404, "GET", info, "x") == (
        "NotFound",
        "the server could not find the requested resource (get deployments.apps web)",
    )
    assert errors.generic_server_message(409, "PUT", info, "x")[0] == "Conflict"
    assert (
        errors.generic_server_message(403, "GET", info, "nope")[1]
        == "nope (get deployments.apps web)"
    )
    assert errors.generic_server_message(418, "GET", parse_path("/version"), "x")[1] == (
        "the server responded with the status code 418 but did not return more information"
    )


def test_non_text_body_is_unknown() -> None:
    info = parse_path("/api/v1/namespaces/ns/pods")
    err = errors.error_from_response(
        500, b"\x00\x01", "application/vnd.kubernetes.protobuf", "GET", info
    )
    assert (
        err.message
        == 'an error on the server ("unknown") has prevented the request from succeeding (get pods)'
    )


class FakeTime:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_token_bucket_burst_then_rate() -> None:
    ft = FakeTime()
    tb = TokenBucket(2.0, 3, monotonic=ft)
    assert [tb.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    # the next ones queue at 1/qps each
    assert tb.reserve() == pytest.approx(0.5)
    assert tb.reserve() == pytest.approx(1.0)
    ft.t += 10.0  # refills to burst, not beyond
    assert [tb.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert tb.reserve() == pytest.approx(0.5)


def test_token_bucket_disabled() -> None:
    tb = TokenBucket(0, 1, monotonic=FakeTime())
    assert all(tb.reserve() == 0.0 for _ in range(100))


def test_raise_client_limit_gives_leases_their_own_faster_bucket() -> None:
    from hpactl.kube.session import KubeSession

    s = KubeSession(master="http://127.0.0.1:1", qps=5, burst=10)
    leases = parse_path("/apis/coordination.k8s.io/v1/namespaces/x/leases/a")
    status = parse_path("/apis/autoscaling/v2/namespaces/x/horizontalpodautoscalers/a/status")
    s.raise_client_limit("coordination.k8s.io", 30.0, 40)
    bucket = s.limiter_for(leases, "update")
    # 40 renewals at once pass without waiting; the controller's own bucket is unchanged.
    assert [bucket.reserve() for _ in range(40)] == [0.0] * 40
    assert s.limiter_for(status, "update") is s.limiter
    # Never lowered, and only for a group with a client of its own.
    s.raise_client_limit("coordination.k8s.io", 1.0, 1)
    assert s.limiter_for(leases, "update") is bucket
    with pytest.raises(ValueError, match="no client of its own"):
        s.raise_client_limit("autoscaling", 30.0, 40)
