"""Pod topology spread constraints of a pod template, and the skew they observe.

``spread_from_template(template) -> PodSpread | None``
    The compact form of ``spec.topologySpreadConstraints`` (None when there are none):
    each constraint's ``maxSkew``, ``topologyKey``, ``whenUnsatisfiable``,
    ``minDomains``, ``nodeAffinityPolicy`` / ``nodeTaintsPolicy`` and its pod selector
    (``labelSelector``, with ``matchLabelKeys`` turned into ``key in (value)`` from
    the template's own labels, as kube-scheduler merges them for an incoming pod; a key
    the template does not carry, e.g. a Deployment's ``pod-template-hash``, is left
    out). Plus what decides which nodes count (``nodeAffinityPolicy: Honor``): the
    template's ``nodeSelector`` and required node affinity.

``observed_skew(spread, nodes, pods) -> tuple[ConstraintSkew, ...]``
    kube-scheduler's PodTopologySpread counting, for the pods as they are: the eligible
    nodes are those that carry every constraint's topology key and, under
    ``nodeAffinityPolicy: Honor`` (the default), match the template's node selector and
    required node affinity; each eligible node's value of the key is a domain (counted
    from 0); a pod counts in its node's domain when it is scheduled there, not
    terminating and matches the constraint's selector. Skew = the largest count minus
    the smallest, the smallest being 0 when there are fewer domains than
    ``minDomains``. ``nodeTaintsPolicy: Honor`` is treated as ``Ignore``: nodes are
    known by name and labels only.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hpactl.model.selectors import Requirement, Selector, selector_from_label_selector

__all__ = [
    "ConstraintSkew",
    "NodeLabels",
    "PodPlacement",
    "PodSpread",
    "SpreadConstraint",
    "observed_skew",
    "skew_by_key",
    "spread_from_template",
]

_NODE_OPERATORS = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
    "Gt": "gt",
    "Lt": "lt",
}


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: Selector
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"


@dataclass(frozen=True, slots=True)
class PodSpread:
    constraints: tuple[SpreadConstraint, ...]
    node_selector: Selector = field(default_factory=Selector.everything)
    # Required node affinity: ORed terms of ANDed requirements; () = no affinity.
    node_affinity: tuple[Selector, ...] = ()

    @property
    def topology_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.topology_key for c in self.constraints))

    def node_matches(self, labels: Mapping[str, str]) -> bool:
        if not self.node_selector.matches(labels):
            return False
        return not self.node_affinity or any(t.matches(labels) for t in self.node_affinity)


@dataclass(frozen=True, slots=True)
class NodeLabels:
    name: str
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class PodPlacement:
    """A pod as the count needs it: labels, node (``""`` = not scheduled), terminating."""

    labels: Mapping[str, str]
    node_name: str
    deleting: bool = False


@dataclass(frozen=True, slots=True)
class ConstraintSkew:
    constraint: SpreadConstraint
    skew: int
    # domain value -> matching pods, every eligible domain listed (sorted by value)
    counts: tuple[tuple[str, int], ...]

    @property
    def exceeded(self) -> bool:
        return self.skew > self.constraint.max_skew


def _int(v: Any, default: int | None) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _constraint(raw: Mapping[str, Any], template_labels: Mapping[str, str]) -> SpreadConstraint:
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise ValueError("topologySpreadConstraints[].topologyKey is required")
    selector = selector_from_label_selector(raw.get("labelSelector"))
    keys = raw.get("matchLabelKeys") or ()
    if not selector.is_nothing:
        extra = [
            Requirement.new(k, "in", [template_labels[k]])
            for k in keys
            if isinstance(k, str) and k in template_labels
        ]
        if extra:
            selector = selector.add(*extra)
    return SpreadConstraint(
        max_skew=_int(raw.get("maxSkew"), 1) or 1,
        topology_key=key,
        when_unsatisfiable=str(raw.get("whenUnsatisfiable") or "DoNotSchedule"),
        selector=selector,
        min_domains=_int(raw.get("minDomains"), None),
        node_affinity_policy=str(raw.get("nodeAffinityPolicy") or "Honor"),
        node_taints_policy=str(raw.get("nodeTaintsPolicy") or "Ignore"),
    )


def _node_term(term: Mapping[str, Any]) -> Selector:
    reqs = []
    for e in term.get("matchExpressions") or ():
        op = _NODE_OPERATORS.get(str(e.get("operator")))
        if op is None:
            raise ValueError(f"unknown node selector operator {e.get('operator')!r}")
        reqs.append(
            Requirement.new(str(e.get("key", "")), op, [str(v) for v in e.get("values") or ()])
        )
    return Selector(reqs)


def spread_from_template(template: Mapping[str, Any] | None) -> PodSpread | None:
    """See the module docstring; ValueError for a constraint the API would not store."""
    if not isinstance(template, Mapping):
        return None
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return None
    raw = spec.get("topologySpreadConstraints")
    if not raw:
        return None
    labels = (template.get("metadata") or {}).get("labels") or {}
    constraints = tuple(_constraint(c, labels) for c in raw if isinstance(c, Mapping))
    if not constraints:
        return None
    node_selector = Selector.from_set(spec.get("nodeSelector") or None)
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = tuple(
        _node_term(t) for t in required.get("nodeSelectorTerms") or () if isinstance(t, Mapping)
    )
    return PodSpread(constraints, node_selector, terms)


def observed_skew(
    spread: PodSpread, nodes: Iterable[NodeLabels], pods: Iterable[PodPlacement]
) -> tuple[ConstraintSkew, ...]:
    """See the module docstring. Pods are those of the target's namespace."""
    all_keys = spread.topology_keys
    node_list = [n for n in nodes if all(k in n.labels for k in all_keys)]
    pod_list = [p for p in pods if p.node_name and not p.deleting]
    out: list[ConstraintSkew] = []
    for c in spread.constraints:
        honor = c.node_affinity_policy != "Ignore"
        domain_of = {
            n.name: n.labels[c.topology_key]
            for n in node_list
            if not honor or spread.node_matches(n.labels)
        }
        counts = dict.fromkeys(sorted(set(domain_of.values())), 0)
        for p in pod_list:
            domain = domain_of.get(p.node_name)
            if domain is not None and c.selector.matches(p.labels):
                counts[domain] += 1
        if counts:
            low = min(counts.values())
            if c.min_domains is not None and len(counts) < c.min_domains:
                low = 0
            skew = max(counts.values()) - low
        else:
            skew = 0
        out.append(ConstraintSkew(c, skew, tuple(counts.items())))
    return tuple(out)


def skew_by_key(skews: Iterable[ConstraintSkew]) -> dict[str, int]:
    """The largest skew of each topology key (several constraints may share one)."""
    out: dict[str, int] = {}
    for s in skews:
        key = s.constraint.topology_key
        out[key] = max(out.get(key, 0), s.skew)
    return out
