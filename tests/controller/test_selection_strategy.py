"""KEP-5325's pod selection strategy (gate HPASelectionStrategy, annotation
``hpactl.dev/selection-strategy``) against the emulator.

The cluster: a Deployment mid rolling update (an old and a new ReplicaSet, two pods
each, all controlled through the Deployment's ReplicaSets) plus an unrelated pod (a
debugging pod nobody owns) whose labels match the Deployment's selector and which
burns CPU. ``LabelSelector`` (upstream) counts all five pods, ``OwnerReference`` only
the Deployment's four, old and new ReplicaSet alike (the KEP follows the ownership
chain; it does not tell revisions apart).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.model.featuregates import FeatureGates

from .builders import deployment, events, hpa, pod, pod_metrics

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ANNOTATION = "hpactl.dev/selection-strategy"
OWNED = ["web-old-0", "web-old-1", "web-new-0", "web-new-1"]
STRANGER = "debug-0"
Obj = dict[str, Any]


def owner(kind: str, obj: Obj) -> list[Obj]:
    meta = obj["metadata"]
    return [
        {
            "apiVersion": obj["apiVersion"],
            "kind": kind,
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def replicaset(name: str, dep: Obj, hash_: str) -> Obj:
    labels = {"app": "web", "pod-template-hash": hash_}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": labels,
            "ownerReferences": owner("Deployment", dep),
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


@dataclass
class Run:
    emu: Emulator
    app: ControllerApp
    clock: VirtualClock

    async def step(self, seconds: float = 0.0) -> dict[str, Any]:
        if seconds:
            self.clock.advance(seconds)
        await self.app.wait_for_rv(self.emu.store.current_resource_version(), timeout=10)
        return {r.key: r for r in await self.app.controller.sync_all()}

    def hpa_obj(self, name: str = "web") -> Obj:
        obj = self.emu.store.get("autoscaling", "horizontalpodautoscalers", "default", name)
        assert obj is not None
        return obj

    def set_hpa(self, raw: Obj) -> None:
        current = self.hpa_obj(raw["metadata"]["name"])
        raw = {**raw, "metadata": {**current["metadata"], **raw["metadata"]}}
        self.emu.store.apply(raw)

    def replicas(self) -> int:
        obj = self.emu.store.get("apps", "deployments", "default", "web")
        assert obj is not None
        return int(obj["spec"]["replicas"])

    def load(self, owned_cpu: str, stranger_cpu: str = "900m") -> None:
        now = self.clock.now()
        self.emu.metrics.set_pod_metrics(
            pod_metrics(OWNED, owned_cpu, now) + pod_metrics([STRANGER], stranger_cpu, now)
        )

    def events(self) -> list[tuple[str, str, str, int]]:
        return sorted((e["type"], e["reason"], e["message"], e["count"]) for e in events(self.emu))


def web_hpa(strategy: str | None, **behavior: Any) -> Obj:
    raw = hpa("web", "web", max_replicas=10)
    if strategy is not None:
        raw["metadata"]["annotations"] = {ANNOTATION: strategy}
    if behavior:
        raw["spec"]["behavior"] = behavior
    return raw


@asynccontextmanager
async def cluster(gate: bool, strategy: str | None, **behavior: Any) -> AsyncIterator[Run]:
    """The rolling-update cluster and one HPA on the Deployment."""
    clock = VirtualClock(T0)
    gates = FeatureGates.from_map({"HPASelectionStrategy": gate})
    async with Emulator(now=clock.now, bookmark_interval=0.05) as emu:
        dep = emu.store.create(deployment("web", 4))
        for rs_name, hash_ in (("web-old", "aaa"), ("web-new", "bbb")):
            rs = emu.store.create(replicaset(rs_name, dep, hash_))
            for i in range(2):
                p = pod("web", i, T0)
                p["metadata"]["name"] = f"{rs_name}-{i}"
                p["metadata"]["labels"]["pod-template-hash"] = hash_
                p["metadata"]["ownerReferences"] = owner("ReplicaSet", rs)
                emu.store.create(p)
        stranger = pod("web", 0, T0)
        stranger["metadata"]["name"] = STRANGER
        emu.store.create(stranger)
        emu.store.create(web_hpa(strategy, **behavior))
        config = ControllerConfig(
            client=ClientConnectionConfig(master=emu.url), feature_gates=gates
        )
        async with ControllerApp(config, clock=clock, env={}) as app:
            yield Run(emu, app, clock)


async def outcome(gate: bool, strategy: str | None) -> tuple[Obj, list[Any], Any]:
    """One sync at 50% CPU on the owned pods and 900% on the stranger."""
    async with cluster(gate, strategy) as run:
        run.load("50m")
        recs = await run.step()
        return run.hpa_obj()["status"], run.events(), recs["default/web"]


async def test_label_selector_counts_the_stranger_owner_reference_does_not() -> None:
    # Upstream: (4*50% + 900%) / 5 pods = 220% of the 50% target -> up to 8 (2x limit).
    status, _, rec = await outcome(True, None)
    assert (rec.current, rec.desired, rec.rescaled) == (4, 8, True)
    (m,) = rec.explanation.metrics
    assert m.total_pods == 5
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 220

    # OwnerReference: the four pods of both ReplicaSets, at 50%: within tolerance.
    status, evs, rec = await outcome(True, "OwnerReference")
    assert (rec.current, rec.desired, rec.rescaled) == (4, 4, False)
    (m,) = rec.explanation.metrics
    assert (m.total_pods, m.ready_pods) == (4, 4)
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 50
    assert not [c for c in status["conditions"] if c["type"] == "AnnotationsValid"]
    assert not [e for e in evs if e[0] == "Warning"]

    # LabelSelector written out is the default.
    assert (await outcome(True, "LabelSelector"))[:2] == (await outcome(True, None))[:2]


async def test_gate_off_is_upstream_byte_for_byte() -> None:
    upstream = await outcome(False, None)
    for strategy in ("OwnerReference", "Ownerreference"):
        got = await outcome(False, strategy)
        assert got[:2] == upstream[:2]
        assert got[2].desired == 8
    # The gate on with nothing set is upstream too.
    assert (await outcome(True, None))[:2] == upstream[:2]


async def test_malformed_value_warns_and_syncs_as_if_unset() -> None:
    unset_status, unset_events, _ = await outcome(True, None)
    status, evs, rec = await outcome(True, "Ownerreference")
    assert (rec.current, rec.desired, rec.rescaled) == (4, 8, True)
    (cond,) = [c for c in status["conditions"] if c["type"] == "AnnotationsValid"]
    message = (
        "annotation hpactl.dev/selection-strategy='Ownerreference' is neither "
        "LabelSelector nor OwnerReference; selecting pods by label (LabelSelector)"
    )
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "InvalidSelectionStrategy",
        message,
    )
    rest = {**status, "conditions": [c for c in status["conditions"] if c is not cond]}
    assert rest == unset_status
    assert ("Warning", "InvalidSelectionStrategy", message, 1) in evs
    assert [e for e in evs if e[1] != "InvalidSelectionStrategy"] == unset_events


async def test_fixing_the_value_removes_the_condition() -> None:
    async with cluster(True, "owner") as run:
        run.load("50m")
        await run.step()
        assert any(c["type"] == "AnnotationsValid" for c in run.hpa_obj()["status"]["conditions"])
        run.set_hpa(web_hpa("OwnerReference"))
        run.load("50m")
        recs = await run.step(15)
        assert recs["default/web"].explanation.metrics[0].total_pods == 4
        conds = run.hpa_obj()["status"]["conditions"]
        assert not [c for c in conds if c["type"] == "AnnotationsValid"]


async def test_switching_strategy_keeps_stabilization_and_rate_policies() -> None:
    behavior = {
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}],
        }
    }
    async with cluster(True, None, **behavior) as run:
        run.load("50m")
        recs = await run.step()
        # Label selection: the stranger drives it up (scale-up default policies).
        assert recs["default/web"].desired == 8 and run.replicas() == 8
        # Now only the owned pods count, and they are nearly idle: 10% of 50% ->
        # ceil(0.2 * 4) = 1; the 60 s window still holds the earlier 8.
        run.set_hpa(web_hpa("OwnerReference", **behavior))
        run.load("10m")
        recs = await run.step(15)
        rec = recs["default/web"]
        assert rec.explanation.metric_proposal == 1
        assert (rec.desired, rec.rescaled) == (8, False)
        assert "stabilization" in rec.explanation.limited_by
        # Past the window: down by the policy's 2 pods per 60 s, not to 1 at once.
        run.load("10m")
        rec = (await run.step(61))["default/web"]
        assert (rec.desired, rec.rescaled) == (6, True)
        assert run.replicas() == 6


async def test_ambiguous_selector_is_not_lifted_by_owner_reference() -> None:
    # A KEDA-made HPA and a plain one on the same Deployment: both count the same
    # owned pods, so OwnerReference has nothing to filter; the KEP leaves
    # validateAndParseSelector (run on the label-selected pods) as it is.
    async with cluster(True, "OwnerReference") as run:
        keda = web_hpa("OwnerReference")
        keda["metadata"]["name"] = "keda-hpa-web"
        run.emu.store.create(keda)
        run.load("50m")
        await run.step()
        recs = await run.step(15)
        for key in ("default/web", "default/keda-hpa-web"):
            assert "ambiguous-selector" in recs[key].explanation.limited_by
        (ev, *_) = [e for e in run.events() if e[1] == "AmbiguousSelector"]
        assert "controlled by multiple HPAs: [default/keda-hpa-web default/web]" in ev[2]


async def test_stranger_with_its_own_hpa_is_still_ambiguous() -> None:
    # Overlapping selectors across two targets: the debug pod belongs to a second
    # Deployment whose HPA selects it too. The check runs before the ownership
    # filter, as in the KEP, so both HPAs stop with AmbiguousSelector.
    async with cluster(True, "OwnerReference") as run:
        debug = deployment("debug", 1)
        debug["spec"]["selector"] = {"matchLabels": {"app": "web"}}
        debug["spec"]["template"]["metadata"]["labels"] = {"app": "web"}
        run.emu.store.create(debug)
        run.emu.store.create(hpa("debug", "debug"))
        run.load("50m")
        await run.step()
        recs = await run.step(15)
        for key in ("default/web", "default/debug"):
            assert "ambiguous-selector" in recs[key].explanation.limited_by
