"""Version conversion and API defaulting for the kinds the emulator stores once.

HorizontalPodAutoscalers are stored as autoscaling/v2 and converted with
`hpactl.model.conversion` (v2-only fields ride in the v1 annotations, as the API
server does).  Events are stored as core/v1 and shown as events.k8s.io/v1 with the
field mapping of `k8s.io/kubernetes/pkg/apis/events/v1/conversion.go`.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from hpactl.emulator.registry import ResourceType
from hpactl.emulator.schema import apply_defaults
from hpactl.model.conversion import default_hpa_v2, hpa_v1_to_v2, hpa_v2_to_v1

Obj = dict[str, Any]

# core/v1 Event field <-> events.k8s.io/v1 Event field
_EVENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
)


def to_storage(rt: ResourceType, obj: Obj) -> Obj:
    """Convert an object of served version `rt.version` to the storage version."""
    if rt.version == rt.stored_version:
        return obj
    if rt.group == "autoscaling" and rt.plural == "horizontalpodautoscalers":
        out: Obj = hpa_v1_to_v2(obj)
        out["apiVersion"] = "autoscaling/v2"
        out["kind"] = "HorizontalPodAutoscaler"
        return out
    if rt.group == "events.k8s.io" and rt.plural == "events":
        return events_v1_to_core(obj)
    out = copy.deepcopy(obj)
    out["apiVersion"] = f"{rt.group}/{rt.stored_version}" if rt.group else rt.stored_version
    return out


def from_storage(rt: ResourceType, obj: Obj) -> Obj:
    """Convert a stored object to served version `rt.version`. May return `obj` itself."""
    if rt.group == "events.k8s.io" and rt.plural == "events":
        return core_to_events_v1(obj)
    if rt.version == rt.stored_version:
        return obj
    if rt.group == "autoscaling" and rt.plural == "horizontalpodautoscalers":
        out: Obj = hpa_v2_to_v1(obj)
        out["apiVersion"] = "autoscaling/v1"
        out["kind"] = "HorizontalPodAutoscaler"
        return out
    out = copy.deepcopy(obj)
    out["apiVersion"] = rt.group_version
    return out


def core_to_events_v1(obj: Obj) -> Obj:
    out: Obj = {"kind": "Event", "apiVersion": "events.k8s.io/v1"}
    for k, v in obj.items():
        if k in ("kind", "apiVersion"):
            continue
        mapped = next((b for a, b in _EVENT_FIELDS if a == k), k)
        out[mapped] = v
    return out


def events_v1_to_core(obj: Obj) -> Obj:
    out: Obj = {"kind": "Event", "apiVersion": "v1"}
    for k, v in obj.items():
        if k in ("kind", "apiVersion"):
            continue
        mapped = next((a for a, b in _EVENT_FIELDS if b == k), k)
        out[mapped] = copy.deepcopy(v)
    return out


def _default_workload(obj: Obj, kind: str) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    if kind == "Deployment":
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.get("strategy")
        if not isinstance(strategy, dict):
            strategy = spec["strategy"] = {}
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.setdefault("rollingUpdate", {})
            ru.setdefault("maxUnavailable", "25%")
            ru.setdefault("maxSurge", "25%")
    elif kind == "ReplicationController":
        # An RC's selector defaults to its template's labels.
        tmpl = spec.get("template") or {}
        labels = (tmpl.get("metadata") or {}).get("labels")
        if not spec.get("selector") and labels:
            spec["selector"] = dict(labels)
    elif kind == "StatefulSet":
        spec.setdefault("podManagementPolicy", "OrderedReady")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault(
            "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
        )


def _spec(obj: Obj) -> Obj | None:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else None


def _default_daemonset(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.get("updateStrategy")
    if not isinstance(strategy, dict):
        strategy = spec["updateStrategy"] = {}
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = strategy.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", 1)
        ru.setdefault("maxSurge", 0)


def _default_job(obj: Obj) -> None:
    """SetDefaults_Job and the job strategy's generated selector (manualSelector unset)."""
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault(
        "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    )
    meta = obj.get("metadata") or {}
    tmpl = spec.get("template")
    if not isinstance(tmpl, dict):
        return
    tmeta = tmpl.setdefault("metadata", {})
    if not isinstance(tmeta, dict):
        return
    uid = meta.get("uid")
    if spec.get("manualSelector") is not True and uid and not spec.get("selector"):
        labels = tmeta.get("labels")
        if not isinstance(labels, dict):
            labels = tmeta["labels"] = {}
        name = str(meta.get("name") or "")
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": name,
                "controller-uid": uid,
                "job-name": name,
            }
        )
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = tmeta.get("labels")
    if isinstance(labels, dict) and labels and isinstance(meta, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)


