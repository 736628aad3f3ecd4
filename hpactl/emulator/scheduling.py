"""Where a new pod goes: kube-scheduler's filters and scores for a scenario's nodes.

Pure functions over raw Pod objects and :class:`Node` values; the workload model
(`workload.py`) calls :func:`place` for each pod it creates and for each pod still
Pending. What is modelled, with upstream's semantics:

Filters (a node must pass all, checked in kube-scheduler's plugin order; the first
that fails gives the node's reason):

* TaintToleration: every ``NoSchedule``/``NoExecute`` taint is tolerated
  (``node(s) had untolerated taint {key: value}``);
* NodeAffinity: ``spec.nodeSelector`` and the required node affinity terms
  (``node(s) didn't match Pod's node affinity/selector``);
* NodeResourcesFit: the pod's requests fit the allocatable (= ``capacity``) minus the
  requests of the pods already there (``Insufficient cpu``), and one more pod fits
  the ``pods`` count (``Too many pods``);
* PodTopologySpread, ``whenUnsatisfiable: DoNotSchedule`` constraints: the node has
  every constraint's topology key (``... (missing required label)``), and for each
  constraint ``matching pods in the node's domain + (1 if the pod matches its own
  selector) - global minimum <= maxSkew``. Domains and counts come from the nodes
  that have all the keys and pass the constraint's ``nodeAffinityPolicy`` (default
  Honor: the pod's node selector/affinity) and ``nodeTaintsPolicy`` (default Ignore;
  Honor drops nodes with untolerated taints); counted pods are scheduled, not
  terminating, in the pod's namespace and match ``labelSelector`` plus
  ``matchLabelKeys`` (the pod's values for those keys; an empty selector counts
  nothing, as upstream's ``countPodsMatchSelector``). The global minimum is the
  smallest domain count, or 0 when there are fewer domains than ``minDomains``
  (default 1).

When no node passes, the pod stays Pending with kube-scheduler's message
(``0/6 nodes are available: 3 Insufficient cpu, 3 node(s) didn't match pod topology
spread constraints.``).

Choice among the nodes that pass (kube-scheduler sums weighted plugin scores and
picks at random among the best; here, a fixed order so that runs repeat):

1. the smallest skew after placing the pod, summed over all the pod's spread
   constraints (``DoNotSchedule`` ones and ``ScheduleAnyway`` ones, the latter only
   ever as this preference);
2. the highest PodTopologySpread score of the ``ScheduleAnyway`` constraints, as
   upstream computes it (per domain ``matching pods * log(domains + 2) + maxSkew -
   1``, normalized to 0..100 with the lowest count best);
3. the fewest matching pods in the node's domains (summed over the constraints);
4. the fewest untolerated ``PreferNoSchedule`` taints;
5. the least allocated node (mean of requested/allocatable over cpu and memory
   after placing the pod; nodes without those capacities count 0), then the fewest
   pods on it;
6. the node name.

Not modelled: kube-scheduler's default spreading of pods without constraints
(the least-allocated order spreads them over equal nodes anyway), inter-pod
(anti-)affinity, preemption, ports and volumes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hpactl.model.quantity import format_milli, parse_quantity
from hpactl.model.selectors import (
    Requirement,
    Selector,
    selector_from_label_selector,
)

__all__ = [
    "DEFAULT_MAX_PODS",
    "HOSTNAME_LABEL",
    "ZONE_LABEL",
    "Node",
    "Placement",
    "SpreadConstraint",
    "Taint",
    "node_object",
    "place",
    "pod_requests",
    "spread_constraints",
    "spread_report",
]

Obj = dict[str, Any]
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_MAX_PODS = 110  # the kubelet's default --max-pods
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
MAX_NODE_SCORE = 100
_MAX_INT32 = 2**31 - 1
_FIT_RESOURCES = ("cpu", "memory")

# Filter reasons, as kube-scheduler words them.
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
REASON_TOO_MANY_PODS = "Too many pods"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute
    value: str = ""


@dataclass(frozen=True, slots=True)
class Node:
    """A scenario node. ``capacity`` is in milli-units per resource (cpu, memory);
    a resource it does not list is not limited. ``max_pods`` is the pod count."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, int] = field(default_factory=dict)
    max_pods: int = DEFAULT_MAX_PODS
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True, slots=True)
class Placement:
    """The node chosen, or None and the reason the pod stays Pending."""

    node: str | None
    message: str = ""


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A topologySpreadConstraint with its selector resolved (``matchLabelKeys``
    merged in from the pod's labels) and defaults applied."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


# ---------------------------------------------------------------------- pod fields


def _milli(v: Any) -> int:
    try:
        return parse_quantity(v).milli_value()
    except (ValueError, TypeError):
        return 0


def _requests(c: Mapping[str, Any]) -> dict[str, int]:
    raw = ((c.get("resources") or {}).get("requests")) or {}
    return {str(k): _milli(v) for k, v in raw.items()}


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """What the scheduler reserves for a pod, in milli-units (``PodRequests``): the
    containers' requests, the init containers' (sidecar formula), pod-level requests
    for cpu/memory when set, plus the pod overhead."""
    spec = pod.get("spec") or {}
    reqs: dict[str, int] = {}
    for c in spec.get("containers") or []:
        _add(reqs, _requests(c))
    restartable: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in spec.get("initContainers") or []:
        r = _requests(c)
        if c.get("restartPolicy") == "Always":
            _add(reqs, r)
            _add(restartable, r)
            current = dict(restartable)
        else:
            current = dict(r)
            _add(current, restartable)
        _max_into(init_max, current)
    _max_into(reqs, init_max)
    pod_level = ((spec.get("resources") or {}).get("requests")) or {}
    for k in _FIT_RESOURCES:
        if k in pod_level:
            reqs[k] = _milli(pod_level[k])
    overhead = spec.get("overhead") or {}
    _add(reqs, {str(k): _milli(v) for k, v in overhead.items()})
    return reqs


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def node_name_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


# ---------------------------------------------------------------------- taints


def _tolerates(tol: Mapping[str, Any], taint: Taint) -> bool:
    """Go ``Toleration.ToleratesTaint``."""
    effect = tol.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = tol.get("key") or ""
    if key and key != taint.key:
        return False
    op = tol.get("operator") or "Equal"
    if op == "Equal":
        return str(tol.get("value") or "") == taint.value
    return op == "Exists"


def _untolerated(node: Node, pod: Mapping[str, Any], effects: tuple[str, ...]) -> list[Taint]:
    """The node's taints with one of `effects` that the pod does not tolerate."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    return [
        t
        for t in node.taints
        if t.effect in effects and not any(_tolerates(tol, t) for tol in tolerations)
    ]


_DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")


# ---------------------------------------------------------------------- node affinity


def _node_requirement_matches(
    expr: Mapping[str, Any], labels: Mapping[str, str], name: str, *, field: bool
) -> bool:
    key = str(expr.get("key") or "")
    op = str(expr.get("operator") or "")
    values = [str(v) for v in expr.get("values") or []]
    if field:
        # Only metadata.name is supported as a field, with In/NotIn and one value.
        if key != "metadata.name" or len(values) != 1 or op not in ("In", "NotIn"):
            return False
        return (name == values[0]) == (op == "In")
    ops = {
        "In": "in",
        "NotIn": "notin",
        "Exists": "exists",
        "DoesNotExist": "!",
        "Gt": "gt",
        "Lt": "lt",
    }
    if op not in ops:
        return False
    try:
        req = Requirement.new(key, ops[op], values)
    except ValueError:
        return False  # upstream ignores terms that do not parse: they match nothing
    return req.matches(labels)


def matches_node_affinity(pod: Mapping[str, Any], node: Node) -> bool:
    """Go ``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)``: the node selector
    and the required terms (ORed; each term's expressions and fields ANDed)."""
    spec = pod.get("spec") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if node.labels.get(k) != str(v):
            return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    ) or None
    if required is None:
        return True
    for term in required.get("nodeSelectorTerms") or []:
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not exprs and not fields:
            continue  # an empty term matches no objects
        if all(
            _node_requirement_matches(e, node.labels, node.name, field=False) for e in exprs
        ) and all(_node_requirement_matches(f, node.labels, node.name, field=True) for f in fields):
            return True
    return False


