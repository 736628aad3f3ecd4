"""Run a scenario: the real controller against the emulator, on a virtual clock.

Per recorded step (see docs/scenario-format.md):

1. move the virtual clock forward by `after`;
2. apply the step's metrics, manifests and deletes; let the workload model react
   (pods, readiness, target status, pod metrics);
3. wait until the controller's informers have seen every write since the last sync
   (a resourceVersion barrier per kind — no sleeping, no bookmark wait);
4. run one sync of every HPA (`HorizontalController.sync_all`), nothing else;
5. let the workload react to scale writes (pods start at this instant) and read back
   the result: each HPA's status, each scale target's spec.replicas, the Events the
   controller wrote during the sync.

The VirtualClock is the only clock the controller and the emulator see; the
informers' network timeouts stay on real time (they bound sockets, not behaviour).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from hpactl.clock import VirtualClock
from hpactl.controller.records import DecisionRecord
from hpactl.emulator import errors as emu_errors
from hpactl.emulator.emulator import Emulator
from hpactl.emulator.registry import ResourceType
from hpactl.emulator.store import WatchEvent, format_timestamp
from hpactl.emulator.validation import hpa_spec_causes, validate_stored
from hpactl.emulator.workload import Workload, demand_at
from hpactl.model.times import parse_time
from hpactl.simulate.recording import Recording
from hpactl.simulate.scenario import (
    DeleteRef,
    MetricsSpec,
    Scenario,
    ScenarioError,
    Step,
    build_config,
)

if TYPE_CHECKING:
    from hpactl.controller.app import ControllerApp

__all__ = ["SimClock", "Simulation", "StepResult", "run_scenario"]

Obj = dict[str, Any]
_HPA_KEY = ("autoscaling", "horizontalpodautoscalers")
_EVENT_KEYS = {("", "events"), ("events.k8s.io", "events")}
# Storage key -> the name of the controller's informer that watches it (by kind).
_INFORMED = {
    ("autoscaling", "horizontalpodautoscalers"): "HorizontalPodAutoscaler",
    ("", "pods"): "Pod",
    ("apps", "deployments"): "Deployment",
    ("apps", "replicasets"): "ReplicaSet",
    ("apps", "statefulsets"): "StatefulSet",
    ("", "replicationcontrollers"): "ReplicationController",
}


@dataclass(slots=True)
class StepResult:
    """What one recorded step produced (the `--output jsonl` line, plus extras)."""

    step: int
    time: datetime
    targets: dict[str, dict[str, Any]]
    hpas: dict[str, dict[str, Any]]
    events: list[dict[str, str]]
    source_index: int = 0  # position of the step in the file
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)  # HPA specs (for plots)
    # HPA key -> (replicas before, after) for each rescale the sync made. Exact even
    # when the event recorder's spam filter drops the SuccessfulRescale event.
    rescales: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    # HPA key -> the sync's decision record (DecisionRecord.to_dict(), as served at
    # /debug/hpa/...): the optional `decisions` field of a jsonl line.
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Target key -> zone -> its scheduled pods (only with nodes; zones from the
    # nodes' topology.kubernetes.io/zone labels). For the timeline and plots.
    zones: dict[str, dict[str, int]] = field(default_factory=dict)
    # Workload target key -> resource -> the total demand at this step, in the
    # resource's unit (cpu: cores). For plots; not part of the jsonl line.
    demand: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "time": format_timestamp(self.time),
            "targets": self.targets,
            "hpas": self.hpas,
            "events": self.events,
            "decisions": self.decisions,
        }


class SimClock:
    """The simulation's clock: a VirtualClock until `go_real()`, then real-time pace.

    `hpactl demo --serve` keeps the controller running after the scenario; from then
    on time moves at the wall clock's pace, continuing from where the virtual time
    stopped (no jump back or forward, so windows and timestamps stay coherent).
    """

    __slots__ = ("_anchor", "_mono0", "_real0", "virtual")

    def __init__(self, start: datetime) -> None:
        self.virtual = VirtualClock(start)
        self._anchor: datetime | None = None
        self._mono0 = 0.0
        self._real0 = 0.0

    def go_real(self) -> None:
        if self._anchor is None:
            self._anchor = self.virtual.now()
            self._mono0 = self.virtual.monotonic()
            self._real0 = time.monotonic()

    def now(self) -> datetime:
        if self._anchor is None:
            return self.virtual.now()
        return self._anchor + timedelta(seconds=time.monotonic() - self._real0)

    def monotonic(self) -> float:
        if self._anchor is None:
            return self.virtual.monotonic()
        return self._mono0 + (time.monotonic() - self._real0)

    async def sleep(self, seconds: float) -> None:
        if self._anchor is None:
            await self.virtual.sleep(seconds)
        else:
            await asyncio.sleep(max(0.0, seconds))

    def advance_to(self, seconds_since_start: float) -> None:
        delta = seconds_since_start - self.virtual.monotonic()
        if delta > 0:
            self.virtual.advance(delta)


def _scale_to_zero_validator(rt: ResourceType, obj: Obj) -> None:
    """The API server's validation with the HPAScaleToZero gate on: minReplicas 0 is
    allowed (with an Object or External metric); everything else as usual."""
    spec = obj.get("spec")
    if (
        rt.group == "autoscaling"
        and rt.plural == "horizontalpodautoscalers"
        and isinstance(spec, dict)
        and spec.get("minReplicas") == 0
    ):
        causes = hpa_spec_causes(spec, min_replicas_lower_bound=0)
        if causes:
            name = str((obj.get("metadata") or {}).get("name") or "")
            raise emu_errors.invalid(rt.kind, rt.group, name, causes)
        validate_stored(rt, {**obj, "spec": {**spec, "minReplicas": 1}})
        return
    validate_stored(rt, obj)


def _api_message(exc: BaseException) -> str:
    if isinstance(exc, emu_errors.ApiError):
        return exc.message
    return str(exc) or type(exc).__name__


class Simulation:
    """An emulator, a workload model and a ControllerApp for one scenario.

    `async with Simulation(scenario) as sim:` loads the objects and starts the
    controller; `await sim.run(on_step)` runs every step; after that the emulator and
    controller stay up until the context exits (`hpactl demo --serve`).
    """

    def __init__(self, scenario: Scenario, *, workdir: str | Path | None = None) -> None:
        self.scenario = scenario
        self.clock = SimClock(scenario.start)
        self.emu = Emulator(now=self.clock.now)
        if scenario.config.feature_gates.enabled("HPAScaleToZero"):
            # The scenario's feature gates are the cluster's: the API server accepts
            # minReplicas 0 only with the gate. (The emulator has no switch for it.)
            self.emu.store.set_validator(_scale_to_zero_validator)
        self.workload = Workload(
            self.emu.store,
            scenario.workload,
            start=scenario.start,
            now=self.clock.now,
            nodes=scenario.nodes,
        )
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._workdir = Path(workdir) if workdir is not None else None
        self.kubeconfig: Path | None = None
        self.app: ControllerApp | None = None
        self._pending: dict[str, int] = {}  # kind -> last written resourceVersion
        self._capture: list[WatchEvent] | None = None
        self._pod_items: list[Obj] = []
        self._last_pod_metrics: list[Obj] | None = None
        # "custom"/"external" -> (items with a recorded value, the values last set)
        self._recorded: dict[str, tuple[tuple[Obj, ...], list[Obj]]] = {}
        self.results: list[StepResult] = []

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        from hpactl.controller.app import ControllerApp  # heavy: kubernetes client, OTel

        sc = self.scenario
        await self.emu.start()
        self.emu.store.on_write.append(self._on_write)
        for i, obj in enumerate(sc.objects):
            self._apply(obj, f"objects[{i}]")
        self._check_workload_kinds()
        if sc.metrics is not None:
            self._set_metrics(sc.metrics, "metrics")
        self._react()
        if self._workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="hpactl-sim-")
            self._workdir = Path(self._tmp.name)
        self._workdir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = self.emu.write_kubeconfig(self._workdir / "kubeconfig")
        config = build_config(sc.flags, kubeconfig=str(self.kubeconfig))
        app = ControllerApp(config, clock=self.clock, env={})
        await app.__aenter__()
        self.app = app
        self._pending.clear()  # the first list saw everything

    async def close(self) -> None:
        if self.app is not None:
            app, self.app = self.app, None
            await app.__aexit__(None, None, None)
        await self.emu.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # ------------------------------------------------------------------ writes

    def _on_write(self, ev: WatchEvent) -> None:
        kind = _INFORMED.get(ev.key)
        if kind is not None:  # writes nothing caches need no barrier
            self._pending[kind] = max(self._pending.get(kind, 0), ev.rv)
        if self._capture is not None and ev.key in _EVENT_KEYS and ev.type != "DELETED":
            self._capture.append(ev)

    def _apply(self, obj: Obj, where: str) -> None:
        """Create or replace, creation/deletion timestamps honoured. A manifest with a
        ``status`` key sets the status; one without keeps what the object has (the
        contract's ``apply`` rule: an HPA edited midway keeps its lastScaleTime)."""
        store = self.emu.store
        obj = self._fill_owner_uids(obj, where)
        meta = obj.get("metadata") or {}
        try:
            rt = store.served_type(obj)
            store.ensure_namespace(obj)
            # The store validates (after defaulting) as the API server would.
            stored = store.apply(obj, replace_status="status" in obj)
        except emu_errors.ApiError as exc:
            raise ScenarioError(where, exc.message) from None
        except (ValueError, TypeError, KeyError) as exc:
            raise ScenarioError(where, _api_message(exc)) from None
        forced: dict[str, str] = {}
        for f in ("creationTimestamp", "deletionTimestamp"):
            given = meta.get(f)
            if given is None:
                continue
            if f == "deletionTimestamp" and rt.kind != "Pod":
                continue
            try:
                text = format_timestamp(
                    given if isinstance(given, datetime) else parse_time(str(given))
                )
            except ValueError as exc:
                raise ScenarioError(f"{where}.metadata.{f}", str(exc)) from None
            if stored["metadata"].get(f) != text:
                forced[f] = text
        if forced:
            # The store's writes own these fields (as the API server does); a
            # scenario may still state them.
            store.force_metadata(stored, forced)

    def _fill_owner_uids(self, obj: Obj, where: str) -> Obj:
        """An ownerReference without ``uid`` names an object the scenario created
        earlier (same namespace): its uid is filled in, since the emulator assigns
        uids and a scenario cannot know them (docs/scenario-format.md)."""
        meta = obj.get("metadata")
        refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
        if not isinstance(refs, list) or not any(
            isinstance(r, dict) and not r.get("uid") for r in refs
        ):
            return obj
        assert isinstance(meta, dict)
        namespace = str(meta.get("namespace") or "default")
        filled: list[Any] = []
        for i, ref in enumerate(refs):
            if isinstance(ref, dict) and not ref.get("uid"):
                group = str(ref.get("apiVersion") or "").rpartition("/")[0]
                kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
                rt = self.emu.registry.by_kind(group, kind)
                owner = (
                    None if rt is None else self.emu.store.get(rt.group, rt.plural, namespace, name)
                )
                if owner is None:
                    raise ScenarioError(
                        f"{where}.metadata.ownerReferences[{i}]",
                        f'{kind} "{name}" does not exist in {namespace}: an ownerReference '
                        "without uid must name an object created before this one",
                    )
                ref = {**ref, "uid": owner["metadata"]["uid"]}
            filled.append(ref)
        return {**obj, "metadata": {**meta, "ownerReferences": filled}}

    def _check_workload_kinds(self) -> None:
        """A workload target must be of a kind an HPA can scale (served with a scale
        subresource): the workload model runs pods for nothing else."""
        for spec in self.scenario.workload:
            group = spec.api_version.rpartition("/")[0] if spec.api_version is not None else None
            served = [
                rt
                for rt in self.emu.registry
                if rt.kind == spec.kind and not rt.external and group in (None, rt.group)
            ]
            if served and all(rt.scale is None for rt in served):
                raise ScenarioError(
                    f"{spec.where}.target",
                    f"{spec.kind} has no scale subresource: a workload target must be "
                    "something an HPA can scale",
                )

    def _delete(self, ref: DeleteRef) -> None:
        reg = self.emu.registry
        rt: ResourceType | None = None
        if ref.api_version is not None:
            rt = reg.by_kind(ref.api_version.rpartition("/")[0], ref.kind)
        else:
            for cand in reg:
                # A kind served by several groups (Event): the core group wins.
                preferred = rt is None or (cand.group == "" and rt.group != "")
                if cand.kind == ref.kind and not cand.external and preferred:
                    rt = cand
        if rt is None:
            raise ScenarioError(ref.where, f'no matches for kind "{ref.kind}"')
        if not self.emu.store.delete(rt.group, rt.plural, ref.namespace, ref.name):
            raise ScenarioError(ref.where, f'{rt.group_resource} "{ref.name}" not found')

    def _set_metrics(self, spec: MetricsSpec, where: str) -> None:
        m = self.emu.metrics
        try:
            if spec.pods is not None:
                self._pod_items = [dict(p) for p in spec.pods]
                self._last_pod_metrics = None
            if spec.custom is not None:
                m.set_custom(self._values_now("custom", spec.custom))
            if spec.external is not None:
                m.set_external(self._values_now("external", spec.external))
            if spec.unavailable is not None:
                m.set_unavailable(spec.unavailable)
        except (ValueError, TypeError, KeyError) as exc:
            raise ScenarioError(where, _api_message(exc)) from None

    def _values_now(self, kind: str, items: tuple[Obj, ...]) -> list[Obj]:
        """Metric items at the current time: a recorded `value` (`{file: ...}`) takes
        its series' value now, and is kept to follow the series at later steps."""
        t = (self.clock.now() - self.scenario.start).total_seconds()
        now = [
            {**x, "value": v.quantity_at(t)}
            if isinstance(v := x.get("value"), Recording)
            else dict(x)
            for x in items
        ]
        if any(isinstance(x.get("value"), Recording) for x in items):
            self._recorded[kind] = (items, now)
        else:
            self._recorded.pop(kind, None)
        return now

    def _follow_recorded(self) -> None:
        """Custom and external values that follow a recorded series, set anew when
        their value at this time differs from the last one set."""
        for kind, (items, last) in list(self._recorded.items()):
            now = self._values_now(kind, items)
            if now != last:
                if kind == "custom":
                    self.emu.metrics.set_custom(now)
                else:
                    self.emu.metrics.set_external(now)

    def _react(self) -> None:
        """The workload model's turn: pods, readiness, status, pod metrics."""
        self._follow_recorded()
        self.workload.reconcile()
        generated = self.workload.pod_metrics()
        listed = {
            (
                str((p.get("metadata") or {}).get("namespace") or ""),
                str((p.get("metadata") or {}).get("name") or ""),
            )
            for p in self._pod_items
        }
        items = list(self._pod_items) + [
            g
            for g in generated
            if (g["metadata"]["namespace"], g["metadata"]["name"]) not in listed
        ]
        if items != self._last_pod_metrics:
            self.emu.metrics.set_pod_metrics(items)
            self._last_pod_metrics = items

    # ------------------------------------------------------------------ steps

    @property
    def _app(self) -> ControllerApp:
        if self.app is None:
            raise RuntimeError("the simulation is not started")
        return self.app

    async def _barrier(self) -> None:
        if self._pending:
            writes, self._pending = self._pending, {}
            await self._app.informers.wait_for_writes(writes, timeout=30.0)

    async def step(self, number: int, step: Step, seconds_since_start: float) -> StepResult:
        self.clock.advance_to(seconds_since_start)
        where = f"steps[{step.index}]"
        if step.metrics is not None:
            self._set_metrics(step.metrics, f"{where}.metrics")
        for j, obj in enumerate(step.apply):
            self._apply(obj, f"{where}.apply[{j}]")
        for ref in step.delete:
            self._delete(ref)
        self._react()
        await self._barrier()
        captured: list[WatchEvent] = []
        self._capture = captured
        try:
            records = await self._app.controller.sync_all()
        finally:
            self._capture = None
        self._react()
        result = self._record(number, step.index, captured)
        result.rescales = {r.key: (r.current, r.desired) for r in records if r.rescaled}
        result.decisions = {
            r.key: DecisionRecord(result.time, r).to_dict()
            for r in sorted(records, key=lambda rec: rec.key)
        }
        result.demand = self._demand(seconds_since_start)
        self.results.append(result)
        return result

    async def run(
        self,
        on_step: Callable[[StepResult], Awaitable[None] | None] | None = None,
        *,
        until: float | None = None,
    ) -> list[StepResult]:
        """Run every step (or those up to `until` seconds of virtual time)."""
        for number, step, t in self.scenario.timeline():
            if until is not None and t > until:
                break
            result = await self.step(number, step, t)
            if on_step is not None:
                maybe = on_step(result)
                if maybe is not None:
                    await maybe
        # Leave the caches current for whoever looks next (demo --serve).
        await self._barrier()
        return self.results

    # ------------------------------------------------------------------ reading back

    def _record(self, number: int, index: int, captured: list[WatchEvent]) -> StepResult:
        store = self.emu.store
        hpas: dict[str, dict[str, Any]] = {}
        specs: dict[str, dict[str, Any]] = {}
        targets: dict[str, dict[str, Any]] = {}
        zones: dict[str, dict[str, int]] = {}
        for e in store.iter_entries(_HPA_KEY, None):
            meta = e.obj.get("metadata") or {}
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            # Stored objects are never mutated in place (a write stores a new dict).
            hpas[key] = e.obj.get("status") or {}
            spec = e.obj.get("spec") or {}
            specs[key] = spec
            ref = spec.get("scaleTargetRef") or {}
            tkey = f"{ref.get('kind')}/{meta.get('namespace')}/{ref.get('name')}"
            if tkey not in targets:
                targets[tkey] = {"replicas": self._target_replicas(ref, str(meta.get("namespace")))}
                # With nodes: where its pods are (the contract's pods/topology/skew).
                placed = self.workload.placement(
                    str(ref.get("kind") or ""),
                    str(ref["apiVersion"]) if ref.get("apiVersion") else None,
                    str(meta.get("namespace")),
                    str(ref.get("name") or ""),
                )
                if placed is not None:
                    targets[tkey].update(
                        pods=placed.pods, topology=placed.topology, skew=placed.skew
                    )
                    zones[tkey] = placed.zones
        events = []
        for ev in captured:
            o = ev.entry.obj
            inv = o.get("involvedObject") or o.get("regarding") or {}
            events.append(
                {
                    "object": f"{inv.get('kind')}/{inv.get('namespace')}/{inv.get('name')}",
                    "type": str(o.get("type") or ""),
                    "reason": str(o.get("reason") or ""),
                    "message": str(o.get("message") or o.get("note") or ""),
                }
            )
        return StepResult(
            step=number,
            time=self.clock.now(),
            targets=dict(sorted(targets.items())),
            hpas=hpas,
            events=events,
            source_index=index,
            specs=specs,
            zones=zones,
        )

    def _demand(self, seconds_since_start: float) -> dict[str, dict[str, float]]:
        """The workload's total demand per target and resource (what the pod metrics
        were spread from), in the resource's unit."""
        return {
            spec.key: {
                res: demand_at(curve, seconds_since_start) / 1000
                for res, curve in spec.demand.items()
            }
            for spec in self.scenario.workload
            if spec.demand
        }

    def _target_replicas(self, ref: dict[str, Any], namespace: str) -> int | None:
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        rt = self.emu.registry.by_kind(group, str(ref.get("kind") or ""))
        if rt is None or rt.scale is None:
            return None
        e = self.emu.store.get_entry(rt.storage_key, namespace, str(ref.get("name") or ""))
        if e is None:
            return None
        cur: Any = e.obj
        for part in rt.scale.spec_replicas.strip(".").split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        return cur if isinstance(cur, int) and not isinstance(cur, bool) else None

    async def serve(self, *, tick: float = 1.0) -> None:
        """Keep everything running at real-time pace until cancelled (demo --serve):
        the controller syncs on its own schedule, the workload keeps reacting."""
        self.clock.go_real()
        self._app.controller.start_scheduling()
        while True:
            self._react()
            await asyncio.sleep(tick)


async def run_scenario(
    scenario: Scenario,
    on_step: Callable[[StepResult], Awaitable[None] | None] | None = None,
) -> list[StepResult]:
    """Run every step and shut down; the recorded results in order."""
    async with Simulation(scenario) as sim:
        return await sim.run(on_step)
