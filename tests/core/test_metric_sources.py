"""KEP-6382 sources: the annotation, and which provider a metric goes to (pure)."""

from __future__ import annotations

from core_builders import bare_hpa

from hpactl.core.decide import MetricRequest
from hpactl.core.metric_sources import metric_sources, with_sources
from hpactl.model.hpa import HPA
from hpactl.model.metric_providers import MetricProvider, providers_from_raw, route


def _hpa(sources: str | None) -> HPA:
    return bare_hpa(None if sources is None else {"hpactl.dev/metric-sources": sources})


def test_annotation_sets_the_source_of_named_non_resource_metrics_only() -> None:
    choice = metric_sources(_hpa('{"rps": "prom.example.com"}'), True)
    assert choice.error is None
    requests = (
        MetricRequest(0, "resource", "ns", resource="cpu"),
        MetricRequest(1, "external", "ns", metric_name="rps"),
        MetricRequest(2, "pods", "ns", metric_name="rps"),
        MetricRequest(3, "external", "ns", metric_name="queue"),
    )
    assert [r.source for r in with_sources(requests, choice)] == [
        "",
        "prom.example.com",
        "prom.example.com",
        "",
    ]
    assert metric_sources(_hpa('{"rps": "prom.example.com"}'), False).groups == {}


def test_malformed_annotations() -> None:
    for text, why in (
        ("rps=prom", "is not JSON"),
        ('["prom.example.com"]', "must be a JSON object from metric name to API group"),
        ('{"rps": 3}', "must be a JSON object from metric name to API group"),
        ('{"rps": "custom.metrics.k8s.io"}', "is a default metrics API group"),
    ):
        choice = metric_sources(_hpa(text), True)
        assert choice.groups == {} and choice.error is not None
        assert why in choice.error, text


def test_route_prefers_the_named_group_then_the_first_pattern() -> None:
    providers = providers_from_raw(
        {
            "providers": [
                {"name": "a", "url": "https://a", "externalMetrics": ["q*"], "auth": "none"},
                {"name": "b", "url": "https://b", "externalMetrics": ["queue"], "auth": "none"},
                {"name": "c", "url": "https://c", "apiGroup": "c.example.com", "auth": "none"},
                {"name": "d", "url": "https://d", "customMetrics": ["queue"], "auth": "none"},
            ]
        }
    )

    def name(p: MetricProvider | None) -> str | None:
        return None if p is None else p.name

    assert name(route(providers, "external", "queue")) == "a"  # file order
    assert name(route(providers, "pods", "queue")) == "d"
    assert name(route(providers, "object", "queue")) == "d"
    assert name(route(providers, "external", "queue", "c.example.com")) == "c"
    # A group nobody declares: no provider (the API server at that group's path).
    assert route(providers, "external", "queue", "x.example.com") is None
    assert route(providers, "resource", "queue") is None
    assert route(providers, "external", "rps") is None
