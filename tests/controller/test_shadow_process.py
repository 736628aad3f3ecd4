"""``hpactl run --shadow`` beside a second ``hpactl run`` that plays the built-in
controller, both real processes against one emulator, each behind its own recording
proxy (so every request is attributed).

The test plays the rest of the cluster: a ReplicaSet controller that creates or
deletes pods 2 s after a Deployment's replicas change (a real one takes about that),
kubelets that turn new pods Ready after a while, and a metrics-server that spreads
each workload's CPU demand over its Ready pods. Syncs every 1 s and windows of a few
seconds keep each run to about half a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support.proxy import RecordingProxy

from hpactl.emulator.emulator import Emulator
from hpactl.model.times import format_time

from .builders import deployment, hpa, pod
from .test_run_process import Proc, spawn, wait_until

__all__ = ["spawn"]  # the fixture, shared with test_run_process

pytestmark = pytest.mark.timeout(150)

# Seconds between a Deployment's replicas changing and its pods following. Not a whole
# number of sync periods after the writer's scale: the pods would change right at the
# next syncs, and one controller would see them and the other not, depending on
# milliseconds of load (a divergence of the test's making).
LAG = 2.5
COMMON = [
    "--horizontal-pod-autoscaler-sync-period=1s",
    "--horizontal-pod-autoscaler-cpu-initialization-period=3s",
    "--horizontal-pod-autoscaler-initial-readiness-delay=3s",
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--logging-format=json",
]
WRITER_LEASE = [
    "--leader-elect=true",
    "--leader-elect-lease-duration=3s",
    "--leader-elect-renew-deadline=2s",
    "--leader-elect-retry-period=250ms",
    "--leader-elect-resource-namespace=kube-system",
    "--leader-elect-resource-name=writer",
]


def _now() -> datetime:
    return datetime.now(UTC)


# ----------------------------------------------------------------------------- the cluster


@dataclass
class App:
    name: str
    demand: Callable[[float], int]  # total CPU in milli-cores, by seconds since start
    ready_after: float = 0.0  # seconds a new pod stays unready
    spec: int = 0
    changed_at: float = 0.0
    pods: dict[str, tuple[float, bool]] = field(default_factory=dict)  # created, ready
    counter: int = 100


class World:
    """ReplicaSet controller, kubelets and metrics-server for the apps, in real time."""

    def __init__(self, emu: Emulator, apps: list[App]) -> None:
        self.emu = emu
        self.apps = apps
        self.start = asyncio.get_running_loop().time()
        self._usage: dict[str, int] | None = None
        self._stamped = 0.0
        for app in apps:
            app.spec = self._spec(app)
            for i in range(app.spec):
                p = emu.store.create(pod(app.name, i, _now()))
                app.pods[p["metadata"]["name"]] = (-3600.0, True)

    def t(self) -> float:
        return asyncio.get_running_loop().time() - self.start

    def _spec(self, app: App) -> int:
        obj = self.emu.store.get("apps", "deployments", "default", app.name)
        assert obj is not None
        return int(obj["spec"]["replicas"])

    def step(self) -> None:
        t = self.t()
        now = _now()
        for app in self.apps:
            spec = self._spec(app)
            if spec != app.spec:
                app.spec, app.changed_at = spec, t
            if t - app.changed_at >= LAG:
                while len(app.pods) < spec:
                    app.counter += 1
                    name = f"{app.name}-{app.counter}"
                    self.emu.store.create(_new_pod(name, app.name, now))
                    app.pods[name] = (t, False)
                newest = sorted(app.pods, key=lambda n: app.pods[n][0], reverse=True)
                for name in newest[: max(0, len(app.pods) - spec)]:
                    self.emu.store.delete("", "pods", "default", name)
                    del app.pods[name]
            for name, (created, ready) in list(app.pods.items()):
                if not ready and t - created >= app.ready_after:
                    app.pods[name] = (created, True)
                    started = now - timedelta(seconds=t - created)
                    self.emu.store.update_status(_ready_status(name, app.name, started, now))
        usage: dict[str, int] = {}
        for app in self.apps:
            ready_names = [n for n, (_, r) in app.pods.items() if r]
            for n in app.pods:
                usage[n] = app.demand(t) // len(ready_names) if n in ready_names else 0
        if usage != self._usage or t - self._stamped >= 1.0:  # fresh samples each second
            self._usage, self._stamped = usage, t
            self.emu.metrics.set_pod_metrics(
                {
                    "metadata": {"name": n, "namespace": "default"},
                    "timestamp": format_time(now),
                    "window": "1s",
                    "containers": [{"name": "c", "usage": {"cpu": f"{m}m"}}],
                }
                for n, m in usage.items()
            )

    async def run(self, until: float, actions: dict[float, Callable[[], None]]) -> None:
        pending = sorted(actions.items())
        while self.t() < until:
            while pending and pending[0][0] <= self.t():
                pending.pop(0)[1]()
            self.step()
            await asyncio.sleep(0.1)


def _new_pod(name: str, app: str, now: datetime) -> dict[str, Any]:
    obj = pod(app, 0, now)
    obj["metadata"]["name"] = name
    started = format_time(now)
    obj["status"] = {
        "phase": "Running",
        "startTime": started,
        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": started}],
    }
    return obj


def _ready_status(name: str, app: str, started: datetime, now: datetime) -> dict[str, Any]:
    obj = _new_pod(name, app, started)
    obj["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastTransitionTime": format_time(now)}
    ]
    return obj


def _steps(*points: tuple[float, int]) -> Callable[[float], int]:
    def demand(t: float) -> int:
        value = points[0][1]
        for at, v in points:
            if t >= at:
                value = v
        return value

    return demand


def _behavior(
    *, down_window: int, up_pods: int | None = None, up_period: int = 3
) -> dict[str, Any]:
    up_policies = (
        [{"type": "Pods", "value": up_pods, "periodSeconds": up_period}]
        if up_pods is not None
        else [{"type": "Percent", "value": 100, "periodSeconds": 1}]
    )
    return {
        "scaleUp": {"stabilizationWindowSeconds": 0, "policies": up_policies},
        "scaleDown": {
            "stabilizationWindowSeconds": down_window,
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 1}],
        },
    }


def _hpa(name: str, max_replicas: int, behavior: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = hpa(name, name, max_replicas=max_replicas)
    if behavior is not None:
        obj["spec"]["behavior"] = behavior
    return obj


# ----------------------------------------------------------------------------- reading


def _divergences(fams: dict[str, Any]) -> dict[tuple[str, str], float]:
    fam = fams.get("hpactl_shadow_divergences")
    out: dict[tuple[str, str], float] = {}
    for s in fam.samples if fam is not None else ():
        if s.name.endswith("_total") and s.value:
            key = (s.labels["name"], s.labels["field"])
            out[key] = out.get(key, 0.0) + s.value
    return out


def _gauge(fams: dict[str, Any], name: str) -> float:
    return float(fams[name].samples[0].value)


def _results(fams: dict[str, Any]) -> dict[str, float]:
    fam = fams.get("hpactl_shadow_comparisons")
    return {
        s.labels["result"]: s.value
        for s in (fam.samples if fam is not None else ())
        if s.name.endswith("_total")
    }


def _replicas(emu: Emulator, name: str) -> int:
    obj = emu.store.get("apps", "deployments", "default", name)
    assert obj is not None
    return int(obj["spec"]["replicas"])


async def _start_pair(
    spawn: Callable[..., Any],
    via_writer: RecordingProxy,
    via_shadow: RecordingProxy,
    writer_flags: list[str],
    shadow_flags: list[str],
) -> tuple[Proc, Proc]:
    writer: Proc = await spawn([f"--master={via_writer.url}", *COMMON, *writer_flags])
    # --leader-elect=true is given on purpose: shadow mode ignores it.
    shadow: Proc = await spawn(
        [f"--master={via_shadow.url}", *COMMON, "--shadow", "--leader-elect=true", *shadow_flags]
    )
    await wait_until(lambda: shadow.logged("hpactl.shadow") is not None, 30, shadow, "shadow")
    # The world's timeline starts once both sync: a host slow to start a process must
    # not eat into the seconds before the first load change.
    await wait_until(lambda: writer.logged("hpactl.leading") is not None, 30, writer, "writer")
    return writer, shadow


# ----------------------------------------------------------------------------- tests


async def test_a_shadow_beside_a_writer_with_the_same_rules_never_diverges_and_never_writes(
    spawn: Callable[..., Any],
) -> None:
    """Scale up (the new pods unready for 3 s), a rate-limited burst, a failing metrics
    API, a scale-down held by stabilization: zero divergences, zero writes."""
    async with (
        Emulator() as emu,
        RecordingProxy(emu.url) as via_writer,
        RecordingProxy(emu.url) as via_shadow,
    ):
        emu.store.create(deployment("web", 2))
        emu.store.create(deployment("burst", 2))
        # web: no behavior (the stabilization flag applies); burst: +2 pods per 3 s.
        emu.store.create(_hpa("web", 8))
        emu.store.create(_hpa("burst", 10, _behavior(down_window=4, up_pods=2)))
        # burst's four rate-limited steps come 3-4 s apart from its first sync after 7 s:
        # the last one by about 20.5 s. The metrics API fails after that: a failure
        # between the shadow's sync and the writer's that take one step would stop the
        # writer alone from taking it (decisions from other inputs, a divergence of the
        # test's making). Web and burst are steady while it fails, then the load falls.
        apps = [
            App("web", _steps((0, 100), (7, 300), (25, 60)), ready_after=3.0),
            App("burst", _steps((0, 100), (7, 800), (25, 100))),
        ]
        world = World(emu, apps)
        writer, shadow = await _start_pair(
            spawn,
            via_writer,
            via_shadow,
            [*WRITER_LEASE, "--horizontal-pod-autoscaler-downscale-stabilization=6s"],
            ["--horizontal-pod-autoscaler-downscale-stabilization=6s"],
        )
        world.start = asyncio.get_running_loop().time()
        observed: dict[str, set[int]] = {"web": set(), "burst": set()}

        def fail() -> None:
            emu.metrics.set_unavailable(["metrics.k8s.io"])

        def recover() -> None:
            emu.metrics.set_unavailable([])

        async def watch() -> None:
            while True:
                for name in observed:
                    observed[name].add(_replicas(emu, name))
                await asyncio.sleep(0.1)

        watcher = asyncio.create_task(watch())
        try:
            await world.run(35.0, {21.5: fail, 23.5: recover})
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await asyncio.sleep(3.0)  # the last decisions are judged one window later

        # The writer did the work: up, in rate-limited steps, and down after the window.
        assert {2, 6} <= observed["web"] and _replicas(emu, "web") == 2, observed
        assert {4, 6, 8, 10} <= observed["burst"], observed
        assert _replicas(emu, "burst") == 2
        failed = [e for e in shadow.logs if e.get("msg") == "hpa.synced" and e.get("err")]
        assert failed, "the shadow saw the metrics API fail"

        fams = await shadow.metrics()
        assert _divergences(fams) == {}, [
            e for e in shadow.logs if e.get("msg") == "hpa.shadow_divergence"
        ]
        results = _results(fams)
        assert results.get("agree", 0) >= 50, results
        assert _gauge(fams, "hpactl_shadow_hpas_compared") == 2
        assert _gauge(fams, "hpactl_shadow_hpas_agreeing") == 2
        assert _gauge(fams, "hpactl_leader") == 0
        assert await shadow.readyz() == 200

        # Not one write of any kind from the shadow: no scale, status, Event or Lease.
        assert via_shadow.writes(leases=True) == []
        assert via_writer.writes(), "the writer wrote"
        started = shadow.logged("hpactl.shadow")
        assert started is not None and started["leader_election"] == "off"
        assert started["leader_elect_flag_ignored"] is True
        assert await shadow.stop() == 0
        assert await writer.stop() == 0


async def test_a_writer_with_a_shorter_downscale_stabilization_diverges_only_where_it_matters(
    spawn: Callable[..., Any],
) -> None:
    """The writer runs --horizontal-pod-autoscaler-downscale-stabilization=1s, the shadow
    6s. The flag decides only for HPAs without behavior that scale down: "drop" (load
    falls) diverges; "steady" (same load) and "explicit" (its own window in behavior)
    do not."""
    async with (
        Emulator() as emu,
        RecordingProxy(emu.url) as via_writer,
        RecordingProxy(emu.url) as via_shadow,
    ):
        for name in ("drop", "steady", "explicit"):
            emu.store.create(deployment(name, 4))
        emu.store.create(_hpa("drop", 8))
        emu.store.create(_hpa("steady", 8))
        emu.store.create(_hpa("explicit", 8, _behavior(down_window=6)))
        apps = [
            App("drop", _steps((0, 200), (8, 40))),
            App("steady", _steps((0, 200))),
            App("explicit", _steps((0, 200), (8, 40))),
        ]
        world = World(emu, apps)
        writer, shadow = await _start_pair(
            spawn,
            via_writer,
            via_shadow,
            ["--leader-elect=false", "--horizontal-pod-autoscaler-downscale-stabilization=1s"],
            ["--horizontal-pod-autoscaler-downscale-stabilization=6s"],
        )
        world.start = asyncio.get_running_loop().time()
        await world.run(22.0, {})
        await asyncio.sleep(3.0)

        assert _replicas(emu, "drop") == 1 and _replicas(emu, "explicit") == 1
        assert _replicas(emu, "steady") == 4
        fams = await shadow.metrics()
        found = _divergences(fams)
        names = {name for name, _ in found}
        assert names == {"drop"}, found
        assert found[("drop", "desiredReplicas")] >= 1
        assert _gauge(fams, "hpactl_shadow_hpas_compared") == 3
        assert _gauge(fams, "hpactl_shadow_hpas_agreeing") == 2

        # One log line per divergence, with both decisions and the inputs hpactl used.
        lines = [e for e in shadow.logs if e.get("msg") == "hpa.shadow_divergence"]
        assert lines and {e["hpa"] for e in lines} == {"default/drop"}
        first = next(e for e in lines if e["field"] == "desiredReplicas")
        # The writer went to 1 where hpactl, from the same inputs, held 4 (its 6 s window
        # still holds the 4). Which of the writer's decisions is the first one judged
        # depends on the order of the two processes' syncs after the load falls: if the
        # shadow syncs between the fall and the writer's scale-down (its 1 s window can
        # let it go at its first low sync), it judges the step itself (spec 4 -> 1);
        # otherwise it never saw the step's inputs, and the first judged is the writer's
        # next decision, which keeps 1 (spec 1) where hpactl still says 4.
        assert first["writer"]["value"] == 1 and first["writer"]["specReplicas"] in (4, 1)
        assert first["hpactl"] and all(h["value"] == 4 for h in first["hpactl"])
        assert first["hpactl"][0]["currentMetrics"] == first["writer"]["currentMetrics"]
        assert "ScaleDownStabilized" in str(shadow.raw) or first["hpactl"][0]["limitedBy"]

        assert via_shadow.writes(leases=True) == []
        assert await shadow.stop() == 0
        assert await writer.stop() == 0
