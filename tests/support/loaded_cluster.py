"""A loaded emulator in a child process, for the scale, pathological and soak tests.

The API server runs in its own process (spawned, so it shares nothing with the
test's event loop) as a real one would: the controller's schedule lag, RSS, open
file descriptors and tasks measured in the test process are the controller's alone.

The cluster: ``hpas`` healthy HPAs, ``per_ns`` to a namespace, each targeting its own
Deployment of ``pods`` ready pods with CPU requests and PodMetrics. With
``pathological=True`` four more HPAs, each in a namespace of its own:

- ``big/all``: its Deployment's selector matches every one of ``big_pods`` pods;
- ``slow/web``: the metrics API answers for namespace ``slow`` after ``slow_answer`` s;
- ``flap/web``: the target flips between a Deployment and a StatefulSet of the same
  name every second, and the HPA's ``scaleTargetRef.kind`` is edited every 3 s;
- ``edit/web``: the HPA is edited (a new generation) every second.

The parent drives the child over a pipe: ``("chaos", None)`` starts the flapping and
editing; ``("metrics", minute)`` sets every healthy pod's usage for that minute (a
pattern that changes each minute); ``("count", None)`` answers how many chaos writes
were made; ``("stop", None)`` stops the server.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

STARTED = "2026-01-01T00:00:00Z"
REQUEST = "200m"
USAGES = ("100m", "200m", "60m")  # on target, 2x, under: a minute's pattern rotates these
PATHOLOGICAL = ("big/all", "slow/web", "flap/web", "edit/web")

Obj = dict[str, Any]


@dataclass(frozen=True)
class ClusterSpec:
    hpas: int
    per_ns: int = 20
    pods: int = 2
    pathological: bool = False
    big_pods: int = 1000
    slow_answer: float = 3.0

    def namespace(self, i: int) -> str:
        return f"ns{i // self.per_ns}"

    def namespaces(self) -> list[str]:
        out = sorted({self.namespace(i) for i in range(self.hpas)})
        return [*out, "big", "slow", "flap", "edit"] if self.pathological else out

    def healthy_keys(self) -> list[str]:
        return [f"{self.namespace(i)}/app{i}" for i in range(self.hpas)]


def _labels_pod(ns: str, name: str, labels: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "spec": {
            "containers": [
                {"name": "main", "image": "x", "resources": {"requests": {"cpu": REQUEST}}}
            ]
        },
        "status": {
            "phase": "Running",
            "startTime": STARTED,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": STARTED}],
        },
    }


def _workload(kind: str, ns: str, name: str, replicas: int, labels: dict[str, str]) -> Obj:
    spec: Obj = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "main", "image": "x"}]},
        },
    }
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"namespace": ns, "name": name},
        "spec": spec,
        "status": {"replicas": replicas, "readyReplicas": replicas},
    }


def _hpa(ns: str, name: str, kind: str = "Deployment", max_replicas: int = 10) -> Obj:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"namespace": ns, "name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": name},
            "minReplicas": 1,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50},
                    },
                }
            ],
        },
    }


def objects(spec: ClusterSpec) -> Iterator[Obj]:
    for i in range(spec.hpas):
        ns, app = spec.namespace(i), f"app{i}"
        labels = {"app": app}
        yield _workload("Deployment", ns, app, spec.pods, labels)
        yield _hpa(ns, app)
        for j in range(spec.pods):
            yield _labels_pod(ns, f"{app}-{j}", labels)
    if not spec.pathological:
        return
    yield _workload("Deployment", "big", "all", 3, {"tier": "all"})
    yield _hpa("big", "all")
    for j in range(spec.big_pods):
        yield _labels_pod("big", f"p{j}", {"tier": "all", "n": str(j)})
    for ns in ("slow", "flap", "edit"):
        yield _workload("Deployment", ns, "web", 2, {"app": "web"})
        yield _hpa(ns, "web")
        for j in range(2):
            yield _labels_pod(ns, f"web-{j}", {"app": "web"})


def pod_metrics(spec: ClusterSpec, minute: int) -> list[Obj]:
    def one(ns: str, name: str, cpu: str) -> Obj:
        return {
            "metadata": {"namespace": ns, "name": name},
            "window": "30s",
            "containers": [{"name": "main", "usage": {"cpu": cpu}}],
        }

    out = [
        one(spec.namespace(i), f"app{i}-{j}", USAGES[(i + minute) % len(USAGES)])
        for i in range(spec.hpas)
        for j in range(spec.pods)
    ]
    if spec.pathological:
        out += [one("big", f"p{j}", "150m") for j in range(spec.big_pods)]
        out += [one(ns, f"web-{j}", "200m") for ns in ("slow", "flap", "edit") for j in range(2)]
    return out


async def _chaos(emu: Any, counter: list[int]) -> None:
    """Flip flap/web between kinds every second, edit its HPA's kind every 3 s, and
    edit edit/web every second (each edit a new generation)."""
    store = emu.store
    tick = 0
    while True:
        await asyncio.sleep(1.0)
        tick += 1
        sts = tick % 2 == 1
        gone, made = ("deployments", "StatefulSet") if sts else ("statefulsets", "Deployment")
        store.delete("apps", gone, "flap", "web")
        store.create(_workload(made, "flap", "web", 2, {"app": "web"}))
        if tick % 3 == 0:
            kind = "StatefulSet" if (tick // 3) % 2 == 1 else "Deployment"
            store.apply(_hpa("flap", "web", kind=kind), validate=False, replace_status=False)
        store.apply(
            _hpa("edit", "web", max_replicas=10 + tick % 2), validate=False, replace_status=False
        )
        counter[0] += 1


def serve(conn: Connection, spec: ClusterSpec) -> None:
    """The child process: the loaded emulator, answering the parent's commands."""
    from hpactl.emulator import Emulator
    from hpactl.emulator.faults import FaultInjector, FaultRule

    async def run() -> None:
        faults = FaultInjector()
        if spec.pathological:
            faults.add(
                FaultRule.slow(
                    spec.slow_answer, path="/apis/metrics.k8s.io/v1beta1/namespaces/slow/*"
                )
            )
        emu = Emulator(
            bookmark_interval=1.0, namespaces=["default", *spec.namespaces()], faults=faults
        )
        emu.store.bulk_create(objects(spec))
        emu.metrics.set_pod_metrics(pod_metrics(spec, 0))
        await emu.start()
        conn.send(emu.url)
        loop = asyncio.get_running_loop()
        counter = [0]
        chaos: asyncio.Task[None] | None = None
        while True:
            cmd, arg = await loop.run_in_executor(None, conn.recv)
            if cmd == "chaos":
                chaos = asyncio.create_task(_chaos(emu, counter))
                conn.send("ok")
            elif cmd == "metrics":
                emu.metrics.set_pod_metrics(pod_metrics(spec, int(arg)))
                conn.send("ok")
            elif cmd == "count":
                conn.send(counter[0])
            else:
                if chaos is not None:
                    chaos.cancel()
                await emu.stop()
                conn.send("stopped")
                return

    asyncio.run(run())


