"""Which pods a ReplicaSet deletes first on a scale-down.

A pure copy of the order of upstream's ``controller.ActivePodsWithRanks`` as the
ReplicaSet controller uses it (``getPodsToDelete`` /
``getPodsRankedByRelatedPodsOnSameNode``), with the ``PodDeletionCost`` and
``LogarithmicScaleDown`` features on (their defaults). Pod A goes before pod B when,
at the first rule that tells them apart:

1. A is not assigned to a node and B is;
2. A's phase comes first in Pending < Unknown < Running;
3. A is not Ready and B is;
4. A's ``controller.kubernetes.io/pod-deletion-cost`` annotation is lower (absent or
   not an int32: 0);
5. A's node runs more active pods of the same owner than B's (the "rank": related
   pods on the same node; unassigned pods share one count);
6. both are Ready and A turned Ready more recently, compared in logarithmic buckets
   of the time since then (``floor(log2(nanoseconds))``); within one bucket the
   lower UID goes first;
7. A has a container with more restarts than any of B's;
8. A was created more recently, in the same logarithmic buckets (same bucket: the
   lower UID first).

Upstream's UIDs are random, so its order within a bucket is random. The pods the
workload model creates get UIDs from the emulator (random too), so here the pod
*name* stands in for the UID: the order is the same kind of arbitrary, but repeatable.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from hpactl.model.times import parse_time

__all__ = ["DELETION_COST_ANNOTATION", "deletion_order", "pods_to_delete"]

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_INT = re.compile(r"[+-]?[0-9]+")

Pod = Mapping[str, Any]


def _meta(p: Pod) -> Mapping[str, Any]:
    return p.get("metadata") or {}


def _status(p: Pod) -> Mapping[str, Any]:
    return p.get("status") or {}


def _node(p: Pod) -> str:
    return str((p.get("spec") or {}).get("nodeName") or "")


def _active(p: Pod) -> bool:
    """Go ``controller.IsPodActive``."""
    return _status(p).get("phase") not in ("Succeeded", "Failed") and not _meta(p).get(
        "deletionTimestamp"
    )


def _ready_condition(p: Pod) -> Mapping[str, Any] | None:
    for c in _status(p).get("conditions") or []:
        if c.get("type") == "Ready":
            return c  # type: ignore[no-any-return]
    return None


def _ready(p: Pod) -> bool:
    c = _ready_condition(p)
    return c is not None and c.get("status") == "True"


def _time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None


def _ready_time(p: Pod) -> datetime | None:
    c = _ready_condition(p)
    return _time(c.get("lastTransitionTime")) if c is not None and _ready(p) else None


def deletion_cost(p: Pod) -> int:
    """The annotation as Go ``GetDeletionCostFromPodAnnotations`` reads it (0 when
    absent or invalid)."""
    raw = (_meta(p).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    if not isinstance(raw, str) or not _INT.fullmatch(raw):
        return 0
    v = int(raw)
    return v if -(2**31) <= v < 2**31 else 0


def _restarts(p: Pod) -> int:
    return max(
        (int(c.get("restartCount") or 0) for c in _status(p).get("containerStatuses") or []),
        default=0,
    )


def _log_rank(t: datetime, now: datetime) -> int:
    d = now - t
    ns = (d.days * 86400 + d.seconds) * 1_000_000_000 + d.microseconds * 1000
    return int(math.log2(float(ns))) if ns > 0 else -1


def _after_or_zero(t1: datetime | None, t2: datetime | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _uid(p: Pod) -> str:
    return str(_meta(p).get("name") or "")


def _by_time(
    a: Pod, b: Pod, ta: datetime | None, tb: datetime | None, now: datetime | None
) -> bool:
    """Rules 6 and 8: more recent first, in logarithmic buckets."""
    if now is None or ta is None or tb is None:
        return _after_or_zero(ta, tb)
    diff = _log_rank(ta, now) - _log_rank(tb, now)
    if diff == 0:
        return _uid(a) < _uid(b)
    return diff < 0


def _less(a: Pod, b: Pod, rank_a: int, rank_b: int, now: datetime | None) -> bool:
    """Go ``ActivePodsWithRanks.Less``: whether `a` should be deleted before `b`."""
    na, nb = _node(a), _node(b)
    if na != nb and (not na or not nb):
        return not na
    pa = _PHASE_ORDINAL.get(str(_status(a).get("phase") or ""), 0)
    pb = _PHASE_ORDINAL.get(str(_status(b).get("phase") or ""), 0)
    if pa != pb:
        return pa < pb
    ra, rb = _ready(a), _ready(b)
    if ra != rb:
        return not ra
    ca, cb = deletion_cost(a), deletion_cost(b)
    if ca != cb:
        return ca < cb
    if rank_a != rank_b:
        return rank_a > rank_b
    if ra and rb:
        ta, tb = _ready_time(a), _ready_time(b)
        if ta != tb:
            return _by_time(a, b, ta, tb, now)
    xa, xb = _restarts(a), _restarts(b)
    if xa != xb:
        return xa > xb
    ca_t = _time(_meta(a).get("creationTimestamp"))
    cb_t = _time(_meta(b).get("creationTimestamp"))
    if ca_t != cb_t:
        return _by_time(a, b, ca_t, cb_t, now)
    return False


def deletion_order(pods: Sequence[Pod], related: Sequence[Pod], now: datetime | None) -> list[Pod]:
    """`pods` sorted deleted-first. `related` are all the owner's pods (for the
    rank: active related pods on each pod's node); `now` the reference time of the
    logarithmic comparison (None: plain newest-first)."""
    on_node: dict[str, int] = {}
    for p in related:
        if _active(p):
            on_node[_node(p)] = on_node.get(_node(p), 0) + 1
    ranked = [(p, on_node.get(_node(p), 0)) for p in pods]

    def cmp(x: tuple[Pod, int], y: tuple[Pod, int]) -> int:
        if _less(x[0], y[0], x[1], y[1], now):
            return -1
        if _less(y[0], x[0], y[1], x[1], now):
            return 1
        return 0

    return [p for p, _ in sorted(ranked, key=functools.cmp_to_key(cmp))]


def pods_to_delete(pods: Sequence[Pod], n: int, now: datetime | None) -> list[Pod]:
    """The `n` pods a ReplicaSet with these (active) pods deletes."""
    if n >= len(pods):
        return list(pods)
    return deletion_order(pods, pods, now)[:n]
