"""Scenario files (`hpactl simulate FILE`): parse and validate into frozen dataclasses.

The format is the public contract in docs/scenario-format.md. Validation is done
before anything runs wherever it can be (keys, types, durations, quantities, flags,
metrics items); what only the emulator can judge (a manifest it rejects, a delete of
an object that is not there) is reported when the step runs. Either way the error is
one `ScenarioError` whose text names the place: `steps[3].after: invalid duration "5x"`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from hpactl.config import ConfigError, ControllerConfig
from hpactl.emulator.scheduling import Node
from hpactl.emulator.workload import DemandPoint, WorkloadSpec
from hpactl.model.quantity import parse_quantity
from hpactl.model.times import parse_go_duration, parse_time
from hpactl.simulate.nodes import NodesError, parse_nodes
from hpactl.simulate.recording import Recording, RecordingError, load_recording

__all__ = [
    "DEFAULT_START",
    "FORBIDDEN_FLAGS",
    "DeleteRef",
    "DemandPoint",
    "MetricsSpec",
    "Scenario",
    "ScenarioError",
    "Step",
    "WorkloadSpec",
    "build_config",
    "flag_argv",
    "load_scenario",
    "parse_scenario",
]

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
TOP_KEYS = (
    "name",
    "description",
    "start",
    "flags",
    "objects",
    "metrics",
    "workload",
    "nodes",
    "steps",
)
METRICS_KEYS = ("pods", "custom", "external", "unavailable")
STEP_KEYS = ("after", "apply", "delete", "metrics", "repeat")
WORKLOAD_KEYS = ("target", "podReadyAfter", "requests", "demand")
TARGET_KEYS = ("apiVersion", "kind", "namespace", "name")
DELETE_KEYS = ("apiVersion", "kind", "namespace", "name")
METRICS_GROUPS = ("metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io")
# Flags the simulator sets itself: where the API server is, and no config file.
FORBIDDEN_FLAGS = ("kubeconfig", "master", "config")
# In simulation the client must not be throttled: virtual time does not refill a
# real-time token bucket. Leader election and the HTTP servers are off.
SIMULATION_FLAGS = (
    "--kube-api-qps=1000000",
    "--kube-api-burst=1000000",
    "--leader-elect=false",
    "--metrics-bind-address=0",
    "--health-probe-bind-address=0",
)


class ScenarioError(Exception):
    """A problem in a scenario; `str()` is `<where>: <what>`."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.message = message


@dataclass(frozen=True, slots=True)
class MetricsSpec:
    """One `metrics` block. None means "key absent": that API's answer is unchanged."""

    pods: tuple[dict[str, Any], ...] | None = None
    custom: tuple[dict[str, Any], ...] | None = None
    external: tuple[dict[str, Any], ...] | None = None
    unavailable: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class DeleteRef:
    kind: str
    namespace: str
    name: str
    api_version: str | None
    where: str


@dataclass(frozen=True, slots=True)
class Step:
    index: int  # position in the file's `steps` list
    after: float | None  # seconds; None = the default (sync period, 0s for the first step)
    apply: tuple[dict[str, Any], ...] = ()
    delete: tuple[DeleteRef, ...] = ()
    metrics: MetricsSpec | None = None
    repeat: int = 1


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    start: datetime
    flags: dict[str, str]
    config: ControllerConfig
    objects: tuple[dict[str, Any], ...]
    metrics: MetricsSpec | None
    workload: tuple[WorkloadSpec, ...]
    steps: tuple[Step, ...]
    source: str = field(default="", compare=False)
    nodes: tuple[Node, ...] = ()  # `nodes` (hpactl.simulate.nodes): pods get placed

    @property
    def sync_period(self) -> float:
        return self.config.hpa.sync_period.total_seconds()

    def timeline(self) -> list[tuple[int, Step, float]]:
        """(recorded step number, step, seconds since start) for every repetition."""
        out: list[tuple[int, Step, float]] = []
        t = 0.0
        n = 0
        for step in self.steps:
            for _ in range(step.repeat):
                if step.after is not None:
                    t += step.after
                elif n > 0:
                    t += self.sync_period
                out.append((n, step, t))
                n += 1
        return out


# ------------------------------------------------------------------------ helpers


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    return type(v).__name__


