"""``hpactl explain``'s two sources: a running hpactl's records, or a one-off decision.

``await fetch_records(server, namespace, name, ...) -> RecordsAnswer``
    GET ``{server}/debug/hpa/{namespace}/{name}`` of a running ``hpactl run
    --enable-debug-endpoints``. ``answer.doc`` is the records document when there is
    one; otherwise ``answer.note`` says why not (nothing listening, no debug endpoint,
    refused, no records for this HPA), in one line.

``await explain_once(namespace, name, ...) -> dict``
    A decision computed now from the cluster's current state, read-only: the HPA
    (``autoscaling/v2``), its target's scale subresource, the pods the scale's
    selector matches and the metrics APIs, through the same ``hpactl.kube``,
    ``hpactl.metrics`` and ``hpactl.core`` code the controller syncs with. What it
    cannot know is said in ``cannotKnow``: the stabilization windows' recommendations
    and past scale events live only in the memory of the controller that scales the
    HPA, so neither stabilization nor the rate limits of ``spec.behavior`` are applied
    (the legacy ``max(2 x current, 4)`` scale-up limit needs no history and is), and
    other HPAs' selectors are not read (no ambiguity check). The HPA's status as its
    controller last wrote it is included (``writerStatus``). ``config`` carries the
    feature gates (``hpactl explain --feature-gates``, parsed as ``hpactl run`` parses
    them), so the opt-in extensions (docs/extensions.md) decide as in the controller:
    suspend, ``OwnerReference`` pod selection (the namespace's ReplicaSets are read),
    per-metric API groups (asked of the API server at the group's paths; a
    ``--metrics-providers-config`` file is not read); a metric fallback needs how long
    its metric has been failing, which only the controller knows (``cannotKnow``
    says so). Failures raise
    :class:`ExplainError` (one line, an exit code). ``crd=True`` explains hpactl's own
    HorizontalPodAutoscaler of that name (autoscaling.hpactl.dev, read through
    ``cr_to_v2``) instead of the autoscaling/v2 one.

For hpactl's own HorizontalPodAutoscalers the controller's key, and the name part of
the records' URL, is ``hhpa:<name>`` (:func:`hpactl.model.hpa.hpa_key`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, replace
from typing import Any

import aiohttp

from hpactl.cache.projections import workload_scale_from_raw
from hpactl.clock import RealClock
from hpactl.core.behavior import calculate_scale_up_limit, convert_desired_replicas_with_rules
from hpactl.core.decide import (
    CoreConfig,
    Explanation,
    LimitedBy,
    RateLimit,
    ScaleView,
    SyncInputs,
    decide,
    metrics_to_fetch,
    needs_metrics,
    with_selector,
)
from hpactl.core.history import History
from hpactl.core.metric_fallback import ANNOTATION as FALLBACK_ANNOTATION
from hpactl.core.metric_fallback import fallback_problem
from hpactl.core.metric_sources import metric_sources, with_sources
from hpactl.core.metrics_eval import MetricInput
from hpactl.core.pod_selection import owner_uids, wants_owned_pods
from hpactl.kube.errors import KubeError, NotFound, TransportError
from hpactl.kube.requests import get_json, list_json
from hpactl.kube.restmapper import RestMapper
from hpactl.kube.scaling import get_scale
from hpactl.kube.session import KubeSession
from hpactl.metrics.client import RestMetricsClient
from hpactl.metrics.providers import MetricsSource, RoutedMetricsSource
from hpactl.model import crd as hhpa
from hpactl.model.hpa import HPA, V2_API_VERSION, InvalidHPA, hpa_from_raw, hpa_key
from hpactl.model.pod import pod_view_from_raw
from hpactl.model.selectors import Selector, parse_selector
from hpactl.model.times import format_time

__all__ = ["ExplainError", "RecordsAnswer", "explain_once", "fetch_records", "without_history"]


class ExplainError(Exception):
    """A failure to report in one line; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# ------------------------------------------------------------------ a running hpactl


@dataclass(frozen=True, slots=True)
class RecordsAnswer:
    doc: dict[str, Any] | None
    note: str = ""


async def fetch_records(
    server: str,
    namespace: str,
    name: str,
    *,
    token: str | None = None,
    insecure: bool = False,
    timeout: float = 3.0,
) -> RecordsAnswer:
    """The records a running hpactl serves for one HPA (see the module docstring)."""
    url = f"{server.rstrip('/')}/debug/hpa/{namespace}/{name}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    ssl_arg = not insecure  # aiohttp: False skips certificate verification
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as http,
            http.get(url, headers=headers, ssl=ssl_arg) as resp,
        ):
            body = await resp.read()
            status = resp.status
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
        text = str(exc) or type(exc).__name__
        return RecordsAnswer(None, f"no hpactl answered at {server}: {text}")
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if status == 200 and isinstance(doc, dict) and isinstance(doc.get("records"), list):
        return RecordsAnswer(doc)
    if status == 404 and isinstance(doc, dict) and "error" in doc:
        return RecordsAnswer(None, f"{server}: {doc['error']}")
    if status == 404:
        return RecordsAnswer(
            None,
            f"{server} has no /debug/hpa endpoint (is hpactl run with --enable-debug-endpoints?)",
        )
    if status in (401, 403):
        reason = body.decode("utf-8", "replace").strip().splitlines()[:1]
        hint = "" if token else " (pass --token)"
        return RecordsAnswer(None, f"{server} refused: {status} {' '.join(reason)}{hint}")
    return RecordsAnswer(None, f"{server} answered {status}, not decision records")