# ---------------------------------------------------------------------- spread constraints


def spread_constraints(pod: Mapping[str, Any], when: str | None = None) -> list[SpreadConstraint]:
    """The pod's ``topologySpreadConstraints`` (those with ``whenUnsatisfiable ==
    when``, or all), resolved as the scheduler resolves them. A selector that does
    not parse matches nothing."""
    spec = pod.get("spec") or {}
    labels = _labels(pod)
    out: list[SpreadConstraint] = []
    for c in spec.get("topologySpreadConstraints") or []:
        action = str(c.get("whenUnsatisfiable") or DO_NOT_SCHEDULE)
        if when is not None and action != when:
            continue
        try:
            sel = selector_from_label_selector(c.get("labelSelector"))
        except ValueError:
            sel = Selector.nothing()
        keys = [k for k in c.get("matchLabelKeys") or [] if k in labels]
        if keys and not sel.is_nothing:
            try:
                sel = sel.add(*(Requirement.new(k, "=", (str(labels[k]),)) for k in keys))
            except ValueError:
                sel = Selector.nothing()
        min_domains = c.get("minDomains")
        out.append(
            SpreadConstraint(
                max_skew=int(c.get("maxSkew") or 1),
                topology_key=str(c.get("topologyKey") or ""),
                when_unsatisfiable=action,
                selector=sel,
                min_domains=int(min_domains) if isinstance(min_domains, int) else 1,
                node_affinity_policy=str(c.get("nodeAffinityPolicy") or HONOR),
                node_taints_policy=str(c.get("nodeTaintsPolicy") or IGNORE),
            )
        )
    return out


