"""OpenTelemetry tracing, configured by the standard ``OTEL_*`` environment variables.

Tracing is off unless an OTLP endpoint is configured
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``), or
an exporter is handed in (tests).  The SDK itself reads ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG``.

We keep our own ``TracerProvider`` instead of installing a global one: the
global can be set only once per process, and tests run several controllers in
one process.  Log correlation still works, since it reads the active span from
the context, whichever provider made it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from hpactl import __version__

TRACER_NAME = "hpactl"

# Span names, documented in docs/observability.md.
SPAN_SYNC = "hpa.sync"
SPAN_METRIC = "hpa.metric"
SPAN_SCALE_GET = "hpa.scale.get"
SPAN_SCALE_UPDATE = "hpa.scale.update"
SPAN_STATUS_UPDATE = "hpa.status.update"


# What a span of the no-op tracer is: nothing recorded, nothing to attach.
_NO_SPAN: contextlib.nullcontext[trace.Span] = contextlib.nullcontext(trace.INVALID_SPAN)


def start_span(tracer: trace.Tracer, name: str) -> contextlib.AbstractContextManager[trace.Span]:
    """``tracer.start_as_current_span(name)``, at no cost when tracing is off.

    The no-op tracer would make an invalid span and attach it to the context for
    nothing; here the invalid span is handed out as is (``is_recording()`` False, so
    callers skip building attributes)."""
    if isinstance(tracer, trace.NoOpTracer):
        return _NO_SPAN
    return tracer.start_as_current_span(name)


def tracing_enabled(env: Mapping[str, str]) -> bool:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return bool(
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def traces_endpoint(env: Mapping[str, str]) -> str | None:
    """The OTLP/HTTP traces URL, by the spec's rule: the signal-specific variable as
    given, else the generic one with ``/v1/traces`` appended."""
    specific = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if specific:
        return specific
    generic = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if generic:
        return generic.rstrip("/") + "/v1/traces"
    return None


@dataclass
class Tracing:
    """The tracer the controller uses, and the provider to flush on exit (None when off)."""

    tracer: trace.Tracer
    provider: TracerProvider | None

    def shutdown(self) -> None:
        if self.provider is not None:
            self.provider.force_flush(timeout_millis=5000)
            self.provider.shutdown()


def setup_tracing(env: Mapping[str, str], exporter: SpanExporter | None = None) -> Tracing:
    if exporter is None and not tracing_enabled(env):
        return Tracing(trace.NoOpTracer(), None)
    resource = Resource.create(
        {SERVICE_NAME: env.get("OTEL_SERVICE_NAME", "hpactl"), "service.version": __version__}
    )
    provider = TracerProvider(resource=resource)
    if exporter is None:
        # Imported here: the exporter pulls in protobuf, which `hpactl --help` need not pay for.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # Headers, timeout and compression still come from the OTEL_* variables.
        exporter = OTLPSpanExporter(endpoint=traces_endpoint(env))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return Tracing(provider.get_tracer(TRACER_NAME, __version__), provider)
