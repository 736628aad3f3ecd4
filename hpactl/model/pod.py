"""A Pod, projected to what the HPA decision needs.

The pod informer calls :func:`pod_view_from_raw` for every pod event, so the
projection is kept cheap: no model classes, quantity strings parsed once per distinct
text (they repeat across pods of one workload), timestamps through the C-level
``datetime.fromisoformat``. It is kept small too (30,000 of them are cached): what
repeats across the pods of a workload (the labels, the container views, the
timestamps, the namespace and phase strings) is one shared immutable object.

Requests are milli-units (Go ``Quantity.MilliValue()``), per resource name.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

__all__ = [
    "ContainerView",
    "PodView",
    "controller_uid",
    "is_pod_ready_running",
    "pod_view_from_raw",
]


@dataclass(frozen=True, slots=True)
class ContainerView:
    """A container (or a sidecar init container) and its resource requests in milli-units."""

    name: str
    requests: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class PodView:
    """The fields of a Pod that ``replica_calculator.go`` and ``groupPods`` read.

    * ``ready``: status of the *first* ``Ready`` condition: True for "True", False for
      "False" or "Unknown" (then ``ready_unknown`` is True), None when absent.
      Upstream's ``groupPods`` tests ``status == False`` while ``IsPodReady`` tests
      ``status == True``, so "Unknown" has to stay distinguishable.
    * ``ready_transition``: that condition's ``lastTransitionTime`` (None if absent or
      unset; Go would then use the zero time, which is before any real time).
    * ``sidecars``: init containers with ``restartPolicy: Always``, in spec order.
    * ``pod_requests``: None unless pod-level requests are set (Go
      ``resourcehelpers.IsPodLevelRequestsSet``); then the result of Go
      ``resourcehelpers.PodRequests(pod, {})``: container aggregate (sidecar formula),
      overridden by the pod-level values of supported resources, plus pod overhead.
    """

    namespace: str
    name: str
    labels: Mapping[str, str]
    phase: str
    deleting: bool
    ready: bool | None
    ready_transition: datetime | None
    start_time: datetime | None
    containers: tuple[ContainerView, ...]
    sidecars: tuple[ContainerView, ...]
    pod_requests: Mapping[str, int] | None
    ready_unknown: bool = False
    # spec.nodeName ("" until scheduled), interned: a few nodes carry many pods.
    node_name: str = ""
    # The uid of the controller ownerReference (``metav1.GetControllerOf``; "" if
    # none), interned: the pods of one ReplicaSet share it. Only the
    # OwnerReference pod selection strategy (KEP-5325) reads it.
    owner_uid: str = ""


def is_pod_ready_running(pod: PodView) -> bool:
    """Phase Running and Ready=True (``getReadyPodsCount``: ``PodRunning && IsPodReady``)."""
    return pod.phase == "Running" and pod.ready is True


# --- projection -------------------------------------------------------------------


@lru_cache(maxsize=8192)
def _milli(value: str | int | float) -> int | None:
    """Go ``Quantity.MilliValue()`` of one request value; None if it does not parse."""
    # Imported here so that this module loads even before quantity.py exists.
    from hpactl.model.quantity import parse_quantity

    try:
        return parse_quantity(value).milli_value()
    except (ValueError, TypeError):
        # The API server never stores an invalid quantity; treat one as absent so a
        # single odd object cannot break the informer (it then reads as "missing request").
        return None


def _requests_of(raw_requests: Any) -> dict[str, int]:
    if not raw_requests:
        return {}
    out: dict[str, int] = {}
    for res, val in raw_requests.items():
        if isinstance(val, bool) or not isinstance(val, (str, int, float)):
            continue
        milli = _milli(val)
        if milli is not None:
            out[res] = milli
    return out


def _container_view(raw: Mapping[str, Any]) -> ContainerView:
    resources = raw.get("resources") or {}
    return ContainerView(
        name=str(raw.get("name", "")), requests=_requests_of(resources.get("requests"))
    )


def _containers(raw: Any) -> tuple[ContainerView, ...]:
    """The container views, one shared tuple per distinct (names, requests) list.

    Shared only when every request is a string (the API server's form): 1 and True
    are equal keys, and must not read the same.
    """
    if not raw:
        return ()
    try:
        key = tuple(_container_key(c) for c in raw)
    except (TypeError, AttributeError):  # odd values: not shared
        return tuple(_container_view(c) for c in raw)
    return _shared_containers(key)


def _container_key(raw: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    name = raw.get("name", "")
    requests = tuple(((raw.get("resources") or {}).get("requests") or {}).items())
    if type(name) is not str or any(type(v) is not str for _, v in requests):
        raise TypeError("not shared")
    return name, requests


@lru_cache(maxsize=8192)
def _shared_containers(
    key: tuple[tuple[str, tuple[tuple[str, str], ...]], ...],
) -> tuple[ContainerView, ...]:
    return tuple(
        ContainerView(name=sys.intern(name), requests=_requests_of(dict(requests)))
        for name, requests in key
    )


_LABEL_SETS_MAX = 65_536
_label_sets: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}


def _shared_labels(raw: Any) -> Mapping[str, str]:
    """One labels mapping per distinct label set (a ReplicaSet's pods share theirs).

    The table is bounded by emptying it when full: pods keep their mapping, only
    later pods stop sharing with earlier ones.
    """
    if not raw:
        return {}
    try:
        key = tuple(raw.items())
        shared = _label_sets.get(key)
    except (TypeError, AttributeError):  # unhashable values: keep as decoded
        return raw  # type: ignore[no-any-return]
    if shared is None:
        if len(_label_sets) >= _LABEL_SETS_MAX:
            _label_sets.clear()
        shared = {
            sys.intern(k) if isinstance(k, str) else k: sys.intern(v) if isinstance(v, str) else v
            for k, v in key
        }
        _label_sets[key] = shared
    return shared


def _parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    return _parse_time_text(text)


@lru_cache(maxsize=4096)
def _parse_time_text(text: str) -> datetime | None:
    """Cached: pods of a workload often start within the same second (shared datetimes)."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _is_supported_pod_level_resource(name: str) -> bool:
    """Go ``resourcehelpers.IsSupportedPodLevelResource``."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _add(into: dict[str, int], add: Mapping[str, int]) -> None:
    for res, val in add.items():
        into[res] = into.get(res, 0) + val


def _max_into(into: dict[str, int], other: Mapping[str, int]) -> None:
    for res, val in other.items():
        if res not in into or val > into[res]:
            into[res] = val


def _aggregate_container_requests(
    containers: Iterable[ContainerView], init_containers: Iterable[tuple[ContainerView, bool]]
) -> dict[str, int]:
    """Go ``resourcehelpers.AggregateContainerRequests`` (KEP-753 sidecar formula)."""
    reqs: dict[str, int] = {}
    for c in containers:
        _add(reqs, c.requests)
    restartable: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c, is_sidecar in init_containers:
        if is_sidecar:
            _add(reqs, c.requests)
            _add(restartable, c.requests)
            current = dict(restartable)
        else:
            current = dict(c.requests)
            _add(current, restartable)
        _max_into(init_max, current)
    _max_into(reqs, init_max)
    return reqs


def _pod_level_requests(
    spec: Mapping[str, Any],
    containers: tuple[ContainerView, ...],
    init_containers: list[tuple[ContainerView, bool]],
) -> dict[str, int] | None:
    pod_resources = spec.get("resources") or {}
    raw_pod_requests = pod_resources.get("requests") or {}
    if not any(_is_supported_pod_level_resource(r) for r in raw_pod_requests):
        return None
    reqs = _aggregate_container_requests(containers, init_containers)
    for res, milli in _requests_of(raw_pod_requests).items():
        if _is_supported_pod_level_resource(res):
            reqs[res] = milli
    overhead = spec.get("overhead")
    if overhead:
        _add(reqs, _requests_of(overhead))
    return reqs


def controller_uid(meta: Mapping[str, Any]) -> str:
    """The uid of the first ownerReference with ``controller: true`` ("" if none),
    interned (Go ``metav1.GetControllerOf``)."""
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return sys.intern(str(ref.get("uid") or ""))
    return ""


def pod_view_from_raw(raw: Mapping[str, Any]) -> PodView:
    """Project a raw Pod JSON object (as decoded from the API) into a :class:`PodView`."""
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}

    containers = _containers(spec.get("containers"))
    init_containers = [
        (_container_view(c), c.get("restartPolicy") == "Always")
        for c in spec.get("initContainers") or ()
    ]
    sidecars = tuple(c for c, is_sidecar in init_containers if is_sidecar)

    ready: bool | None = None
    ready_unknown = False
    ready_transition: datetime | None = None
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            cond_status = cond.get("status")
            ready = cond_status == "True"
            ready_unknown = cond_status not in ("True", "False")
            ready_transition = _parse_time(cond.get("lastTransitionTime"))
            break

    pod_requests = _pod_level_requests(spec, containers, init_containers) if spec else None

    return PodView(
        namespace=sys.intern(str(meta.get("namespace", ""))),
        name=str(meta.get("name", "")),
        labels=_shared_labels(meta.get("labels")),
        phase=sys.intern(str(status.get("phase", ""))),
        deleting=meta.get("deletionTimestamp") is not None,
        ready=ready,
        ready_transition=ready_transition,
        start_time=_parse_time(status.get("startTime")),
        containers=containers,
        sidecars=sidecars,
        pod_requests=pod_requests,
        ready_unknown=ready_unknown,
        node_name=sys.intern(str(spec.get("nodeName") or "")),
        owner_uid=controller_uid(meta),
    )
