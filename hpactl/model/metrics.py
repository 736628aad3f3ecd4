"""Metric samples handed from the metrics shell to the pure decision core.

Values are integers in milli-units (Go ``Quantity.MilliValue()``), as upstream's
``pkg/controller/podautoscaler/metrics`` package returns them. A failed fetch is not
an exception but a value (:class:`MetricFetchError`), because the condition and event
texts upstream produces depend on which fetch failed and how.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeAlias

__all__ = [
    "ExternalMetricValues",
    "MetricFetchError",
    "ObjectMetricValue",
    "PodMetric",
    "PodMetricsInfo",
]


@dataclass(frozen=True, slots=True)
class PodMetric:
    """One pod's sample (Go ``metrics.PodMetric``): when, over which window, and the value.

    ``value`` is in milli-units: for resource metrics the sum over the pod's containers
    (or the one named container), for custom metrics the pod's value.
    """

    timestamp: datetime
    window: timedelta
    value: int


#: Pod name -> sample (Go ``metrics.PodMetricsInfo``). Insertion order should follow
#: the API response: the first entry's timestamp is the one upstream reports.
PodMetricsInfo: TypeAlias = Mapping[str, PodMetric]


@dataclass(frozen=True, slots=True)
class ObjectMetricValue:
    """The value of an Object metric (custom.metrics.k8s.io, one described object)."""

    value: int
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class ExternalMetricValues:
    """Every series returned by external.metrics.k8s.io for a name + label selector."""

    values: tuple[int, ...]
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class MetricFetchError:
    """A failed fetch; ``message`` is exactly the text upstream's ``metrics/client.go`` returns.

    Examples: ``no metrics returned from resource metrics API``,
    ``unable to fetch metrics from resource metrics API: <err>``,
    ``unable to fetch metrics from custom metrics API: <err>``,
    ``no metrics returned from external metrics API``.
    The core wraps it further as ``replica_calculator.go`` does.
    """

    message: str
