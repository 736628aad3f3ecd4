"""The scenario's `nodes` key (docs/scenario-format.md, "Topology"): parse and check.

Either a list of nodes, each ``{name, labels?, capacity?: {cpu, memory, pods},
taints?: [{key, value?, effect}]}``, or the shorthand ``{zones: [a, b], perZone: N,
capacity?}`` (N nodes per zone named ``<zone>-<i>``, i from 1, labelled
``topology.kubernetes.io/zone: <zone>`` and ``kubernetes.io/hostname: <name>``). A
list may mix both forms. A node listed by name gets the ``kubernetes.io/hostname``
label a kubelet sets, unless its labels give one. Errors name the place:
``nodes[1].capacity.cpu: ...``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hpactl.emulator.scheduling import DEFAULT_MAX_PODS, HOSTNAME_LABEL, ZONE_LABEL, Node, Taint
from hpactl.model.quantity import parse_quantity
from hpactl.model.selectors import validate_label_key, validate_label_value

__all__ = ["NODE_KEYS", "SHORTHAND_KEYS", "NodesError", "parse_nodes"]

NODE_KEYS = ("name", "labels", "capacity", "taints")
SHORTHAND_KEYS = ("zones", "perZone", "capacity")
CAPACITY_KEYS = ("cpu", "memory", "pods")
TAINT_KEYS = ("key", "value", "effect")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class NodesError(Exception):
    """A problem in `nodes`; the scenario parser turns it into a ScenarioError."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "list" if isinstance(v, list) else "map" if isinstance(v, dict) else type(v).__name__


def _map(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
        raise NodesError(where, f"expected a map, got {_kind(v)}")
    return v


def _known(m: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for k in m:
        if k not in allowed:
            raise NodesError(f"{where}.{k}", f"unknown key (expected one of: {', '.join(allowed)})")


def _string(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v:
        raise NodesError(
            where, "required" if v is None or v == "" else f"expected a string, got {_kind(v)}"
        )
    return v


def _capacity(v: Any, where: str) -> tuple[dict[str, int], int]:
    """(milli-units of cpu/memory, pod count)."""
    if v is None:
        return {}, DEFAULT_MAX_PODS
    m = _map(v, where)
    _known(m, CAPACITY_KEYS, where)
    out: dict[str, int] = {}
    pods = DEFAULT_MAX_PODS
    for res, raw in m.items():
        w = f"{where}.{res}"
        if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
            raise NodesError(w, f"expected a quantity, got {_kind(raw)}")
        try:
            q = parse_quantity(raw)
        except ValueError as exc:
            raise NodesError(w, str(exc)) from None
        milli = q.milli_value()
        if milli < 0:
            raise NodesError(w, "must not be negative")
        if res == "pods":
            if milli % 1000:
                raise NodesError(w, f"expected a whole number of pods, got {json.dumps(str(raw))}")
            pods = milli // 1000
        else:
            out[res] = milli
    return out, pods


def _labels(v: Any, where: str) -> dict[str, str]:
    if v is None:
        return {}
    m = _map(v, where)
    for k, val in m.items():
        w = f"{where}.{k}"
        errs = validate_label_key(k)
        if errs:
            raise NodesError(w, f"invalid label key: {'; '.join(errs)}")
        if not isinstance(val, str):
            raise NodesError(w, f"expected a string, got {_kind(val)}")
        errs = validate_label_value(val)
        if errs:
            raise NodesError(w, f"invalid label value {json.dumps(val)}: {'; '.join(errs)}")
    return dict(m)


def _taints(v: Any, where: str) -> tuple[Taint, ...]:
    if v is None:
        return ()
    if not isinstance(v, list):
        raise NodesError(where, f"expected a list, got {_kind(v)}")
    out = []
    for i, item in enumerate(v):
        w = f"{where}[{i}]"
        m = _map(item, w)
        _known(m, TAINT_KEYS, w)
        key = _string(m.get("key"), f"{w}.key")
        errs = validate_label_key(key)
        if errs:
            raise NodesError(f"{w}.key", f"invalid taint key: {'; '.join(errs)}")
        value = m.get("value", "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise NodesError(f"{w}.value", f"expected a string, got {_kind(value)}")
        errs = validate_label_value(value)
        if errs:
            raise NodesError(f"{w}.value", f"invalid taint value: {'; '.join(errs)}")
        effect = _string(m.get("effect"), f"{w}.effect")
        if effect not in TAINT_EFFECTS:
            raise NodesError(
                f"{w}.effect",
                f"unknown effect {json.dumps(effect)} (expected one of: {', '.join(TAINT_EFFECTS)})",
            )
        out.append(Taint(key, effect, value))
    return tuple(out)


def _node(m: dict[str, Any], where: str) -> Node:
    _known(m, NODE_KEYS, where)
    name = _string(m.get("name"), f"{where}.name")
    errs = validate_label_value(name)  # it is also the hostname label's value
    if errs:
        raise NodesError(
            f"{where}.name", f"invalid node name {json.dumps(name)}: {'; '.join(errs)}"
        )
    labels = _labels(m.get("labels"), f"{where}.labels")
    labels.setdefault(HOSTNAME_LABEL, name)
    capacity, pods = _capacity(m.get("capacity"), f"{where}.capacity")
    return Node(name, labels, capacity, pods, _taints(m.get("taints"), f"{where}.taints"))


def _shorthand(m: dict[str, Any], where: str) -> list[Node]:
    _known(m, SHORTHAND_KEYS, where)
    zones = m.get("zones")
    if not isinstance(zones, list) or not zones:
        raise NodesError(f"{where}.zones", "expected a non-empty list of zone names")
    per_zone = m.get("perZone", 1)
    if isinstance(per_zone, bool) or not isinstance(per_zone, int) or per_zone < 1:
        raise NodesError(f"{where}.perZone", f"expected a whole number >= 1, got {per_zone!r}")
    capacity, pods = _capacity(m.get("capacity"), f"{where}.capacity")
    out = []
    for j, zone in enumerate(zones):
        w = f"{where}.zones[{j}]"
        if not isinstance(zone, str) or not zone:
            raise NodesError(w, f"expected a zone name, got {_kind(zone)}")
        errs = validate_label_value(zone)
        if errs:
            raise NodesError(w, f"invalid zone {json.dumps(zone)}: {'; '.join(errs)}")
        for i in range(1, per_zone + 1):
            name = f"{zone}-{i}"
            labels = {ZONE_LABEL: zone, HOSTNAME_LABEL: name}
            out.append(Node(name, labels, capacity, pods))
    return out


def parse_nodes(v: Any, where: str = "nodes") -> tuple[Node, ...]:
    """The nodes a scenario declares, in order (names unique)."""
    if v is None:
        return ()
    items: list[tuple[Any, str]]
    if isinstance(v, dict):
        items = [(v, where)]
    elif isinstance(v, list):
        items = [(item, f"{where}[{i}]") for i, item in enumerate(v)]
    else:
        raise NodesError(
            where, f"expected a list of nodes or a {{zones, perZone}} map, got {_kind(v)}"
        )
    out: list[Node] = []
    seen: dict[str, str] = {}
    for item, w in items:
        m = _map(item, w)
        nodes = _shorthand(m, w) if "zones" in m else [_node(m, w)]
        for n in nodes:
            if n.name in seen:
                raise NodesError(
                    w, f"node {json.dumps(n.name)} is already declared at {seen[n.name]}"
                )
            seen[n.name] = w
            out.append(n)
    return tuple(out)