def _default_cronjob(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)


def _default_volume(obj: Obj) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("volumeMode", "Filesystem")
    if obj.get("kind") == "PersistentVolume":
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")


def _default_ports(ports: Any) -> None:
    for p in ports if isinstance(ports, list) else ():
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")


def _default_endpoints(obj: Obj) -> None:
    for subset in obj.get("subsets") or ():
        if isinstance(subset, dict):
            _default_ports(subset.get("ports"))


def _default_endpointslice(obj: Obj) -> None:
    _default_ports(obj.get("ports"))


_OTHER_DEFAULTS: dict[str, Callable[[Obj], None]] = {
    "daemonsets": _default_daemonset,
    "jobs": _default_job,
    "cronjobs": _default_cronjob,
    "persistentvolumes": _default_volume,
    "persistentvolumeclaims": _default_volume,
    "endpoints": _default_endpoints,
    "endpointslices": _default_endpointslice,
}


def default_object(rt: ResourceType, obj: Obj) -> None:
    """The API defaulting the emulator applies on every write, in place."""
    if rt.custom:
        if isinstance(rt.schema, dict):
            apply_defaults(obj, rt.schema)
        return
    if rt.group == "autoscaling" and rt.plural == "horizontalpodautoscalers":
        defaulted = default_hpa_v2(obj)
        if defaulted is not obj:
            obj.clear()
            obj.update(defaulted)
        return
    if rt.plural in ("deployments", "replicasets", "statefulsets", "replicationcontrollers"):
        _default_workload(obj, rt.kind)
        return
    if rt.group in ("apps", "batch", "", "discovery.k8s.io") and rt.plural in _OTHER_DEFAULTS:
        _OTHER_DEFAULTS[rt.plural](obj)
        return
    if rt.plural == "events":
        # Fields of core/v1 Event that Go's JSON always writes (no omitempty).
        obj.setdefault("eventTime", None)
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
        return
    if rt.plural == "services" and not rt.group:
        _default_service(obj)
        return
    if rt.plural == "secrets" and not rt.group:
        obj.setdefault("type", "Opaque")
        return
    if rt.plural == "customresourcedefinitions":
        _crd_status(obj)
        return
    if rt.plural == "namespaces" and not rt.group:
        # The NamespaceLifecycle defaulting every real namespace gets.
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        if name:
            labels = meta.get("labels")
            if not isinstance(labels, dict):
                labels = meta["labels"] = {}
            labels["kubernetes.io/metadata.name"] = name
        if not obj.get("spec"):
            obj["spec"] = {"finalizers": ["kubernetes"]}
        if not obj.get("status"):
            obj["status"] = {"phase": "Active"}
        return
    if rt.plural == "pods" and not rt.group:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("enableServiceLinks", True)
        status = obj.get("status")
        if not isinstance(status, dict) or not status:
            obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj)}
        return


def _qos_class(pod: Obj) -> str:
    containers = (pod.get("spec") or {}).get("containers") or []
    requests_any = False
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req = res.get("requests") or {}
        lim = res.get("limits") or {}
        if req or lim:
            requests_any = True
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if requests_any else "BestEffort"


def _crd_status(crd: Obj) -> None:
    """What the apiextensions controllers write at once: names accepted, established."""
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    if names.get("kind") and not names.get("singular"):
        names["singular"] = str(names["kind"]).lower()
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    ts = (crd.get("metadata") or {}).get("creationTimestamp")
    crd["status"] = {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": ts,
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": ts,
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": [
            str(v.get("name")) for v in spec.get("versions") or [] if v.get("storage")
        ],
    }


def _default_service(svc: Obj) -> None:
    """Service defaulting, with a stable made-up cluster IP (no allocator to ask)."""
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = svc["spec"] = {}
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        if not spec.get("clusterIP"):
            meta = svc.get("metadata") or {}
            digest = hashlib.sha256(
                f"{meta.get('namespace', '')}/{meta.get('name', '')}".encode()
            ).digest()
            spec["clusterIP"] = f"10.96.{digest[0]}.{digest[1] % 254 + 1}"
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    if not svc.get("status"):
        svc["status"] = {"loadBalancer": {}}
