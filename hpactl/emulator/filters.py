"""Label and field selectors for list and watch.

Label selectors use `hpactl.model.selectors.parse_selector` (Go `labels.Parse`).
Field selectors are parsed here (Go `fields.ParseSelector`) and support the field
labels the API server supports for the served kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hpactl.emulator import errors
from hpactl.emulator.registry import ResourceType
from hpactl.model.selectors import parse_selector

Obj = dict[str, Any]


class LabelMatcher(Protocol):
    def matches(self, labels: Mapping[str, str]) -> bool: ...


def parse_label_selector(text: str) -> LabelMatcher | None:
    """None for the empty selector (matches everything)."""
    if not text.strip():
        return None
    try:
        sel: LabelMatcher = parse_selector(text)
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from exc
    return sel


def _path(*keys: str) -> Callable[[Obj], str]:
    def get(obj: Obj) -> str:
        cur: Any = obj
        for k in keys:
            if not isinstance(cur, dict):
                return ""
            cur = cur.get(k)
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


_COMMON: dict[str, Callable[[Obj], str]] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}
_EVENT: dict[str, Callable[[Obj], str]] = {
    **{
        f"involvedObject.{f}": _path("involvedObject", f)
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _path("source", "component"),
    "type": _path("type"),
}
# events.k8s.io/v1 names of the same (stored as core/v1 Events).
_EVENT_V1: dict[str, Callable[[Obj], str]] = {
    **{
        f"regarding.{f}": _path("involvedObject", f)
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
    "reason": _path("reason"),
    "reportingController": _path("reportingComponent"),
    "type": _path("type"),
    "deprecatedSource.component": _path("source", "component"),
}
_POD: dict[str, Callable[[Obj], str]] = {
    "spec.nodeName": _path("spec", "nodeName"),
    "spec.restartPolicy": _path("spec", "restartPolicy"),
    "spec.schedulerName": _path("spec", "schedulerName"),
    "spec.serviceAccountName": _path("spec", "serviceAccountName"),
    "spec.hostNetwork": _path("spec", "hostNetwork"),
    "status.phase": _path("status", "phase"),
    "status.podIP": _path("status", "podIP"),
    "status.nominatedNodeName": _path("status", "nominatedNodeName"),
}


def field_getters(rt: ResourceType) -> dict[str, Callable[[Obj], str]]:
    out = dict(_COMMON)
    if rt.custom:
        return out
    if rt.plural == "events":
        out.update(_EVENT if rt.group == "" else _EVENT_V1)
    elif rt.plural == "pods" and rt.group == "":
        out.update(_POD)
    elif rt.plural == "namespaces" and rt.group == "":
        out["status.phase"] = _path("status", "phase")
    elif (rt.plural == "replicasets" and rt.group == "apps") or (
        rt.plural == "replicationcontrollers" and rt.group == ""
    ):
        out["status.replicas"] = _path("status", "replicas")
    return out


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str
    getter: Callable[[Obj], str]


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...]

    def matches(self, obj: Obj) -> bool:
        for r in self.requirements:
            got = r.getter(obj)
            if (got == r.value) != (r.op == "="):
                return False
        return True


def _split_terms(text: str) -> list[str]:
    terms, cur, esc = [], [], False
    for ch in text:
        if esc:
            cur.append("\\" + ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == ",":
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if esc:
        cur.append("\\")
    terms.append("".join(cur))
    return terms


def _unescape_value(v: str) -> str:
    out, esc = [], False
    for ch in v:
        if esc:
            if ch not in "\\,=":
                raise errors.bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch in ",=":
            raise errors.bad_request(f"invalid field selector: unescaped character: {ch}")
        else:
            out.append(ch)
    return "".join(out)


def _split_op(term: str) -> tuple[str, str, str] | None:
    # Find the first unescaped operator, trying "!=", "==", "=" at each position.
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
        i += 1
    return None


def parse_field_selector(text: str, rt: ResourceType) -> FieldSelector | None:
    if not text.strip():
        return None
    getters = field_getters(rt)
    reqs: list[FieldRequirement] = []
    for term in _split_terms(text):
        if not term:
            continue
        parts = _split_op(term)
        if parts is None:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        lhs, op, rhs = parts
        getter = getters.get(lhs)
        if getter is None:
            raise errors.bad_request(f"field label not supported: {lhs}")
        reqs.append(
            FieldRequirement(lhs, "!=" if op == "!=" else "=", _unescape_value(rhs), getter)
        )
    return FieldSelector(tuple(reqs)) if reqs else None
