"""KEP-6382's per-metric ``source.apiGroup``, carried by an annotation.

KEP-6382 ("Per-Metric Source Routing for HPA", gate ``HPAMetricSource``) adds
``metric.source.apiGroup`` to Pods, Object and External metrics: that metric is
fetched from the metrics API served under that group instead of
``custom.metrics.k8s.io`` / ``external.metrics.k8s.io``, with the same paths and wire
format. The API server would drop the field, so hpactl reads it from the annotation
:data:`ANNOTATION`, a JSON object from metric name to API group::

    hpactl.dev/metric-sources: '{"queue_depth": "keda.sh"}'

It applies to every Pods, Object and External metric of the HPA with that name
(Resource metrics always come from ``metrics.k8s.io``, as in the KEP). The group
must be a DNS subdomain other than the default metrics groups. A malformed value is
reported as every malformed extension annotation is (``AnnotationsValid=False``,
reason :data:`INVALID_REASON`, and a Warning event: see
:mod:`hpactl.core.extension_conditions`), and the HPA is otherwise synced as if it
were unset. Gate off: ignored. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from hpactl.model.hpa import HPA
from hpactl.model.metric_providers import check_api_group

if TYPE_CHECKING:  # decide imports this module
    from hpactl.core.decide import MetricRequest

__all__ = [
    "ANNOTATION",
    "INVALID_REASON",
    "SourceChoice",
    "metric_sources",
    "with_sources",
]

ANNOTATION = "hpactl.dev/metric-sources"
#: Reason of the Warning event and of ``AnnotationsValid=False`` for a malformed value.
INVALID_REASON = "InvalidMetricSources"
_ROUTABLE = ("pods", "object", "external")


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """Metric name → API group, and why the annotation was ignored when malformed."""

    groups: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None


def _problem(raw: str) -> str | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return "is not JSON"
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
    ):
        return "must be a JSON object from metric name to API group"
    for name, group in value.items():
        why = check_api_group(group)
        if why is not None:
            return f"metric {name!r}: {why}"
    return None


def metric_sources(hpa: HPA, enabled: bool) -> SourceChoice:
    """The HPA's per-metric API groups (none when the gate is off or nothing is set)."""
    if not enabled:
        return SourceChoice()
    raw = hpa.annotations.get(ANNOTATION)
    if raw is None:
        return SourceChoice()
    problem = _problem(raw)
    if problem is not None:
        return SourceChoice(
            error=f"annotation {ANNOTATION}={raw!r} {problem}; the metrics are fetched "
            "as if it were unset"
        )
    return SourceChoice(dict(json.loads(raw)))


def with_sources(
    requests: Sequence[MetricRequest], choice: SourceChoice
) -> tuple[MetricRequest, ...]:
    """``requests`` with ``source`` set on the Pods/Object/External ones named."""
    if not choice.groups:
        return tuple(requests)
    return tuple(
        replace(r, source=choice.groups[r.metric_name])
        if r.kind in _ROUTABLE and r.metric_name in choice.groups
        else r
        for r in requests
    )