def _included(c: SpreadConstraint, pod: Mapping[str, Any], node: Node) -> bool:
    """``matchNodeInclusionPolicies``: whether the node's domain counts for `c`."""
    if c.node_affinity_policy == HONOR and not matches_node_affinity(pod, node):
        return False
    return not (c.node_taints_policy == HONOR and _untolerated(node, pod, _DO_NOT_SCHEDULE_EFFECTS))


def _has_keys(node: Node, constraints: Sequence[SpreadConstraint]) -> bool:
    return all(c.topology_key in node.labels for c in constraints)


def _count_matching(pods: Iterable[Mapping[str, Any]], sel: Selector, namespace: str) -> int:
    """Go ``countPodsMatchSelector``: an empty selector counts nothing."""
    if sel.empty():
        return 0
    return sum(
        1
        for p in pods
        if not _terminating(p) and _namespace(p) == namespace and sel.matches(_labels(p))
    )


def _domain_counts(
    pod: Mapping[str, Any],
    constraints: Sequence[SpreadConstraint],
    nodes: Sequence[Node],
    by_node: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[dict[str, int]]:
    """Per constraint: eligible domain -> matching pods (PreFilter's counting)."""
    ns = _namespace(pod)
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for node in nodes:
        if not _has_keys(node, constraints):
            continue
        for i, c in enumerate(constraints):
            if not _included(c, pod, node):
                continue
            domain = node.labels[c.topology_key]
            n = _count_matching(by_node.get(node.name, ()), c.selector, ns)
            counts[i][domain] = counts[i].get(domain, 0) + n
    return counts


def _global_min(counts: Mapping[str, int], min_domains: int) -> int:
    if len(counts) < min_domains:
        return 0
    return min(counts.values()) if counts else _MAX_INT32


# ---------------------------------------------------------------------- placing a pod


def _pods_by_node(pods: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for p in pods:
        name = node_name_of(p)
        if name and not _terminal(p):
            by_node.setdefault(name, []).append(p)
    return by_node


def _fit_reasons(
    node: Node, request: Mapping[str, int], on_node: Sequence[Mapping[str, Any]]
) -> list[str]:
    reasons = []
    if len(on_node) + 1 > node.max_pods:
        reasons.append(REASON_TOO_MANY_PODS)
    used: dict[str, int] = {}
    for p in on_node:
        _add(used, pod_requests(p))
    for res in sorted(request):
        want = request[res]
        if want <= 0 or res not in node.capacity:
            continue
        if want > node.capacity[res] - used.get(res, 0):
            reasons.append(f"Insufficient {res}")
    return reasons


def _allocated(
    node: Node, request: Mapping[str, int], on_node: Sequence[Mapping[str, Any]]
) -> float:
    used: dict[str, int] = dict(request)
    for p in on_node:
        _add(used, pod_requests(p))
    shares = [
        used.get(r, 0) / node.capacity[r] for r in _FIT_RESOURCES if node.capacity.get(r, 0) > 0
    ]
    return sum(shares) / len(shares) if shares else 0.0


def _spread_scores(
    pod: Mapping[str, Any],
    feasible: Sequence[Node],
    nodes: Sequence[Node],
    by_node: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, int]:
    """PodTopologySpread's normalized Score for the ScheduleAnyway constraints."""
    constraints = spread_constraints(pod, SCHEDULE_ANYWAY)
    if not constraints:
        return {n.name: 0 for n in feasible}
    ns = _namespace(pod)
    ignored = {n.name for n in feasible if not _has_keys(n, constraints)}
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for n in feasible:
        if n.name in ignored:
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != HOSTNAME_LABEL:
                counts[i].setdefault(n.labels[c.topology_key], 0)
    weights = []
    for i, c in enumerate(constraints):
        size = len(feasible) - len(ignored) if c.topology_key == HOSTNAME_LABEL else len(counts[i])
        weights.append(math.log(size + 2))
    for n in nodes:
        if not _has_keys(n, constraints):
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME_LABEL or not _included(c, pod, n):
                continue
            domain = n.labels[c.topology_key]
            if domain in counts[i]:
                counts[i][domain] += _count_matching(by_node.get(n.name, ()), c.selector, ns)
    raw: dict[str, int] = {}
    for n in feasible:
        if n.name in ignored:
            continue
        score = 0.0
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME_LABEL:
                cnt = _count_matching(by_node.get(n.name, ()), c.selector, ns)
            else:
                cnt = counts[i][n.labels[c.topology_key]]
            score += cnt * weights[i] + (c.max_skew - 1)
        raw[n.name] = _go_round(score)
    out = {n: 0 for n in ignored}
    if raw:
        lo, hi = min(raw.values()), max(raw.values())
        for name, s in raw.items():
            out[name] = MAX_NODE_SCORE if hi == 0 else MAX_NODE_SCORE * (hi + lo - s) // hi
    return out


def _go_round(x: float) -> int:
    """Go ``math.Round``: half away from zero."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _skew_after(
    pod: Mapping[str, Any],
    node: Node,
    constraints: Sequence[SpreadConstraint],
    counts: Sequence[Mapping[str, int]],
) -> int:
    """Sum over the constraints of max - global min once the pod is on `node`."""
    total = 0
    labels = _labels(pod)
    for c, cnt in zip(constraints, counts, strict=True):
        after = dict(cnt)
        domain = node.labels.get(c.topology_key)
        if domain is not None and domain in after and c.selector.matches(labels):
            after[domain] += 1
        if after:
            total += max(after.values()) - _global_min(after, c.min_domains)
    return total


def place(
    pod: Mapping[str, Any], nodes: Sequence[Node], pods: Iterable[Mapping[str, Any]]
) -> Placement:
    """Where kube-scheduler would bind `pod`, given the cluster's `pods` (any
    namespace; those with a ``spec.nodeName`` occupy their node)."""
    if not nodes:
        return Placement(None, "no nodes available to schedule pods")
    by_node = _pods_by_node(pods)
    request = pod_requests(pod)
    hard = spread_constraints(pod, DO_NOT_SCHEDULE)
    hard_counts = _domain_counts(pod, hard, nodes, by_node)
    labels = _labels(pod)
    reasons: dict[str, int] = {}
    feasible: list[Node] = []
    for node in nodes:
        failed = _filter(pod, node, request, by_node.get(node.name, ()), hard, hard_counts, labels)
        for r in failed:
            reasons[r] = reasons.get(r, 0) + 1
        if not failed:
            feasible.append(node)
    if not feasible:
        text = ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
        return Placement(None, f"0/{len(nodes)} nodes are available: {text}.")
    everything = spread_constraints(pod)
    all_counts = _split_counts(pod, everything, nodes, by_node)
    spread = _spread_scores(pod, feasible, nodes, by_node)

    def key(node: Node) -> tuple[int, int, int, int, float, int, str]:
        on_node = by_node.get(node.name, ())
        in_domains = sum(
            cnt.get(node.labels.get(c.topology_key, ""), 0)
            for c, cnt in zip(everything, all_counts, strict=True)
        )
        prefer_no = len(_untolerated(node, pod, ("PreferNoSchedule",)))
        return (
            _skew_after(pod, node, everything, all_counts),
            -spread.get(node.name, 0),
            in_domains,
            prefer_no,
            _allocated(node, request, on_node),
            len(on_node),
            node.name,
        )

    return Placement(min(feasible, key=key).name)


def _split_counts(
    pod: Mapping[str, Any],
    constraints: Sequence[SpreadConstraint],
    nodes: Sequence[Node],
    by_node: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[dict[str, int]]:
    """Domain counts for each constraint, in order, each computed among the
    constraints of its own kind (filtering requires every DoNotSchedule key on a
    node, scoring every ScheduleAnyway key)."""
    kinds = {c.when_unsatisfiable for c in constraints}
    per_kind = {
        when: iter(
            _domain_counts(
                pod, [c for c in constraints if c.when_unsatisfiable == when], nodes, by_node
            )
        )
        for when in kinds
    }
    return [next(per_kind[c.when_unsatisfiable]) for c in constraints]


def _filter(
    pod: Mapping[str, Any],
    node: Node,
    request: Mapping[str, int],
    on_node: Sequence[Mapping[str, Any]],
    hard: Sequence[SpreadConstraint],
    hard_counts: Sequence[Mapping[str, int]],
    labels: Mapping[str, str],
) -> list[str]:
    """The reasons the node is refused (empty: it passes)."""
    untolerated = _untolerated(node, pod, _DO_NOT_SCHEDULE_EFFECTS)
    if untolerated:
        taint = untolerated[0]
        return [f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"]
    if not matches_node_affinity(pod, node):
        return [REASON_AFFINITY]
    fit = _fit_reasons(node, request, on_node)
    if fit:
        return fit
    for c, counts in zip(hard, hard_counts, strict=True):
        domain = node.labels.get(c.topology_key)
        if domain is None:
            return [REASON_SPREAD_LABEL]
        self_match = 1 if c.selector.matches(labels) else 0
        if counts.get(domain, 0) + self_match - _global_min(counts, c.min_domains) > c.max_skew:
            return [REASON_SPREAD]
    return []


# ---------------------------------------------------------------------- reporting


def spread_report(
    template: Mapping[str, Any], nodes: Sequence[Node], pods: Iterable[Mapping[str, Any]]
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """For each topology key of `template`'s spread constraints (the first constraint
    naming it): its eligible domains with the scheduled pods matching the constraint's
    selector, and the skew (max - min over those domains; 0 without domains).
    Eligible domains are those the scheduler counts for the constraint."""
    constraints = spread_constraints(template)
    counts = _split_counts(template, constraints, nodes, _pods_by_node(pods))
    topology: dict[str, dict[str, int]] = {}
    skew: dict[str, int] = {}
    for c, cnt in zip(constraints, counts, strict=True):
        if c.topology_key in topology:
            continue
        topology[c.topology_key] = dict(sorted(cnt.items()))
        skew[c.topology_key] = max(cnt.values()) - min(cnt.values()) if cnt else 0
    return topology, skew


def node_object(node: Node) -> Obj:
    """The v1 Node an API server would show for a scenario node."""
    capacity: dict[str, str] = {"pods": str(node.max_pods)}
    for res, milli in node.capacity.items():
        capacity[res] = format_milli(milli)
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": dict(node.labels)},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }
    if node.taints:
        obj["spec"]["taints"] = [
            {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
            for t in node.taints
        ]
    return obj
