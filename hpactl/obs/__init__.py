"""Observability: structured logs, OpenTelemetry traces, Prometheus metrics, health endpoints."""