class LoadedCluster:
    """The child process and its pipe; ``async with`` starts and stops it."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=serve, args=(child, spec), daemon=True)
        self.url = ""

    async def _recv(self, timeout: float = 120.0) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not await loop.run_in_executor(None, self._conn.poll, 0.5):
            if not self._proc.is_alive():
                raise RuntimeError(f"emulator process exited with code {self._proc.exitcode}")
            if loop.time() > deadline:
                raise TimeoutError("emulator process did not answer")
        return self._conn.recv()

    async def call(self, cmd: str, arg: Any = None) -> Any:
        self._conn.send((cmd, arg))
        return await self._recv()

    async def __aenter__(self) -> LoadedCluster:
        self._proc.start()
        self.url = str(await self._recv())
        return self

    async def __aexit__(self, *_exc: object) -> None:
        try:
            if self._proc.is_alive():
                await self.call("stop")
        finally:
            self._proc.join(10)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(5)
            self._conn.close()


# -- the controller side: `hpactl run`'s app and schedule, observed -----------------


class ScheduleWatch:
    """Each key's scheduled syncs: when they started and how late (the lag the
    supervisor reports through ``on_lag``, attributed to the key its worker synced).

    Installed before ``start_scheduling``: the supervisor's ``on_lag`` is the app's
    ``schedule_lag`` histogram's ``observe``, wrapped here to note the lag for the
    worker task; the sync's record, made in that task, names the key."""

    def __init__(self, app: Any) -> None:
        import collections
        import time

        self._now = time.monotonic
        self.lags: dict[str, list[float]] = collections.defaultdict(list)
        self.starts: dict[str, list[float]] = collections.defaultdict(list)
        self.errors: dict[str, list[str]] = collections.defaultdict(list)
        self._pending: dict[object, tuple[float, float]] = {}
        hist = app.metrics.schedule_lag
        inner = hist.observe

        def observe(value: float, exemplar: Any = None) -> None:
            self._pending[asyncio.current_task()] = (value, self._now())
            inner(value)

        hist.observe = observe
        app.controller.on_record = self._on_record

    def _on_record(self, rec: Any) -> None:
        seen = self._pending.pop(asyncio.current_task(), None)
        if seen is None:
            return  # not a scheduled sync
        self.lags[rec.key].append(seen[0])
        self.starts[rec.key].append(seen[1])
        self.errors[rec.key].extend(rec.errors)

    def summary(self, keys: list[str]) -> tuple[float, float, int]:
        """Mean and max lag over ``keys``' syncs, and how many syncs."""
        lags = [x for k in keys for x in self.lags.get(k, [])]
        return (sum(lags) / len(lags) if lags else 0.0, max(lags, default=0.0), len(lags))

    def max_gap(self, key: str, begin: float, end: float) -> float:
        """The longest time ``key`` went without a sync starting between ``begin`` and ``end``."""
        times = [begin, *self.starts.get(key, []), end]
        return max(b - a for a, b in itertools.pairwise(times))


