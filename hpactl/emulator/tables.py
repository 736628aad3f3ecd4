"""Server-side tables (meta.k8s.io/v1 Table), columns as kube-apiserver's printers.

Column sets follow `pkg/printers/internalversion/printers.go`; kinds without a
printer get the default table convertor's NAME / CREATED AT, custom resources their
additionalPrinterColumns (or NAME / AGE).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from hpactl.emulator.registry import ResourceType
from hpactl.model.quantity import parse_quantity
from hpactl.model.selectors import selector_from_label_selector

Obj = dict[str, Any]
Column = tuple[str, str, str, int]  # name, type, format, priority
Printer = Callable[[Obj, datetime], list[Any]]

_NAME: Column = ("Name", "string", "name", 0)
_AGE: Column = ("Age", "string", "", 0)


def human_duration(seconds_total: float) -> str:
    """Go `k8s.io/apimachinery/pkg/util/duration.HumanDuration`."""
    seconds = int(seconds_total)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _since(ts: Any, now: datetime) -> str:
    if not ts:
        return "<unknown>"
    try:
        t = datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration((now - t).total_seconds())


def _age(obj: Obj, now: datetime) -> str:
    return _since(obj.get("metadata", {}).get("creationTimestamp"), now)


def _name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _q(v: Any) -> str:
    """A quantity as Go's Quantity.String() prints it."""
    if v is None:
        return "<nil>"
    try:
        return str(parse_quantity(v))
    except ValueError:
        return str(v)


def _label_selector_string(sel: Any) -> str:
    try:
        return str(selector_from_label_selector(sel))
    except ValueError:
        if not isinstance(sel, dict):
            return "<none>"
        return ",".join(f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items()))


def _containers(obj: Obj) -> tuple[str, str]:
    cs = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
    return ",".join(str(c.get("name", "")) for c in cs), ",".join(
        str(c.get("image", "")) for c in cs
    )


# ---- HPA -----------------------------------------------------------------------------


def _value_or_average(spec: Obj, st: Obj, field: str) -> str:
    """The External and Object cases of formatHPAMetrics (the same text for both)."""
    target = (spec.get(field) or {}).get("target") or {}
    cur_st = (st.get(field) or {}).get("current") if st.get(field) else None
    if target.get("averageValue") is not None:
        cur = (
            _q(cur_st["averageValue"])
            if cur_st and cur_st.get("averageValue") is not None
            else "<unknown>"
        )
        return f"{cur}/{_q(target['averageValue'])} (avg)"
    cur = _q(cur_st.get("value")) if cur_st is not None else "<unknown>"
    return f"{cur}/{_q(target.get('value'))}"


def format_hpa_metrics(specs: list[Obj], statuses: list[Obj]) -> str:
    """printers.go formatHPAMetrics (autoscaling/v2 shapes)."""
    if not specs:
        return "<none>"
    out: list[str] = []
    for i, spec in enumerate(specs):
        st = statuses[i] if len(statuses) > i else {}
        typ = spec.get("type")
        if typ == "External":
            out.append(_value_or_average(spec, st, "external"))
        elif typ == "Pods":
            target = (spec.get("pods") or {}).get("target") or {}
            cur_st = (st.get("pods") or {}).get("current") if st.get("pods") else None
            cur = _q(cur_st.get("averageValue")) if cur_st is not None else "<unknown>"
            out.append(f"{cur}/{_q(target.get('averageValue'))}")
        elif typ == "Object":
            out.append(_value_or_average(spec, st, "object"))
        elif typ in ("Resource", "ContainerResource"):
            field = "resource" if typ == "Resource" else "containerResource"
            src = spec.get(field) or {}
            target = src.get("target") or {}
            cur_st = (st.get(field) or {}).get("current") if st.get(field) else None
            rname = src.get("name", "")
            if target.get("averageValue") is not None:
                cur = _q(cur_st.get("averageValue")) if cur_st is not None else "<unknown>"
                out.append(f"{rname}: {cur}/{_q(target['averageValue'])}")
            else:
                cur = (
                    f"{cur_st['averageUtilization']}%"
                    if cur_st is not None and cur_st.get("averageUtilization") is not None
                    else "<unknown>"
                )
                tgt = (
                    f"{target['averageUtilization']}%"
                    if target.get("averageUtilization") is not None
                    else "<auto>"
                )
                out.append(f"{rname}: {cur}/{tgt}")
        else:
            out.append("<unknown type>")
    if len(out) > 2:
        return f"{', '.join(out[:2])} + {len(out) - 2} more..."
    return ", ".join(out)


