"""The emulator as workload controllers and kubelets for chosen scale targets.

For each target listed in a scenario's `workload`, `Workload.reconcile()` does what
the ReplicaSet/StatefulSet controllers and the kubelets would do, at the emulator's
current (virtual) time, writing only when something changes:

* pods are created or deleted so that the non-terminating pods matching the target's
  selector number `spec.replicas` (labels and containers from the pod template;
  `requests` fills resource requests the template lacks); `status.startTime` is now;
* a new pod is Running but not Ready until `podReadyAfter` has passed since it started
  (its Ready condition's `lastTransitionTime` is then the exact moment it turned Ready);
* the target's `status.replicas` / `readyReplicas` / `availableReplicas` follow;
* `pod_metrics()` turns the demand curves into PodMetrics: the total demand at this
  instant (linear interpolation between points, the last value after the last point)
  is spread evenly over the Ready pods; unready pods use nothing.

Scale-down removes unready pods first, then the most recently started (StatefulSets:
the highest ordinal), as the workload controllers prefer. Pods go away at once (no
graceful termination). Pods the scenario created itself that match the selector count
as the target's pods (a ReplicaSet adopts them) but keep the status they were given.

With `nodes`, each new pod is placed as kube-scheduler would place it
(`scheduling.place`): it gets a `spec.nodeName`, or stays Pending (PodScheduled=False,
reason Unschedulable, no metrics) and is tried again at every reconcile, oldest first,
once pods are deleted elsewhere. Scale-down then picks its victims as the ReplicaSet
controller ranks them (`podranking`; StatefulSets still remove the highest ordinal).
The nodes are also stored as Node objects when the emulator serves that kind.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hpactl.emulator.podranking import pods_to_delete
from hpactl.emulator.registry import ResourceType
from hpactl.emulator.scheduling import (
    ZONE_LABEL,
    Node,
    node_name_of,
    node_object,
    place,
    spread_report,
)
from hpactl.emulator.store import Store, format_timestamp
from hpactl.model.quantity import format_milli
from hpactl.model.selectors import Selector, parse_selector, selector_from_label_selector

__all__ = ["DemandPoint", "TargetPlacement", "Workload", "WorkloadSpec", "demand_at"]

Obj = dict[str, Any]
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand alphabet
_POD_KEY = ("", "pods")
_DEFAULT_IMAGE = "registry.k8s.io/pause:3.10"


@dataclass(frozen=True, slots=True)
class DemandPoint:
    at: float  # seconds since the scenario start
    milli: int  # total demand in milli-units


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """One target the emulator runs pods for."""

    kind: str
    namespace: str
    name: str
    api_version: str | None = None
    pod_ready_after: float = 0.0  # seconds
    requests: Mapping[str, str] = field(default_factory=dict)  # per pod, canonical quantities
    demand: Mapping[str, tuple[DemandPoint, ...]] = field(default_factory=dict)
    where: str = "workload[0]"  # where the scenario listed it (for messages)

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def demand_at(points: tuple[DemandPoint, ...], t: float) -> int:
    """Total demand (milli) at `t` seconds: linear between points, flat outside them."""
    if not points:
        return 0
    if t <= points[0].at:
        return points[0].milli
    # The first point at or after t (points are in time order; a recorded series
    # has thousands, so no linear scan).
    i = bisect.bisect_left(points, t, key=_point_at)
    if i == len(points):
        return points[-1].milli
    a, b = points[i - 1], points[i]
    if b.at == a.at:
        return b.milli
    frac = (t - a.at) / (b.at - a.at)
    return round(a.milli + (b.milli - a.milli) * frac)


def _point_at(p: DemandPoint) -> float:
    return p.at


def _suffix(n: int, width: int = 5) -> str:
    """A deterministic name suffix in the alphabet generated names use."""
    out = []
    for _ in range(width):
        n, r = divmod(n, len(_ALPHABET))
        out.append(_ALPHABET[r])
    return "".join(reversed(out))


def _template_hash(template: Any) -> str:
    digest = hashlib.sha256(repr(template).encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:10])


@dataclass(slots=True)
class _Managed:
    """A pod this workload created. `started` is None while it is Pending (no node)."""

    name: str
    started: datetime | None
    ready: bool
    ordinal: int = -1


@dataclass(frozen=True, slots=True)
class TargetPlacement:
    """Where a target's pods are (only with nodes): `pods` by phase, and for each
    topology key of its template's spread constraints the pods per eligible domain
    and the skew; `zones` counts its scheduled pods per zone label of the nodes."""

    pods: dict[str, int]
    topology: dict[str, dict[str, int]]
    skew: dict[str, int]
    zones: dict[str, int]


@dataclass(slots=True)
class _TargetState:
    spec: WorkloadSpec
    pods: dict[str, _Managed] = field(default_factory=dict)
    counter: int = 0
    rt: ResourceType | None = None


class Workload:
    """Runs the pods of the listed targets in an emulator `Store`."""

    def __init__(
        self,
        store: Store,
        specs: Iterable[WorkloadSpec],
        *,
        start: datetime,
        now: Callable[[], datetime],
        nodes: Iterable[Node] = (),
    ) -> None:
        self.store = store
        self.start = start
        self.now = now
        self.nodes = tuple(nodes)
        self._nodes_stored = False
        self._targets = [_TargetState(s) for s in specs]
        self._metrics_sig: Any = None

    @property
    def specs(self) -> list[WorkloadSpec]:
        return [t.spec for t in self._targets]

    # ------------------------------------------------------------------ lookups

    def _resource_type(self, spec: WorkloadSpec) -> ResourceType | None:
        reg = self.store.registry
        if spec.api_version is not None:
            group = spec.api_version.rpartition("/")[0]
            return reg.by_kind(group, spec.kind)
        found: ResourceType | None = None
        for rt in reg:
            if rt.kind == spec.kind and rt.scale is not None and not rt.external:
                if rt.version == rt.stored_version:
                    return rt
                found = found or rt
        return found

    def _target(self, st: _TargetState) -> Obj | None:
        rt = st.rt = st.rt or self._resource_type(st.spec)
        if rt is None:
            return None
        e = self.store.get_entry(rt.storage_key, st.spec.namespace, st.spec.name)
        return e.obj if e is not None else None

    @staticmethod
    def _selector(target: Obj, rt: ResourceType) -> Selector:
        spec = target.get("spec") or {}
        if rt.custom and rt.scale is not None and rt.scale.label_selector:
            # A custom resource's scale selector is a string at labelSelectorPath.
            text = _get_path(target, rt.scale.label_selector)
            if isinstance(text, str):
                try:
                    return parse_selector(text)
                except ValueError:
                    return Selector.nothing()
        sel = spec.get("selector")
        if rt.kind == "ReplicationController" and isinstance(sel, dict):
            sel = {"matchLabels": sel}
        if sel is None:
            labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
            sel = {"matchLabels": labels or {}} if labels else None
        return selector_from_label_selector(sel)

    def _matching_pods(self, namespace: str, selector: Selector) -> list[Obj]:
        out = []
        for e in self.store.iter_entries(_POD_KEY, namespace):
            meta = e.obj.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                continue
            if selector.matches(meta.get("labels") or {}):
                out.append(e.obj)
        return out

    # ------------------------------------------------------------------ reconcile

    def reconcile(self) -> int:
        """Bring every target's pods and status in line with now; returns writes made."""
        writes = 0
        now = self.now()
        if self.nodes and not self._nodes_stored:
            writes += self._store_nodes()
        for st in self._targets:
            writes += self._reconcile_one(st, now)
        if self.nodes:
            # Room freed by another target's scale-down this turn.
            for st in self._targets:
                writes += self._schedule_pending(st, now)
        for st in self._targets:
            target = self._target(st)
            if target is not None and st.rt is not None and st.rt.status:
                writes += self._update_status(st, target, st.rt)
        return writes

    def _store_nodes(self) -> int:
        """The scenario's nodes as Node objects, when the emulator serves them."""
        self._nodes_stored = True
        if self.store.registry.by_kind("", "Node") is None:
            return 0
        writes = 0
        for node in self.nodes:
            if self.store.get("", "nodes", "", node.name) is None:
                self.store.create(node_object(node))
                writes += 1
        return writes

    def _all_pods(self) -> list[Obj]:
        return [e.obj for e in self.store.iter_entries(_POD_KEY, None)]

    def _schedule_pending(self, st: _TargetState, now: datetime) -> int:
        """Try the target's Pending pods again, oldest first (the scheduling queue)."""
        writes = 0
        for m in list(st.pods.values()):
            if m.started is not None:
                continue
            e = self.store.get_entry(_POD_KEY, st.spec.namespace, m.name)
            if e is None:
                continue
            placement = place(e.obj, self.nodes, self._all_pods())
            pod = _copy_json(e.obj)
            if placement.node is None:
                old = e.obj.get("status") or {}
                conds = old.get("conditions") or []
                if conds and conds[0].get("message") == placement.message:
                    continue
                pod["status"] = _pending_status(now, placement.message)
            else:
                m.started = now
                m.ready = st.spec.pod_ready_after <= 0
                containers = (pod.get("spec") or {}).get("containers") or []
                pod["spec"]["nodeName"] = placement.node
                pod["status"] = _pod_status(now, m.ready, now, containers)
            self.store.apply(pod, validate=False)
            writes += 1
        return writes

    def _reconcile_one(self, st: _TargetState, now: datetime) -> int:
        spec = st.spec
        target = self._target(st)
        writes = 0
        if target is None:
            # Garbage collection: the owner is gone, so are its pods.
            for name in list(st.pods):
                if self.store.get_entry(_POD_KEY, spec.namespace, name) is not None:
                    self.store.delete("", "pods", spec.namespace, name)
                    writes += 1
            st.pods.clear()
            return writes
        rt = st.rt
        assert rt is not None
        # Forget managed pods someone else deleted.
        for name in list(st.pods):
            e = self.store.get_entry(_POD_KEY, spec.namespace, name)
            if e is None or (e.obj.get("metadata") or {}).get("deletionTimestamp"):
                del st.pods[name]
        # Readiness of managed pods.
        for m in st.pods.values():
            if m.started is None:
                continue  # Pending: not on a node
            if not m.ready and now >= m.started + timedelta(seconds=spec.pod_ready_after):
                m.ready = True
                self._set_ready(spec.namespace, m, spec.pod_ready_after)
                writes += 1
        want = _replicas(target, rt)
        selector = self._selector(target, rt)
        pods = self._matching_pods(spec.namespace, selector)
        if len(pods) > want:
            for name in self._victims(st, pods, len(pods) - want, now):
                self.store.delete("", "pods", spec.namespace, name)
                st.pods.pop(name, None)
                writes += 1
        if self.nodes:
            writes += self._schedule_pending(st, now)
        if len(pods) < want:
            for _ in range(want - len(pods)):
                self._create_pod(st, target, rt, now)
                writes += 1
        return writes

    def _victims(self, st: _TargetState, pods: list[Obj], n: int, now: datetime) -> list[str]:
        if self.nodes and st.spec.kind != "StatefulSet":
            # As the ReplicaSet controller ranks them (podranking).
            return [p["metadata"]["name"] for p in pods_to_delete(pods, n, now)]

        def rank(p: Obj) -> tuple[int, str, int, str]:
            name = p["metadata"]["name"]
            m = st.pods.get(name)
            ready = m.ready if m is not None else _pod_ready(p)
            started = str((p.get("status") or {}).get("startTime") or "")
            ordinal = m.ordinal if m is not None else -1
            # Sorted ascending = deleted first: unready, then newest, then highest ordinal.
            return (1 if ready else 0, _invert(started), -ordinal, _invert(name))

        if st.spec.kind == "StatefulSet":
            ordered = sorted(pods, key=lambda p: -_ordinal(p["metadata"]["name"], st.spec.name))
        else:
            ordered = sorted(pods, key=rank)
        return [p["metadata"]["name"] for p in ordered[:n]]

    def _pod_name(self, st: _TargetState, target: Obj) -> tuple[str, int]:
        spec = st.spec
        if spec.kind == "StatefulSet":
            used = {
                _ordinal(p["metadata"]["name"], spec.name)
                for p in (e.obj for e in self.store.iter_entries(_POD_KEY, spec.namespace))
            }
            i = 0
            while i in used:
                i += 1
            return f"{spec.name}-{i}", i
        while True:
            st.counter += 1
            if spec.kind == "Deployment":
                tmpl = (target.get("spec") or {}).get("template")
                name = f"{spec.name}-{_template_hash(tmpl)}-{_suffix(st.counter)}"
            else:
                name = f"{spec.name}-{_suffix(st.counter)}"
            if self.store.get_entry(_POD_KEY, spec.namespace, name) is None:
                return name, -1

    def _create_pod(self, st: _TargetState, target: Obj, rt: ResourceType, now: datetime) -> None:
        spec = st.spec
        tmpl = (target.get("spec") or {}).get("template") or {}
        tmeta = tmpl.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        if not labels:
            labels = _labels_from_selector(target, rt)
        pod_spec = _copy_json(tmpl.get("spec") or {})
        containers = pod_spec.get("containers") or []
        if not containers:
            containers = [{"name": "app", "image": _DEFAULT_IMAGE}]
        pod_spec["containers"] = containers
        if spec.requests:
            first = containers[0]
            resources = first.setdefault("resources", {})
            requests = resources.setdefault("requests", {})
            has_any = {
                r for c in containers for r in ((c.get("resources") or {}).get("requests") or {})
            }
            for res, q in spec.requests.items():
                if res not in has_any:
                    requests[res] = q
        name, ordinal = self._pod_name(st, target)
        ready = spec.pod_ready_after <= 0
        started: datetime | None = now
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": spec.namespace,
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": f"{rt.group}/{rt.version}" if rt.group else rt.version,
                        "kind": rt.kind,
                        "name": spec.name,
                        "uid": (target.get("metadata") or {}).get("uid", ""),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": pod_spec,
            "status": _pod_status(now, ready, now, containers),
        }
        if self.nodes:
            placement = place(pod, self.nodes, self._all_pods())
            if placement.node is not None:
                pod_spec["nodeName"] = placement.node
            else:
                started, ready = None, False
                pod["status"] = _pending_status(now, placement.message)
        self.store.create(pod)
        st.pods[name] = _Managed(name, started, ready, ordinal)

    def _set_ready(self, namespace: str, m: _Managed, ready_after: float) -> None:
        e = self.store.get_entry(_POD_KEY, namespace, m.name)
        if e is None or m.started is None:
            return
        # The exact moment it turned Ready, even if this step comes later.
        became = m.started + timedelta(seconds=ready_after)
        containers = (e.obj.get("spec") or {}).get("containers") or []
        status = _pod_status(m.started, True, became, containers)
        old = e.obj.get("status") or {}
        for k, v in old.items():
            status.setdefault(k, v)
        self.store.update_status(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": m.name, "namespace": namespace},
                "status": status,
            }
        )

    def _update_status(self, st: _TargetState, target: Obj, rt: ResourceType) -> int:
        spec = st.spec
        selector = self._selector(target, rt)
        pods = self._matching_pods(spec.namespace, selector)
        total = len(pods)
        ready = sum(
            1
            for p in pods
            if (
                st.pods[p["metadata"]["name"]].ready
                if p["metadata"]["name"] in st.pods
                else _pod_ready(p)
            )
        )
        old = target.get("status") or {}
        new = dict(old)
        if rt.custom:
            # Only what the scale subresource reads: the status replicas path.
            path = rt.scale.status_replicas if rt.scale is not None else ".status.replicas"
            parts = path.strip(".").split(".")
            if parts[0] != "status" or len(parts) != 2:
                return 0  # a nested path: leave the resource's status to the scenario
            new[parts[1]] = total
        else:
            new["replicas"] = total
            new["readyReplicas"] = ready
            new["availableReplicas"] = ready
            if rt.kind in ("Deployment", "StatefulSet"):
                new["updatedReplicas"] = total
            else:  # ReplicaSet, ReplicationController
                new["fullyLabeledReplicas"] = total
            gen = (target.get("metadata") or {}).get("generation")
            if gen is not None:
                new["observedGeneration"] = gen
        for k in ("readyReplicas", "availableReplicas"):
            if new.get(k) == 0:
                new.pop(k)  # omitempty, as the API server shows it
        if new == old:
            return 0
        body = {
            "apiVersion": target.get("apiVersion"),
            "kind": target.get("kind"),
            "metadata": {"name": spec.name, "namespace": spec.namespace},
            "status": new,
        }
        self.store.update_status(body)
        return 1

    @staticmethod
    def _pending(st: _TargetState, pod: Obj) -> bool:
        m = st.pods.get(pod["metadata"]["name"])
        return m is not None and m.started is None

    # ------------------------------------------------------------------ placement

    def placement(
        self, kind: str, api_version: str | None, namespace: str, name: str
    ) -> TargetPlacement | None:
        """Where the pods of a scale target are (any target, listed in `workload` or
        not); None without nodes or when the target does not exist."""
        if not self.nodes:
            return None
        st = _TargetState(WorkloadSpec(kind, namespace, name, api_version=api_version))
        target = self._target(st)
        if target is None or st.rt is None:
            return None
        pods = self._matching_pods(namespace, self._selector(target, st.rt))
        phases: dict[str, int] = {}
        for p in pods:
            # The API server defaults an empty phase to Pending.
            phase = str((p.get("status") or {}).get("phase") or "Pending")
            phases[phase] = phases.get(phase, 0) + 1
        tmpl = (target.get("spec") or {}).get("template") or {}
        labels = ((tmpl.get("metadata") or {}).get("labels")) or _labels_from_selector(
            target, st.rt
        )
        template = {
            "metadata": {"namespace": namespace, "labels": labels},
            "spec": tmpl.get("spec") or {},
        }
        topology, skew = spread_report(template, self.nodes, self._all_pods())
        zone_of = {n.name: n.labels[ZONE_LABEL] for n in self.nodes if ZONE_LABEL in n.labels}
        zones = dict.fromkeys(sorted(set(zone_of.values())), 0)
        for p in pods:
            zone = zone_of.get(node_name_of(p))
            if zone is not None:
                zones[zone] += 1
        return TargetPlacement(dict(sorted(phases.items())), topology, skew, zones)

    # ------------------------------------------------------------------ metrics

    def pod_metrics(self) -> list[Obj]:
        """PodMetrics for the targets' pods at the current time (timestamp left to the
        metrics API, which stamps the current time)."""
        t = (self.now() - self.start).total_seconds()
        out: list[Obj] = []
        for st in self._targets:
            spec = st.spec
            if not spec.demand:
                continue
            target = self._target(st)
            if target is None or st.rt is None:
                continue
            pods = sorted(
                (
                    p
                    for p in self._matching_pods(spec.namespace, self._selector(target, st.rt))
                    if not self._pending(st, p)  # no node, no kubelet, no metrics
                ),
                key=lambda p: p["metadata"]["name"],
            )
            ready_names = [
                p["metadata"]["name"]
                for p in pods
                if (
                    st.pods[p["metadata"]["name"]].ready
                    if p["metadata"]["name"] in st.pods
                    else _pod_ready(p)
                )
            ]
            shares: dict[str, dict[str, int]] = {p["metadata"]["name"]: {} for p in pods}
            n = len(ready_names)
            for res, curve in spec.demand.items():
                total = demand_at(curve, t)
                for p in pods:
                    shares[p["metadata"]["name"]][res] = 0
                if n:
                    base, extra = divmod(total, n)
                    for i, name in enumerate(ready_names):
                        shares[name][res] = base + (1 if i < extra else 0)
            for p in pods:
                name = p["metadata"]["name"]
                containers = (p.get("spec") or {}).get("containers") or [{"name": "app"}]
                items = []
                for i, c in enumerate(containers):
                    usage = {
                        res: format_milli(v if i == 0 else 0) for res, v in shares[name].items()
                    }
                    items.append({"name": str(c.get("name", "app")), "usage": usage})
                out.append(
                    {
                        "metadata": {"namespace": spec.namespace, "name": name},
                        "window": "30s",
                        "containers": items,
                    }
                )
        return out