# ------------------------------------------------------------------ one-off


def _cannot_know(hpa: HPA, config: CoreConfig) -> list[str]:
    b = hpa.spec.behavior
    down = config.downscale_stabilization.total_seconds()
    if b is not None and b.scale_down.stabilization_window_seconds is not None:
        down = b.scale_down.stabilization_window_seconds
    out: list[str] = []
    if down > 0:
        out.append(
            f"the recommendations of the last {down:g} s (scale-down stabilization window): "
            "only the controller that scales this HPA keeps them, so a scale-down shown here "
            "may be held at a higher recent recommendation"
        )
    if b is not None:
        up = b.scale_up.stabilization_window_seconds or 0
        if up:
            out.append(f"the recommendations of the last {up} s (scale-up stabilization window)")
        out.append(
            "past scale events, so the scaleUp / scaleDown policies of spec.behavior "
            "are not applied"
        )
    if (
        config.metric_fallback
        and FALLBACK_ANNOTATION in hpa.annotations
        and not fallback_problem(hpa, True)
    ):
        out.append(
            f"how long each metric with a fallback ({FALLBACK_ANNOTATION}) has been "
            "failing, so no fallback replica count is applied"
        )
    return out


def without_history(expl: Explanation, hpa: HPA) -> Explanation:
    """The decision as far as it does not depend on history: the metric proposal
    clamped to min/max (and, without ``spec.behavior``, the history-free scale-up
    limit). Stabilization and behavior rate limits are left out."""
    if expl.path != "metrics" or expl.metric_proposal is None or expl.current_replicas is None:
        return expl
    current, proposal = expl.current_replicas, expl.metric_proposal
    lo = expl.min_replicas if expl.min_replicas is not None else 1
    hi = expl.max_replicas if expl.max_replicas is not None else hpa.spec.max_replicas
    limited: list[LimitedBy] = [r for r in expl.limited_by if r == "tolerance"]
    rate_limit: RateLimit | None = None
    policy = ""
    if hpa.spec.behavior is None:
        desired, reason, _ = convert_desired_replicas_with_rules(current, proposal, lo, hi)
        if proposal > current:
            rate_limit = RateLimit(
                "scaleUp",
                calculate_scale_up_limit(current),
                "max(2 x current, 4)",
                reason == "ScaleUpLimit",
            )
    else:
        desired = min(max(proposal, lo), hi)
        reason = (
            "TooManyReplicas"
            if proposal > hi
            else "TooFewReplicas"
            if proposal < lo
            else "DesiredWithinRange"
        )
    if reason == "ScaleUpLimit":
        limited.append("scale-up-limit")
        policy = "max(2 x current, 4)"
    elif reason == "TooManyReplicas":
        limited.append("max")
    elif reason == "TooFewReplicas":
        limited.append("min")
    return replace(
        expl,
        desired_replicas=desired,
        stabilized=None,
        windows=(),
        stabilized_by=None,
        rate_limit=rate_limit,
        limited_by=tuple(limited),
        limit_reason=reason,
        policy=policy,
    )


async def _metrics(
    source: MetricsSource, hpa: HPA, selector_text: str, config: CoreConfig
) -> tuple[MetricInput, ...]:
    try:
        selector = parse_selector(selector_text)
    except ValueError:
        selector = Selector.nothing()
    # KEP-6382 (HPAMetricSource): the API group the HPA's annotation names per metric.
    requests = with_sources(metrics_to_fetch(hpa), metric_sources(hpa, config.metric_source))
    values = await asyncio.gather(
        *(source.fetch(req, selector) for req in requests if req.kind != "none")
    )
    it = iter(values)
    return tuple(None if req.kind == "none" else next(it) for req in requests)


async def _pod_owners(
    session: KubeSession, namespace: str, target_uid: str, timeout: float
) -> frozenset[str] | None:
    """KEP-5325 ``OwnerReference``: the controller uids the target's pods may have, as
    the controller computes them from its ReplicaSet cache (read here live)."""
    try:
        listed = await list_json(
            session, f"/apis/apps/v1/namespaces/{namespace}/replicasets", timeout=timeout
        )
    except KubeError as exc:
        raise ExplainError(f"cannot list the ReplicaSets of {namespace}: {exc}") from None
    rs = [workload_scale_from_raw("ReplicaSet", item) for item in listed.items]
    return owner_uids(target_uid, ((r.uid, r.owner_uid) for r in rs))


