"""Metrics-API access (read-only): plain values or ``MetricFetchError`` with upstream texts.

``client.MetricsClient`` (Protocol, upstream ``metrics/interfaces.go``),
``client.RestMetricsClient`` (the three metrics APIs over HTTP) and
``shared.SharedMetricsFetcher`` (one request per namespace and slot of its HPAs' ticks).
"""

from hpactl.metrics.client import MetricsClient, RestMetricsClient, fetch_metric
from hpactl.metrics.shared import SharedMetricsFetcher

__all__ = ["MetricsClient", "RestMetricsClient", "SharedMetricsFetcher", "fetch_metric"]