def _map(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ScenarioError(where, f"expected a map, got {_type_name(v)}")
    for k in v:
        if not isinstance(k, str):
            raise ScenarioError(where, f"keys must be strings, got {k!r}")
    return v


def _list(v: Any, where: str) -> list[Any]:
    if not isinstance(v, list):
        raise ScenarioError(where, f"expected a list, got {_type_name(v)}")
    return v


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise ScenarioError(where, f"expected a string, got {_type_name(v)}")
    return v


def _known(m: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for k in m:
        if k not in allowed:
            prefix = f"{where}." if where else ""
            raise ScenarioError(
                f"{prefix}{k}", f"unknown key (expected one of: {', '.join(allowed)})"
            )


def _duration(v: Any, where: str) -> float:
    """Go duration text (numbers are read as seconds)."""
    if isinstance(v, bool):
        raise ScenarioError(where, f"expected a duration, got {_type_name(v)}")
    if isinstance(v, (int, float)):
        text = f"{v}s"
    elif isinstance(v, str):
        text = v
    else:
        raise ScenarioError(where, f"expected a duration, got {_type_name(v)}")
    try:
        td = parse_go_duration(text)
    except ValueError:
        raise ScenarioError(where, f"invalid duration {json.dumps(str(v))}") from None
    if td < timedelta(0):
        raise ScenarioError(where, f"invalid duration {json.dumps(str(v))}: must not be negative")
    return td.total_seconds()


def _quantity(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ScenarioError(where, f"expected a quantity, got {_type_name(v)}")
    try:
        q = parse_quantity(v)
    except ValueError as exc:
        raise ScenarioError(where, str(exc)) from None
    return q.milli_value()


def _flag_text(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise ScenarioError(where, f"expected a string, number or boolean, got {_type_name(v)}")


# ------------------------------------------------------------------------ flags


def _flags(v: Any) -> dict[str, str]:
    m = _map(v, "flags")
    out: dict[str, str] = {}
    for k, raw in m.items():
        where = f"flags.{k}"
        if k.startswith("-"):
            raise ScenarioError(where, "spell flags without the leading --")
        if k in FORBIDDEN_FLAGS:
            raise ScenarioError(where, "not allowed in a scenario (the simulator sets it)")
        if k == "feature-gates" and isinstance(raw, dict):
            out[k] = ",".join(f"{g}={_flag_text(b, f'{where}.{g}')}" for g, b in raw.items())
        else:
            out[k] = _flag_text(raw, where)
    return out


def flag_argv(flags: Mapping[str, str], kubeconfig: str | None = None) -> list[str]:
    """The `hpactl run` argv for scenario flags plus the simulator's own settings."""
    argv = [f"--{k}={v}" for k, v in flags.items()]
    argv.extend(SIMULATION_FLAGS)
    if kubeconfig is not None:
        argv.append(f"--kubeconfig={kubeconfig}")
    return argv


def build_config(flags: Mapping[str, str], kubeconfig: str | None = None) -> ControllerConfig:
    """Validate flags with `hpactl run`'s own parser (same rules, same messages)."""
    from hpactl.flags import parse_run_config

    for k, v in flags.items():
        try:
            parse_run_config([f"--{k}={v}"], {})
        except ConfigError as exc:
            raise ScenarioError(f"flags.{k}", _strip_flag(str(exc), k)) from None
    try:
        return parse_run_config(flag_argv(flags, kubeconfig), {})
    except ConfigError as exc:
        raise ScenarioError("flags", str(exc)) from None


def _strip_flag(message: str, key: str) -> str:
    prefix = f"--{key}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


# ------------------------------------------------------------------------ metrics


def _validate_items(kind: str, items: list[Any], where: str) -> None:
    """Let the emulator's own metrics normalizer judge each item (no state kept)."""
    from hpactl.emulator.metrics_api import MetricsState

    state = MetricsState(lambda ns, name: None, lambda: DEFAULT_START)
    for i, item in enumerate(items):
        w = f"{where}[{i}]"
        _map(item, w)
        if isinstance(item.get("value"), Recording):  # validated with its first value
            item = {**item, "value": item["value"].quantity_at(0.0)}
        try:
            if kind == "pods":
                state.set_pod_metrics([item])
            elif kind == "custom":
                state.set_custom([item])
            else:
                state.set_external([item])
        except (ValueError, TypeError, KeyError) as exc:
            raise ScenarioError(w, str(exc) or type(exc).__name__) from None


def _recording(spec: Any, where: str, base: Path, *, demand: bool = False) -> Recording:
    """A `{file, column?, series?, scale?}` series (docs/scenario-format.md)."""
    try:
        return load_recording(spec, base, allow_negative=not demand)
    except RecordingError as exc:
        raise ScenarioError(f"{where}.{exc.key}" if exc.key else where, exc.message) from None


def _recorded_values(items: list[Any], where: str, base: Path) -> list[Any]:
    """Custom/external items whose `value` names a file: the value becomes the
    Recording (the runner sets the value at each step's time)."""
    out: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("value"), dict):
            item = {**item, "value": _recording(item["value"], f"{where}[{i}].value", base)}
        out.append(item)
    return out


def _metrics(v: Any, where: str, base: Path = Path()) -> MetricsSpec:
    m = _map(v, where)
    _known(m, METRICS_KEYS, where)
    parts: dict[str, Any] = {}
    for key in ("pods", "custom", "external"):
        if key in m:
            items = _list(m[key] if m[key] is not None else [], f"{where}.{key}")
            if key != "pods":
                items = _recorded_values(items, f"{where}.{key}", base)
            _validate_items(key, items, f"{where}.{key}")
            parts[key] = tuple(items)
    if "unavailable" in m:
        groups = _list(
            m["unavailable"] if m["unavailable"] is not None else [], f"{where}.unavailable"
        )
        for i, g in enumerate(groups):
            if g not in METRICS_GROUPS:
                raise ScenarioError(
                    f"{where}.unavailable[{i}]",
                    f"unknown API group {json.dumps(g)} (expected one of: {', '.join(METRICS_GROUPS)})",
                )
        parts["unavailable"] = tuple(groups)
    return MetricsSpec(**parts)


# ------------------------------------------------------------------------ workload


def _workload(v: Any, base: Path = Path()) -> tuple[WorkloadSpec, ...]:
    out: list[WorkloadSpec] = []
    seen: set[tuple[str, str, str]] = set()
    for i, item in enumerate(_list(v, "workload")):
        where = f"workload[{i}]"
        m = _map(item, where)
        _known(m, WORKLOAD_KEYS, where)
        if "target" not in m:
            raise ScenarioError(f"{where}.target", "required")
        t = _map(m["target"], f"{where}.target")
        _known(t, TARGET_KEYS, f"{where}.target")
        kind = _str(t.get("kind"), f"{where}.target.kind") if "kind" in t else ""
        name = _str(t.get("name"), f"{where}.target.name") if "name" in t else ""
        if not kind:
            raise ScenarioError(f"{where}.target.kind", "required")
        if not name:
            raise ScenarioError(f"{where}.target.name", "required")
        ns = _str(t.get("namespace", "default"), f"{where}.target.namespace") or "default"
        api_version = (
            _str(t["apiVersion"], f"{where}.target.apiVersion") if "apiVersion" in t else None
        )
        if (kind, ns, name) in seen:
            raise ScenarioError(f"{where}.target", f"{kind}/{ns}/{name} is listed twice")
        seen.add((kind, ns, name))
        ready_after = (
            _duration(m["podReadyAfter"], f"{where}.podReadyAfter") if "podReadyAfter" in m else 0.0
        )
        requests: dict[str, str] = {}
        if "requests" in m and m["requests"] is not None:
            for res, q in _map(m["requests"], f"{where}.requests").items():
                _quantity(q, f"{where}.requests.{res}")
                requests[res] = str(parse_quantity(q))
        demand: dict[str, tuple[DemandPoint, ...]] = {}
        if "demand" in m and m["demand"] is not None:
            for res, curve in _map(m["demand"], f"{where}.demand").items():
                if isinstance(curve, dict):  # recorded: {file, column?, series?, scale?}
                    rec = _recording(curve, f"{where}.demand.{res}", base, demand=True)
                    demand[res] = rec.demand_points()
                    continue
                points: list[DemandPoint] = []
                for j, p in enumerate(_list(curve, f"{where}.demand.{res}")):
                    pw = f"{where}.demand.{res}[{j}]"
                    pm = _map(p, pw)
                    _known(pm, ("at", "value"), pw)
                    if "at" not in pm:
                        raise ScenarioError(f"{pw}.at", "required")
                    if "value" not in pm:
                        raise ScenarioError(f"{pw}.value", "required")
                    at = _duration(pm["at"], f"{pw}.at")
                    milli = _quantity(pm["value"], f"{pw}.value")
                    if milli < 0:
                        raise ScenarioError(f"{pw}.value", "must not be negative")
                    if points and at < points[-1].at:
                        raise ScenarioError(f"{pw}.at", "points must be in time order")
                    points.append(DemandPoint(at, milli))
                if not points:
                    raise ScenarioError(f"{where}.demand.{res}", "needs at least one point")
                demand[res] = tuple(points)
        out.append(
            WorkloadSpec(
                kind=kind,
                namespace=ns,
                name=name,
                api_version=api_version,
                pod_ready_after=ready_after,
                requests=requests,
                demand=demand,
                where=where,
            )
        )
    return tuple(out)


# ------------------------------------------------------------------------ objects and steps


def _manifests(v: Any, where: str) -> tuple[dict[str, Any], ...]:
    out: list[dict[str, Any]] = []
    for i, obj in enumerate(_list(v if v is not None else [], where)):
        w = f"{where}[{i}]"
        m = _map(obj, w)
        for k in ("apiVersion", "kind"):
            if not isinstance(m.get(k), str) or not m.get(k):
                raise ScenarioError(f"{w}.{k}", "required")
        meta = m.get("metadata")
        if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
            raise ScenarioError(f"{w}.metadata.name", "required")
        out.append(m)
    return tuple(out)


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _check_workload_targets(scenario: Scenario) -> None:
    """Every `workload` target names an object the scenario creates (in `objects` or
    in some step's `apply`): a typo would otherwise run without pods or metrics."""
    manifests = [*scenario.objects, *(obj for st in scenario.steps for obj in st.apply)]
    for spec in scenario.workload:
        same_kind: list[str] = []
        for m in manifests:
            if m.get("kind") != spec.kind:
                continue
            if spec.api_version is not None and _group(str(m.get("apiVersion"))) != _group(
                spec.api_version
            ):
                continue
            meta = m.get("metadata") or {}
            ns = str(meta.get("namespace") or "default")
            if (ns, meta.get("name")) == (spec.namespace, spec.name):
                break
            same_kind.append(f"{ns}/{meta.get('name') or meta.get('generateName')}")
        else:
            hint = f"; other {spec.kind} objects: {', '.join(same_kind)}" if same_kind else ""
            raise ScenarioError(
                f"{spec.where}.target",
                f"{spec.key} matches no object in objects or in any step's apply{hint}",
            )


def _deletes(v: Any, where: str) -> tuple[DeleteRef, ...]:
    out: list[DeleteRef] = []
    for i, item in enumerate(_list(v if v is not None else [], where)):
        w = f"{where}[{i}]"
        m = _map(item, w)
        _known(m, DELETE_KEYS, w)
        for k in ("kind", "name"):
            if not isinstance(m.get(k), str) or not m.get(k):
                raise ScenarioError(f"{w}.{k}", "required")
        ns = m.get("namespace", "default")
        out.append(
            DeleteRef(
                kind=m["kind"],
                namespace=_str(ns, f"{w}.namespace") or "default",
                name=m["name"],
                api_version=_str(m["apiVersion"], f"{w}.apiVersion") if "apiVersion" in m else None,
                where=w,
            )
        )
    return tuple(out)


def _steps(v: Any, base: Path = Path()) -> tuple[Step, ...]:
    out: list[Step] = []
    for i, item in enumerate(_list(v, "steps")):
        where = f"steps[{i}]"
        m = _map(item if item is not None else {}, where)
        _known(m, STEP_KEYS, where)
        after = _duration(m["after"], f"{where}.after") if "after" in m else None
        repeat = 1
        if "repeat" in m:
            r = m["repeat"]
            if isinstance(r, bool) or not isinstance(r, int) or r < 1:
                raise ScenarioError(f"{where}.repeat", f"expected a whole number >= 1, got {r!r}")
            repeat = r
        out.append(
            Step(
                index=i,
                after=after,
                apply=_manifests(m.get("apply"), f"{where}.apply"),
                delete=_deletes(m.get("delete"), f"{where}.delete"),
                metrics=_metrics(m["metrics"], f"{where}.metrics", base)
                if m.get("metrics") is not None
                else None,
                repeat=repeat,
            )
        )
    return tuple(out)


def _plain(v: Any) -> Any:
    """JSON-ready values: YAML turns unquoted timestamps into datetimes; make them
    RFC 3339 text again, as a Kubernetes client would send them."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, datetime):
        dt = (v if v.tzinfo else v.replace(tzinfo=UTC)).astimezone(UTC)
        text = dt.isoformat() if dt.microsecond else dt.strftime("%Y-%m-%dT%H:%M:%S")
        return text.removesuffix("+00:00") + "Z"
    if isinstance(v, date):
        return v.isoformat()
    return v


def parse_scenario(data: Any, *, source: str = "", base_dir: Path | None = None) -> Scenario:
    """Validate a decoded scenario document. Recorded series (`{file: ...}`) are read
    from `base_dir` (default: the current directory)."""
    base = base_dir if base_dir is not None else Path()
    m = _map(_plain(data), "")
    _known(m, TOP_KEYS, "")
    name = _str(m["name"], "name") if "name" in m else (Path(source).stem if source else "scenario")
    description = _str(m.get("description") or "", "description")
    start = DEFAULT_START
    if "start" in m:
        raw = m["start"]
        if isinstance(raw, datetime):  # YAML turns unquoted timestamps into datetimes
            start = raw if raw.tzinfo else raw.replace(tzinfo=UTC)
            start = start.astimezone(UTC)
        else:
            try:
                start = parse_time(_str(raw, "start"))
            except ValueError as exc:
                raise ScenarioError("start", str(exc)) from None
    flags = _flags(m["flags"]) if m.get("flags") is not None else {}
    config = build_config(flags)
    if "steps" not in m:
        raise ScenarioError("steps", "required")
    scenario = Scenario(
        name=name,
        description=description,
        start=start,
        flags=flags,
        config=config,
        objects=_manifests(m.get("objects"), "objects"),
        metrics=_metrics(m["metrics"], "metrics", base) if m.get("metrics") is not None else None,
        workload=_workload(m["workload"], base) if m.get("workload") is not None else (),
        steps=_steps(m["steps"] if m["steps"] is not None else [], base),
        source=source,
        nodes=_nodes(m.get("nodes")),
    )
    _check_workload_targets(scenario)
    return scenario


def _nodes(v: Any) -> tuple[Node, ...]:
    try:
        return parse_nodes(v)
    except NodesError as exc:
        raise ScenarioError(exc.where, exc.message) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read a YAML or JSON scenario file (`-`: standard input)."""
    if str(path) == "-":
        import sys

        return loads_scenario(sys.stdin.read(), source="stdin")
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(str(p), exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise ScenarioError(str(p), "not UTF-8 text") from None
    return loads_scenario(text, source=str(p), base_dir=p.parent)


# Values a document may hold once its aliases are expanded: far above any real scenario,
# far below what a "billion laughs" document expands to (it exhausted memory before).
MAX_EXPANDED_VALUES = 1_000_000


def _check_aliasing(data: Any) -> None:
    """Count the values of ``data`` as a traversal would see them (a shared, aliased
    node once per reference) and refuse a document past MAX_EXPANDED_VALUES."""
    seen = 0
    stack = [data]
    while stack:
        value = stack.pop()
        seen += 1
        if seen > MAX_EXPANDED_VALUES:
            raise ScenarioError("yaml", "invalid YAML: document contains excessive aliasing")
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def loads_scenario(text: str, *, source: str = "", base_dir: Path | None = None) -> Scenario:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "yaml"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(where, f"invalid YAML: {problem}") from None
    except RecursionError:
        raise ScenarioError("yaml", "invalid YAML: nested too deeply") from None
    _check_aliasing(data)
    return parse_scenario(data, source=source, base_dir=base_dir)
