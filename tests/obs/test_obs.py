"""Observability building blocks: log correlation, tracing setup, Prometheus, probes."""

from __future__ import annotations

import io
import json

import aiohttp
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from hpactl.obs.logging import configure_logging
from hpactl.obs.metrics import ControllerMetrics
from hpactl.obs.server import ObservabilityServer, Readiness, parse_bind_address
from hpactl.obs.tracing import setup_tracing, traces_endpoint, tracing_enabled


def test_tracing_is_off_without_an_endpoint() -> None:
    assert not tracing_enabled({})
    assert tracing_enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert not tracing_enabled(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}
    )
    tracing = setup_tracing({})
    assert tracing.provider is None
    with tracing.tracer.start_as_current_span("x") as span:
        assert not span.get_span_context().is_valid


def test_traces_endpoint_follows_the_otlp_spec_rule() -> None:
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == (
        "http://c:4318/v1/traces"
    )
    assert (
        traces_endpoint(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x",
            }
        )
        == "http://t/x"
    )
    assert traces_endpoint({}) is None


def test_log_lines_inside_a_span_carry_its_ids() -> None:
    import structlog

    out = io.StringIO()
    configure_logging("json", 0, stream=out)
    exporter = InMemorySpanExporter()
    tracing = setup_tracing({"OTEL_SERVICE_NAME": "t"}, exporter=exporter)
    log = structlog.get_logger()
    with tracing.tracer.start_as_current_span("hpa.sync") as span:
        log.info("synced", hpa="default/web")
    log.info("outside")
    tracing.shutdown()
    inside, outside = (json.loads(line) for line in out.getvalue().splitlines())
    ctx = span.get_span_context()
    assert inside["trace_id"] == format(ctx.trace_id, "032x")
    assert inside["span_id"] == format(ctx.span_id, "016x")
    assert inside["hpa"] == "default/web" and inside["v"] == 0
    assert "trace_id" not in outside
    assert [s.name for s in exporter.get_finished_spans()] == ["hpa.sync"]


def test_debug_lines_need_verbosity() -> None:
    import structlog

    out = io.StringIO()
    configure_logging("text", 0, stream=out)
    structlog.get_logger().debug("hidden")
    configure_logging("text", 4, stream=out)
    structlog.get_logger().debug("shown")
    assert "hidden" not in out.getvalue() and "shown" in out.getvalue()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":8080", ("0.0.0.0", 8080)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9", ("::1", 9)),
        ("0", None),
    ],
)
def test_parse_bind_address(text: str, expected: tuple[str, int] | None) -> None:
    assert parse_bind_address(text) == expected


@pytest.mark.parametrize("bad", ["8080", "host:port", ":70000"])
def test_parse_bind_address_rejects(bad: str) -> None:
    with pytest.raises(ValueError, match="bind address"):
        parse_bind_address(bad)


async def test_server_serves_metrics_and_probes() -> None:
    metrics = ControllerMetrics()
    state = {"synced": False, "leader": "starting"}
    server = ObservabilityServer(
        metrics,
        Readiness(lambda: bool(state["synced"]), lambda: str(state["leader"])),
        "127.0.0.1:0",
        "127.0.0.1:0",
    )
    await server.start()
    try:
        metrics.reconciliations.labels(action="scale_up", error="none").inc()
        metrics.observe_api_request("GET", 200, 0.01)
        metrics.desired_replicas.labels(namespace="default", hpa_name="web").set(5)
        async with aiohttp.ClientSession() as http:
            health = f"http://127.0.0.1:{server.ports['health']}"
            async with http.get(f"{health}/healthz") as r:
                assert r.status == 200
            async with http.get(f"{health}/readyz") as r:
                assert r.status == 500
                assert "not synced" in await r.text()
            state.update(synced=True, leader="standby")
            async with http.get(f"{health}/readyz") as r:
                assert r.status == 200
            async with http.get(f"http://127.0.0.1:{server.ports['metrics']}/metrics") as r:
                text = await r.text()
    finally:
        await server.stop()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }
    key = (
        "horizontal_pod_autoscaler_controller_reconciliations_total",
        (("action", "scale_up"), ("error", "none")),
    )
    assert samples[key] == 1.0
    assert samples[("hpactl_api_requests_total", (("code", "200"), ("verb", "GET")))] == 1.0
    assert (
        samples[
            (
                "horizontal_pod_autoscaler_controller_desired_replicas",
                (("hpa_name", "web"), ("namespace", "default")),
            )
        ]
        == 5.0
    )


def test_stdlib_logging_goes_through_the_same_renderer() -> None:
    import logging

    out = io.StringIO()
    configure_logging("json", 0, stream=out)
    configure_logging("json", 0, stream=out)  # reconfiguring does not duplicate lines
    logging.getLogger("hpactl.kube.leader").error("error retrieving resource lock %s", "ns/x")
    logging.getLogger("some.lib").debug("hidden at -v=0")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 1
    assert lines[0]["msg"] == "error retrieving resource lock ns/x"
    assert "err" in lines[0] and "v" not in lines[0]  # an error entry, as zapr writes it
    assert lines[0]["caller"].startswith("test_obs.py:")
    assert "ts" in lines[0]