def _writer_status(raw: dict[str, Any]) -> dict[str, Any]:
    status = raw.get("status") or {}
    return {
        "currentReplicas": status.get("currentReplicas"),
        "desiredReplicas": status.get("desiredReplicas"),
        "lastScaleTime": status.get("lastScaleTime"),
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message")}
            for c in status.get("conditions") or []
            if isinstance(c, dict)
        ],
    }


async def explain_once(
    namespace: str,
    name: str,
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    master: str | None = None,
    config: CoreConfig | None = None,
    timeout: float = 10.0,
    crd: bool = False,
) -> dict[str, Any]:
    """A one-off, read-only decision for one HPA (see the module docstring)."""
    config = config or CoreConfig()
    if kubeconfig and not os.path.isfile(kubeconfig):
        raise ExplainError(f"kubeconfig {kubeconfig}: no such file")
    session = KubeSession(
        kubeconfig=kubeconfig,
        master=master,
        context=context,
        request_timeout=timeout,
        connect_timeout=min(timeout, 5.0),
        max_retries=0,
    )
    try:
        await session.open()
    except Exception as exc:  # the client library's config errors: one line
        raise ExplainError(f"cannot load the cluster configuration: {exc}") from None
    try:
        return await _explain_once(session, namespace, name, config, timeout, crd)
    finally:
        await session.close()


async def _explain_once(
    session: KubeSession,
    namespace: str,
    name: str,
    config: CoreConfig,
    timeout: float,
    crd: bool = False,
) -> dict[str, Any]:
    api_version = hhpa.API_VERSION if crd else V2_API_VERSION
    key = hpa_key(namespace, name, api_version)
    what = f"{hhpa.KIND}.{hhpa.GROUP}" if crd else "HorizontalPodAutoscaler"
    path = f"/apis/{api_version}/namespaces/{namespace}/horizontalpodautoscalers/{name}"
    try:
        raw = await get_json(session, path, timeout=timeout)
    except NotFound:
        raise ExplainError(f"no {what} {namespace}/{name}") from None
    except TransportError as exc:
        raise ExplainError(f"cannot reach the cluster: {exc}") from None
    except KubeError as exc:
        raise ExplainError(f"cannot read {what} {namespace}/{name}: {exc}") from None
    try:
        hpa = hpa_from_raw(hhpa.cr_to_v2(raw) if crd else raw)
    except InvalidHPA as exc:
        raise ExplainError(f"{what} {namespace}/{name} is invalid: {exc}") from None
    hpa = replace(hpa, api_version=api_version)
    mapper = RestMapper(session, monotonic=time.monotonic, timeout=timeout)
    ref = hpa.spec.scale_target_ref
    scale: ScaleView | None = None
    scale_error = ""
    target_uid = ""
    try:
        res = await get_scale(
            session, mapper, namespace, ref.api_version, ref.kind, ref.name, timeout=timeout
        )
        scale = ScaleView(res.scale.spec_replicas, res.scale.status_replicas, res.scale.selector)
        target_uid = res.scale.uid
    except KubeError as exc:
        scale_error = str(exc)
    pods = []
    if scale is not None and scale.selector:
        try:
            listed = await list_json(
                session,
                f"/api/v1/namespaces/{namespace}/pods",
                label_selector=scale.selector,
                timeout=timeout,
            )
        except KubeError as exc:
            raise ExplainError(f"cannot list the pods of {key}: {exc}") from None
        pods = [pod_view_from_raw(p) for p in listed.items]
    now = RealClock().now()
    inputs = with_selector(
        SyncInputs(
            hpa=hpa,
            scale=scale,
            pods=tuple(pods),
            metrics=(),
            history=History(),
            config=config,
            now=now,
            scale_error=scale_error,
        )
    )
    if needs_metrics(inputs) and scale is not None:
        client = RestMetricsClient(session, mapper=mapper, timeout=timeout)
        source: MetricsSource = client
        if config.metric_source:
            source = RoutedMetricsSource(client, (), {}, session, mapper=mapper, timeout=timeout)
        inputs = replace(inputs, metrics=await _metrics(source, hpa, scale.selector, config))
        if wants_owned_pods(hpa, config.selection_strategy):
            owners = await _pod_owners(session, namespace, target_uid, timeout)
            inputs = replace(inputs, pod_owners=owners)
    plan = decide(inputs)
    expl = without_history(plan.explanation, hpa)
    return {
        "time": format_time(now),
        "hpa": key,
        "oneOff": True,
        "currentReplicas": expl.current_replicas,
        "desiredReplicas": expl.desired_replicas,
        "explanation": expl.to_dict(),
        "cannotKnow": _cannot_know(hpa, config) if expl.path == "metrics" else [],
        "writerStatus": _writer_status(raw),
    }