def _print_hpa(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    min_pods = str(spec["minReplicas"]) if spec.get("minReplicas") is not None else "<unset>"
    return [
        _name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        format_hpa_metrics(spec.get("metrics") or [], status.get("currentMetrics") or []),
        min_pods,
        int(spec.get("maxReplicas") or 0),
        int(status.get("currentReplicas") or 0),
        _age(obj, now),
    ]


# ---- workloads and pods ---------------------------------------------------------------


def _print_deployment(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    names, images = _containers(obj)
    return [
        _name(obj),
        f"{int(st.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(st.get("updatedReplicas") or 0),
        int(st.get("availableReplicas") or 0),
        _age(obj, now),
        names,
        images,
        _label_selector_string(spec.get("selector")),
    ]


def _print_replicaset(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    names, images = _containers(obj)
    sel = spec.get("selector")
    sel_s = (
        ",".join(f"{k}={v}" for k, v in sorted(sel.items()))
        if obj.get("kind") == "ReplicationController" and isinstance(sel, dict)
        else _label_selector_string(sel)
    )
    return [
        _name(obj),
        int(spec.get("replicas") or 0),
        int(st.get("replicas") or 0),
        int(st.get("readyReplicas") or 0),
        _age(obj, now),
        names,
        images,
        sel_s,
    ]


def _print_statefulset(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    names, images = _containers(obj)
    return [
        _name(obj),
        f"{int(st.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        _age(obj, now),
        names,
        images,
    ]


def _print_pod(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    containers = spec.get("containers") or []
    statuses = st.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = st.get("reason") or st.get("phase") or ""
    for c in reversed(statuses):
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
    if obj.get("metadata", {}).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    if gates:
        conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
        gates_s = (
            f"{sum(1 for g in gates if conds.get(g.get('conditionType')) == 'True')}/{len(gates)}"
        )
    else:
        gates_s = "<none>"
    return [
        _name(obj),
        f"{ready}/{len(containers)}",
        reason,
        str(restarts),
        _age(obj, now),
        st.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        st.get("nominatedNodeName") or "<none>",
        gates_s,
    ]


def _print_namespace(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), (obj.get("status") or {}).get("phase", ""), _age(obj, now)]


def _print_event(obj: Obj, now: datetime) -> list[Any]:
    inv = obj.get("involvedObject") or {}
    last = obj.get("lastTimestamp") or obj.get("eventTime")
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    src = obj.get("source") or {}
    comp = src.get("component") or obj.get("reportingComponent") or ""
    host = src.get("host") or obj.get("reportingInstance") or ""
    return [
        _since(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        inv.get("fieldPath", ""),
        f"{comp}, {host}" if host else comp,
        str(obj.get("message", "")).strip(),
        _since(first, now),
        int(obj.get("count") or 1),
        _name(obj),
    ]


def _print_lease(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), (obj.get("spec") or {}).get("holderIdentity") or "", _age(obj, now)]


def _print_sa(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), len(obj.get("secrets") or []), _age(obj, now)]


def _print_binding(obj: Obj, now: datetime) -> list[Any]:
    ref = obj.get("roleRef") or {}
    subjects = obj.get("subjects") or []
    users = ", ".join(s.get("name", "") for s in subjects if s.get("kind") == "User")
    groups = ", ".join(s.get("name", "") for s in subjects if s.get("kind") == "Group")
    sas = ", ".join(
        f"{s.get('namespace', '')}/{s.get('name', '')}"
        for s in subjects
        if s.get("kind") == "ServiceAccount"
    )
    return [
        _name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _age(obj, now),
        users,
        groups,
        sas,
    ]


def _print_created_at(obj: Obj, now: datetime) -> list[Any]:
    return [_name(obj), obj.get("metadata", {}).get("creationTimestamp", "")]


def _print_service(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    typ = spec.get("type") or "ClusterIP"
    ports = []
    for p in spec.get("ports") or []:
        node = f":{p['nodePort']}" if p.get("nodePort") else ""
        ports.append(f"{p.get('port')}{node}/{p.get('protocol', 'TCP')}")
    external = ",".join(spec.get("externalIPs") or []) or (
        "<pending>" if typ == "LoadBalancer" else "<none>"
    )
    if typ == "ExternalName":
        external = spec.get("externalName") or "<none>"
    sel = spec.get("selector") or {}
    return [
        _name(obj),
        typ,
        spec.get("clusterIP") or "<none>",
        external,
        ",".join(ports) or "<none>",
        _age(obj, now),
        ",".join(f"{k}={v}" for k, v in sorted(sel.items())) or "<none>",
    ]


def _print_pdb(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    mn = spec.get("minAvailable")
    mx = spec.get("maxUnavailable")
    return [
        _name(obj),
        str(mn) if mn is not None else "N/A",
        str(mx) if mx is not None else "N/A",
        int(st.get("disruptionsAllowed") or 0),
        _age(obj, now),
    ]


def _print_configmap(obj: Obj, now: datetime) -> list[Any]:
    n = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_name(obj), n, _age(obj, now)]


def _print_secret(obj: Obj, now: datetime) -> list[Any]:
    n = len(obj.get("data") or {}) + len(obj.get("stringData") or {})
    return [_name(obj), obj.get("type", ""), n, _age(obj, now)]


# ---- the other built-in kinds a scenario may name ----------------------------------------


def _more(items: list[str], count: int, limit: int = 3, empty: str = "<unset>") -> str:
    """printers.go listWithMoreString: the first `limit` items, then `+ N more...`."""
    text = ",".join(items)
    if count > limit:
        return f"{text} + {count - limit} more..."
    return text or empty


def _format_selector(sel: Any) -> str:
    """metav1.FormatLabelSelector: `<none>` for an empty selector."""
    if not isinstance(sel, dict) or not (sel.get("matchLabels") or sel.get("matchExpressions")):
        return "<none>"
    return _label_selector_string(sel)


def _print_daemonset(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    names, images = _containers(obj)
    node_sel = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    return [
        _name(obj),
        int(st.get("desiredNumberScheduled") or 0),
        int(st.get("currentNumberScheduled") or 0),
        int(st.get("numberReady") or 0),
        int(st.get("updatedNumberScheduled") or 0),
        int(st.get("numberAvailable") or 0),
        ",".join(f"{k}={v}" for k, v in sorted(node_sel.items())) or "<none>",
        _age(obj, now),
        names,
        images,
        _format_selector(spec.get("selector")),
    ]


def _has_condition(st: Obj, typ: str) -> bool:
    return any(
        c.get("type") == typ and c.get("status") == "True" for c in st.get("conditions") or []
    )


def _seconds_between(start: Any, end: Any) -> float | None:
    try:
        a = datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        b = datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    except ValueError:
        return None
    return (b - a).total_seconds()


def _print_job(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    succeeded = int(st.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{int(spec['completions'])}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {int(spec['parallelism'])}"
    else:
        completions = f"{succeeded}/1"
    duration = ""
    if st.get("startTime"):
        if st.get("completionTime"):
            secs = _seconds_between(st["startTime"], st["completionTime"])
            duration = human_duration(secs) if secs is not None else ""
        else:
            duration = _since(st["startTime"], now)
    if _has_condition(st, "Complete"):
        status = "Complete"
    elif _has_condition(st, "Failed"):
        status = "Failed"
    elif (obj.get("metadata") or {}).get("deletionTimestamp"):
        status = "Terminating"
    elif _has_condition(st, "Suspended"):
        status = "Suspended"
    elif _has_condition(st, "FailureTarget"):
        status = "FailureTarget"
    else:
        status = "Running"
    names, images = _containers(obj)
    return [
        _name(obj),
        status,
        completions,
        duration,
        _age(obj, now),
        names,
        images,
        _format_selector(spec.get("selector")),
    ]


def _print_cronjob(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = _containers({"spec": job_spec})
    suspend = spec.get("suspend")
    return [
        _name(obj),
        spec.get("schedule") or "",
        spec.get("timeZone") or "<none>",
        "<unset>" if suspend is None else ("True" if suspend else "False"),
        len(st.get("active") or []),
        _since(st["lastScheduleTime"], now) if st.get("lastScheduleTime") else "<none>",
        _age(obj, now),
        names,
        images,
        _format_selector(job_spec.get("selector")),
    ]


def _print_ingress(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    rules = spec.get("rules") or []
    hosts = [str(r.get("host")) for r in rules[:3] if r.get("host")]
    if not hosts:
        hosts_s = "*"
    elif len(rules) > 3:
        hosts_s = f"{','.join(hosts)} + {len(rules) - 3} more..."
    else:
        hosts_s = ",".join(hosts)
    lb = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    addrs = sorted(
        {str(i.get("ip") or i.get("hostname")) for i in lb if i.get("ip") or i.get("hostname")}
    )
    # The server prints tables as for -o wide: the address is never clipped.
    return [
        _name(obj),
        spec.get("ingressClassName") or "<none>",
        hosts_s,
        ",".join(addrs),
        "80, 443" if spec.get("tls") else "80",
        _age(obj, now),
    ]


def _print_ingressclass(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    params = spec.get("parameters")
    text = "<none>"
    if isinstance(params, dict):
        text = str(params.get("kind", ""))
        if params.get("apiGroup") is not None:
            text += "." + str(params["apiGroup"])
        text += "/" + str(params.get("name", ""))
    return [_name(obj), spec.get("controller") or "", text, _age(obj, now)]


def _host_port(ip: str, port: Any) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _print_endpoints(obj: Obj, now: datetime) -> list[Any]:
    subsets = obj.get("subsets") or []
    if not subsets:
        return [_name(obj), "<none>", _age(obj, now)]
    shown: list[str] = []
    count = 0
    for ss in subsets:
        ips = [str(a.get("ip", "")) for a in ss.get("addresses") or []]
        ports = ss.get("ports") or []
        pairs = [_host_port(ip, p.get("port")) for p in ports for ip in ips] if ports else ips
        count += len(pairs)
        shown += pairs[: max(0, 3 - len(shown))]
    return [_name(obj), _more(shown, count, empty=""), _age(obj, now)]


def _print_endpointslice(obj: Obj, now: datetime) -> list[Any]:
    ports = obj.get("ports") or []
    port_s = [
        str(p["port"]) if p.get("port") is not None else str(p.get("name") or "*") for p in ports
    ]
    addrs = [str(a) for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
    return [
        _name(obj),
        obj.get("addressType") or "",
        _more(port_s[:3], len(port_s)),
        _more(addrs[:3], len(addrs)),
        _age(obj, now),
    ]


def _print_node(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    info = st.get("nodeInfo") or {}
    ready = next((c for c in st.get("conditions") or [] if c.get("type") == "Ready"), None)
    status = [
        "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    ]
    if spec.get("unschedulable"):
        status.append("SchedulingDisabled")
    roles: set[str] = set()
    for k, v in ((obj.get("metadata") or {}).get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/") and len(k) > len("node-role.kubernetes.io/"):
            roles.add(k[len("node-role.kubernetes.io/") :])
        elif k == "kubernetes.io/role" and v:
            roles.add(str(v))

    def address(typ: str) -> str:
        return next(
            (str(a.get("address")) for a in st.get("addresses") or [] if a.get("type") == typ),
            "<none>",
        )

    return [
        _name(obj),
        ",".join(status),
        ",".join(sorted(roles)) or "<none>",
        _age(obj, now),
        info.get("kubeletVersion") or "",
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _access_modes(modes: Any) -> str:
    """helper.GetAccessModesAsString."""
    have = set(modes or [])
    return ",".join(
        short
        for mode, short in (
            ("ReadWriteOnce", "RWO"),
            ("ReadOnlyMany", "ROX"),
            ("ReadWriteMany", "RWX"),
            ("ReadWriteOncePod", "RWOP"),
        )
        if mode in have
    )


def _storage_class(obj: Obj) -> str:
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    beta = "volume.beta.kubernetes.io/storage-class"
    if beta in ann:
        return str(ann[beta])
    return str((obj.get("spec") or {}).get("storageClassName") or "")


def _print_pv(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    ref = spec.get("claimRef")
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if isinstance(ref, dict) else ""
    phase = (
        "Terminating"
        if (obj.get("metadata") or {}).get("deletionTimestamp")
        else st.get("phase", "")
    )
    return [
        _name(obj),
        _q((spec.get("capacity") or {}).get("storage", 0)),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        phase,
        claim,
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        st.get("reason") or "",
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _print_pvc(obj: Obj, now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    phase = (
        "Terminating"
        if (obj.get("metadata") or {}).get("deletionTimestamp")
        else st.get("phase", "")
    )
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(st.get("accessModes"))
        capacity = _q((st.get("capacity") or {}).get("storage", 0))
    return [
        _name(obj),
        phase,
        spec.get("volumeName") or "",
        capacity,
        modes,
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


# ReplicaSets and ReplicationControllers print alike, as do both kinds of bindings.
_REPLICASET_COLUMNS: list[Column] = [
    _NAME,
    ("Desired", "integer", "", 0),
    ("Current", "integer", "", 0),
    ("Ready", "integer", "", 0),
    _AGE,
    ("Containers", "string", "", 1),
    ("Images", "string", "", 1),
    ("Selector", "string", "", 1),
]
_BINDING_COLUMNS: list[Column] = [
    _NAME,
    ("Role", "string", "", 0),
    _AGE,
    ("Users", "string", "", 1),
    ("Groups", "string", "", 1),
    ("ServiceAccounts", "string", "", 1),
]

_WIDE_TEMPLATE: list[Column] = [
    ("Containers", "string", "", 1),
    ("Images", "string", "", 1),
    ("Selector", "string", "", 1),
]

_PRINTERS: dict[tuple[str, str], tuple[list[Column], Printer]] = {
    ("apps", "daemonsets"): (
        [
            _NAME,
            ("Desired", "integer", "", 0),
            ("Current", "integer", "", 0),
            ("Ready", "integer", "", 0),
            ("Up-to-date", "integer", "", 0),
            ("Available", "integer", "", 0),
            ("Node Selector", "string", "", 0),
            _AGE,
            *_WIDE_TEMPLATE,
        ],
        _print_daemonset,
    ),
    ("batch", "jobs"): (
        [
            _NAME,
            ("Status", "string", "", 0),
            ("Completions", "string", "", 0),
            ("Duration", "string", "", 0),
            _AGE,
            *_WIDE_TEMPLATE,
        ],
        _print_job,
    ),
    ("batch", "cronjobs"): (
        [
            _NAME,
            ("Schedule", "string", "", 0),
            ("Timezone", "string", "", 0),
            ("Suspend", "boolean", "", 0),
            ("Active", "integer", "", 0),
            ("Last Schedule", "string", "", 0),
            _AGE,
            *_WIDE_TEMPLATE,
        ],
        _print_cronjob,
    ),
    ("networking.k8s.io", "ingresses"): (
        [
            _NAME,
            ("Class", "string", "", 0),
            ("Hosts", "string", "", 0),
            ("Address", "string", "", 0),
            ("Ports", "string", "", 0),
            _AGE,
        ],
        _print_ingress,
    ),
    ("networking.k8s.io", "ingressclasses"): (
        [_NAME, ("Controller", "string", "", 0), ("Parameters", "string", "", 0), _AGE],
        _print_ingressclass,
    ),
    ("", "endpoints"): ([_NAME, ("Endpoints", "string", "", 0), _AGE], _print_endpoints),
    ("discovery.k8s.io", "endpointslices"): (
        [
            _NAME,
            ("AddressType", "string", "", 0),
            ("Ports", "string", "", 0),
            ("Endpoints", "string", "", 0),
            _AGE,
        ],
        _print_endpointslice,
    ),
    ("", "nodes"): (
        [
            _NAME,
            ("Status", "string", "", 0),
            ("Roles", "string", "", 0),
            _AGE,
            ("Version", "string", "", 0),
            ("Internal-IP", "string", "", 1),
            ("External-IP", "string", "", 1),
            ("OS-Image", "string", "", 1),
            ("Kernel-Version", "string", "", 1),
            ("Container-Runtime", "string", "", 1),
        ],
        _print_node,
    ),
    ("", "persistentvolumes"): (
        [
            _NAME,
            ("Capacity", "string", "", 0),
            ("Access Modes", "string", "", 0),
            ("Reclaim Policy", "string", "", 0),
            ("Status", "string", "", 0),
            ("Claim", "string", "", 0),
            ("StorageClass", "string", "", 0),
            ("VolumeAttributesClass", "string", "", 0),
            ("Reason", "string", "", 0),
            _AGE,
            ("VolumeMode", "string", "", 1),
        ],
        _print_pv,
    ),
    ("", "persistentvolumeclaims"): (
        [
            _NAME,
            ("Status", "string", "", 0),
            ("Volume", "string", "", 0),
            ("Capacity", "string", "", 0),
            ("Access Modes", "string", "", 0),
            ("StorageClass", "string", "", 0),
            ("VolumeAttributesClass", "string", "", 0),
            _AGE,
            ("VolumeMode", "string", "", 1),
        ],
        _print_pvc,
    ),
    ("", "services"): (
        [
            _NAME,
            ("Type", "string", "", 0),
            ("Cluster-IP", "string", "", 0),
            ("External-IP", "string", "", 0),
            ("Port(s)", "string", "", 0),
            _AGE,
            ("Selector", "string", "", 1),
        ],
        _print_service,
    ),
    ("policy", "poddisruptionbudgets"): (
        [
            _NAME,
            ("Min Available", "string", "", 0),
            ("Max Unavailable", "string", "", 0),
            ("Allowed Disruptions", "integer", "", 0),
            _AGE,
        ],
        _print_pdb,
    ),
    ("", "configmaps"): ([_NAME, ("Data", "integer", "", 0), _AGE], _print_configmap),
    ("", "secrets"): (
        [_NAME, ("Type", "string", "", 0), ("Data", "integer", "", 0), _AGE],
        _print_secret,
    ),
    ("autoscaling", "horizontalpodautoscalers"): (
        [
            _NAME,
            ("Reference", "string", "", 0),
            ("Targets", "string", "", 0),
            ("MinPods", "string", "", 0),
            ("MaxPods", "integer", "", 0),
            ("Replicas", "integer", "", 0),
            _AGE,
        ],
        _print_hpa,
    ),
    ("apps", "deployments"): (
        [
            _NAME,
            ("Ready", "string", "", 0),
            ("Up-to-date", "integer", "", 0),
            ("Available", "integer", "", 0),
            _AGE,
            ("Containers", "string", "", 1),
            ("Images", "string", "", 1),
            ("Selector", "string", "", 1),
        ],
        _print_deployment,
    ),
    ("apps", "replicasets"): (
        _REPLICASET_COLUMNS,
        _print_replicaset,
    ),
    ("", "replicationcontrollers"): (
        _REPLICASET_COLUMNS,
        _print_replicaset,
    ),
    ("apps", "statefulsets"): (
        [
            _NAME,
            ("Ready", "string", "", 0),
            _AGE,
            ("Containers", "string", "", 1),
            ("Images", "string", "", 1),
        ],
        _print_statefulset,
    ),
    ("", "pods"): (
        [
            _NAME,
            ("Ready", "string", "", 0),
            ("Status", "string", "", 0),
            ("Restarts", "string", "", 0),
            _AGE,
            ("IP", "string", "", 1),
            ("Node", "string", "", 1),
            ("Nominated Node", "string", "", 1),
            ("Readiness Gates", "string", "", 1),
        ],
        _print_pod,
    ),
    ("", "namespaces"): ([_NAME, ("Status", "string", "", 0), _AGE], _print_namespace),
    ("", "events"): (
        [
            ("Last Seen", "string", "", 0),
            ("Type", "string", "", 0),
            ("Reason", "string", "", 0),
            ("Object", "string", "", 0),
            ("Subobject", "string", "", 1),
            ("Source", "string", "", 1),
            ("Message", "string", "", 0),
            ("First Seen", "string", "", 1),
            ("Count", "string", "", 1),
            ("Name", "string", "name", 1),
        ],
        _print_event,
    ),
    ("coordination.k8s.io", "leases"): ([_NAME, ("Holder", "string", "", 0), _AGE], _print_lease),
    ("", "serviceaccounts"): ([_NAME, ("Secrets", "integer", "", 0), _AGE], _print_sa),
    ("rbac.authorization.k8s.io", "rolebindings"): (
        _BINDING_COLUMNS,
        _print_binding,
    ),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): (
        _BINDING_COLUMNS,
        _print_binding,
    ),
}
_CREATED_AT: tuple[list[Column], Printer] = (
    [_NAME, ("Created At", "date", "", 0)],
    _print_created_at,
)


def _jsonpath_values(cur: Any, parts: list[str]) -> list[Any]:
    """Every value ``parts`` reaches from ``cur`` (``name``, ``name[*]``, ``name[i]``)."""
    if not parts:
        return [cur]
    part, rest = parts[0], parts[1:]
    name, _, index = part.partition("[")
    if name:
        if not isinstance(cur, dict) or name not in cur:
            return []
        cur = cur[name]
    if not index:
        return _jsonpath_values(cur, rest)
    if not isinstance(cur, list):
        return []
    index = index.rstrip("]")
    if index == "*":
        items = cur
    else:
        try:
            items = [cur[int(index)]]
        except (ValueError, IndexError):
            return []
    return [v for item in items for v in _jsonpath_values(item, rest)]


def _jsonpath_get(obj: Obj, path: str) -> Any:
    """A printer column's value: the first result, as the API server's CRD table
    convertor takes it (``[*]`` over several items shows the first)."""
    parts = [p for p in path.strip().lstrip(".").split(".") if p]
    values = _jsonpath_values(obj, parts)
    return values[0] if values else None


def _custom_printer(rt: ResourceType) -> tuple[list[Column], Printer]:
    if not rt.printer_columns:
        return [_NAME, _AGE], lambda o, now: [_name(o), _age(o, now)]
    cols: list[Column] = [_NAME]
    for name, typ, _path, prio in rt.printer_columns:
        cols.append((name, typ, "", prio))

    def printer(o: Obj, now: datetime) -> list[Any]:
        cells: list[Any] = [_name(o)]
        for _n, typ, path, _p in rt.printer_columns:
            v = _jsonpath_get(o, path)
            if typ == "date" and v:
                cells.append(_since(v, now))
            elif typ == "string" and isinstance(v, bool):
                cells.append("true" if v else "false")  # printed, as the API server does
            elif typ == "string" and isinstance(v, int | float):
                cells.append(str(v))
            else:
                cells.append(v)
        return cells

    return cols, printer


def printer_for(rt: ResourceType) -> tuple[list[Column], Printer]:
    if rt.custom:
        return _custom_printer(rt)
    key = ("" if rt.plural == "events" else rt.group, rt.plural)
    return _PRINTERS.get(key, _CREATED_AT)


def column_definitions(cols: list[Column]) -> list[Obj]:
    return [
        {"name": n, "type": t, "format": f, "description": "", "priority": p} for n, t, f, p in cols
    ]


def partial_metadata(obj: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(
    rt: ResourceType,
    objs: list[tuple[Obj, Obj]],
    now: datetime,
    include_object: str,
    *,
    headers: bool = True,
    list_meta: Obj | None = None,
) -> Obj:
    """A Table; objs are (stored form for the cells, served form for the row object)."""
    cols, printer = printer_for(rt)
    rows = []
    for stored, o in objs:
        row: Obj = {"cells": printer(stored, now)}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = partial_metadata(o)
        rows.append(row)
    out: Obj = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": column_definitions(cols) if headers else None,
        "rows": rows,
    }
    return out