def _pending_status(now: datetime, message: str) -> Obj:
    """A pod the scheduler could not place (no startTime: no kubelet has it)."""
    return {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": format_timestamp(now),
            }
        ],
    }


def _invert(s: str) -> str:
    """A key that sorts `s` in reverse."""
    return "".join(chr(0x10FFFF - ord(c)) for c in s)


def _ordinal(name: str, base: str) -> int:
    if name.startswith(base + "-"):
        rest = name[len(base) + 1 :]
        if rest.isdigit():
            return int(rest)
    return -1


def _labels_from_selector(target: Obj, rt: ResourceType) -> dict[str, str]:
    """Labels that satisfy the target's selector, for pods without a template."""
    if rt.custom and rt.scale is not None and rt.scale.label_selector:
        text = _get_path(target, rt.scale.label_selector)
        out: dict[str, str] = {}
        for term in str(text or "").split(","):
            if "!=" in term or "=" not in term:
                continue
            k, _, v = term.partition("=")
            out[k.strip()] = v.lstrip("=").strip()
        return out
    sel = (target.get("spec") or {}).get("selector") or {}
    if rt.kind == "ReplicationController":
        return {str(k): str(v) for k, v in sel.items()}
    return {str(k): str(v) for k, v in (sel.get("matchLabels") or {}).items()}


