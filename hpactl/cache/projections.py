"""Projections of raw workload objects to what their ``/scale`` subresource reports.

The HPA controller reads a target's scale (spec.replicas, status.replicas, the
selector string). For the built-in kinds hpactl reads the same values from informer
caches instead of a GET per sync, so the projection must give exactly what the API
server's scale subresource would:

* Deployment, ReplicaSet, StatefulSet (``registry/apps/*/storage``, ``scaleFrom*``):
  ``metav1.LabelSelectorAsSelector(spec.selector).String()``.
* ReplicationController (``registry/core/replicationcontroller/storage``,
  ``scaleFromRC``): ``labels.SelectorFromSet(spec.selector).String()``.

Besides the scale, a workload keeps its pod template's topology spread constraints
in compact form (``spread``, :mod:`hpactl.model.topology`), for the skew report after
a rescale; Nodes are projected to their name and labels (``node_labels_from_raw``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hpactl.model.pod import controller_uid
from hpactl.model.topology import NodeLabels, PodSpread, spread_from_template

__all__ = [
    "WORKLOAD_KINDS",
    "WorkloadKind",
    "WorkloadScale",
    "intern_strings",
    "node_labels_from_raw",
    "workload_projection",
    "workload_scale_from_raw",
]


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    """A built-in scalable kind and where the API serves it."""

    kind: str
    group: str
    version: str
    resource: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


WORKLOAD_KINDS: Mapping[str, WorkloadKind] = {
    k.kind: k
    for k in (
        WorkloadKind("Deployment", "apps", "v1", "deployments"),
        WorkloadKind("ReplicaSet", "apps", "v1", "replicasets"),
        WorkloadKind("StatefulSet", "apps", "v1", "statefulsets"),
        WorkloadKind("ReplicationController", "", "v1", "replicationcontrollers"),
    )
}


@dataclass(frozen=True, slots=True)
class WorkloadScale:
    """What ``GET .../<kind>/<name>/scale`` would return, from the cached object."""

    namespace: str
    name: str
    kind: str
    spec_replicas: int
    status_replicas: int
    selector: str
    generation: int
    resource_version: str
    uid: str = ""
    # The pod template's topologySpreadConstraints, compact (None: there are none).
    spread: PodSpread | None = None
    # The uid of the controller ownerReference (a ReplicaSet's Deployment), for the
    # OwnerReference pod selection strategy (KEP-5325); "" if none.
    owner_uid: str = ""


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def _set_selector_string(match_labels: Mapping[str, Any] | None) -> str:
    """Go ``labels.SelectorFromSet(set).String()``: ``k=v`` pairs sorted by key."""
    if not match_labels:
        return ""
    return ",".join(f"{k}={match_labels[k]}" for k in sorted(match_labels))


def _label_selector_string(raw: Any) -> str:
    """Go ``metav1.LabelSelectorAsSelector(sel).String()`` (ValueError if invalid)."""
    if raw is None:
        return ""  # labels.Nothing().String() is ""
    if not isinstance(raw, Mapping):
        raise ValueError(f"spec.selector is not an object: {raw!r}")
    if not raw.get("matchExpressions"):
        # The common case, kept off the general parser: map-only selectors print
        # exactly like SelectorFromSet (sorted ``k=v``).
        return _set_selector_string(raw.get("matchLabels"))
    from hpactl.model.selectors import selector_from_label_selector

    return str(selector_from_label_selector(raw))


def workload_scale_from_raw(kind: str, raw: Mapping[str, Any]) -> WorkloadScale:
    """Project a raw Deployment/ReplicaSet/StatefulSet/ReplicationController."""
    if kind not in WORKLOAD_KINDS:
        raise ValueError(f"unsupported workload kind {kind!r}")
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    if kind == "ReplicationController":
        sel = spec.get("selector")
        if sel is not None and not isinstance(sel, Mapping):
            raise ValueError(f"spec.selector is not an object: {sel!r}")
        selector = _set_selector_string(sel)
    else:
        selector = _label_selector_string(spec.get("selector"))
    return WorkloadScale(
        namespace=sys.intern(str(meta.get("namespace") or "")),
        name=str(meta.get("name") or ""),
        kind=kind,
        # The API server defaults spec.replicas to 1 for all four kinds.
        spec_replicas=_int(spec.get("replicas"), 1),
        status_replicas=_int(status.get("replicas"), 0),
        selector=selector,
        generation=_int(meta.get("generation"), 0),
        resource_version=str(meta.get("resourceVersion") or ""),
        uid=str(meta.get("uid") or ""),
        spread=_spread(spec.get("template")),
        owner_uid=controller_uid(meta),
    )


def _spread(template: Any) -> PodSpread | None:
    """The template's spread constraints; one the API would not have stored (it is
    only reported on, never decided by) is left out rather than failing the scale."""
    try:
        return spread_from_template(template)
    except (ValueError, TypeError, AttributeError):
        return None


def intern_strings(node: Any) -> Any:
    """`node` (decoded JSON) with every string, key or value, interned.

    For the parts of an object whose strings repeat across objects (an HPA's spec:
    kinds, API versions, metric types and names): the cached projections then share
    one copy of each instead of holding the ones the JSON decoder made per object.
    """
    if isinstance(node, str):
        return sys.intern(node)
    if isinstance(node, dict):
        return {
            sys.intern(k) if isinstance(k, str) else k: intern_strings(v) for k, v in node.items()
        }
    if isinstance(node, list):
        return [intern_strings(v) for v in node]
    return node


def node_labels_from_raw(raw: Mapping[str, Any]) -> NodeLabels:
    """A Node, projected to its name and labels (all the skew report needs)."""
    meta = raw.get("metadata") or {}
    labels = meta.get("labels") or {}
    return NodeLabels(
        name=str(meta.get("name") or ""),
        labels={sys.intern(str(k)): sys.intern(str(v)) for k, v in labels.items()},
    )


def workload_projection(kind: str) -> Callable[[Mapping[str, Any]], WorkloadScale]:
    """A store projection for one workload kind."""
    if kind not in WORKLOAD_KINDS:
        raise ValueError(f"unsupported workload kind {kind!r}")

    def project(raw: Mapping[str, Any]) -> WorkloadScale:
        return workload_scale_from_raw(kind, raw)

    return project