class QuietLogs:
    """`hpactl run`'s logging (JSON at info, one line per sync) written to /dev/null,
    and the collector tuned as `hpactl run` tunes it; both put back on exit."""

    def __enter__(self) -> QuietLogs:
        import gc
        import logging
        import os

        from hpactl.obs.logging import configure_logging

        root = logging.getLogger()
        self._saved = (list(root.handlers), root.level, gc.get_threshold())
        self._devnull = open(os.devnull, "w")
        configure_logging("json", 0, stream=self._devnull)
        return self

    def __exit__(self, *_exc: object) -> None:
        import gc
        import logging

        import structlog

        structlog.reset_defaults()
        root = logging.getLogger()
        handlers, level, threshold = self._saved
        root.handlers[:] = handlers
        root.setLevel(level)
        gc.set_threshold(*threshold)
        self._devnull.close()


async def warm_up(url: str) -> None:
    """One unthrottled sync of every HPA, so each has a status: the measured
    controller then starts as a restarted ``hpactl run`` in a settled cluster."""
    from dataclasses import replace

    from hpactl.controller.app import ControllerApp
    from hpactl.flags import parse_run_config

    cfg = parse_run_config([], {})
    cfg = replace(cfg, client=replace(cfg.client, qps=0.0))
    cfg = replace(cfg, hpa=replace(cfg.hpa, concurrent_syncs=20))
    async with ControllerApp(cfg, env={}, master=url, call_timeout=1.0) as app:
        await app.controller.sync_all()