def _get_path(obj: Obj, path: str) -> Any:
    """The value at a JSON path like `.status.selector` (None when absent)."""
    cur: Any = obj
    for part in path.strip(".").split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def _replicas(target: Obj, rt: ResourceType | None = None) -> int:
    if rt is not None and rt.custom and rt.scale is not None:
        r = _get_path(target, rt.scale.spec_replicas)
        return r if isinstance(r, int) and not isinstance(r, bool) and r >= 0 else 1
    r = (target.get("spec") or {}).get("replicas")
    if isinstance(r, bool) or not isinstance(r, int):
        return 1
    return max(0, r)


def _pod_ready(pod: Obj) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def _pod_status(started: datetime, ready: bool, transition: datetime, containers: list[Obj]) -> Obj:
    flag = "True" if ready else "False"
    ts = format_timestamp(transition)
    # Container statuses only for kubectl's READY column; the HPA reads conditions.
    statuses = [
        {
            "name": str(c.get("name", "app")),
            "image": str(c.get("image", "")),
            "imageID": "",
            "ready": ready,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": format_timestamp(started)}},
        }
        for c in containers
    ]
    return {
        "containerStatuses": statuses,
        "phase": "Running",
        "startTime": format_timestamp(started),
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "True",
                "lastTransitionTime": format_timestamp(started),
            },
            {"type": "Ready", "status": flag, "lastTransitionTime": ts},
            {"type": "ContainersReady", "status": flag, "lastTransitionTime": ts},
        ],
    }


def _copy_json(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy_json(x) for x in v]
    return v
