"""``hpactl run`` as a real process against the emulator.

The emulator and a tiny OTLP/HTTP trace receiver run in the test's event loop on
127.0.0.1 ephemeral ports; the controller is a subprocess. Waits poll the emulator
(the processes run on real time) and are bounded; every process is killed at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client.parser import text_string_to_metric_families
from support.proxy import RecordingProxy

from hpactl.emulator.emulator import Emulator

from .builders import events, hpa, pod, pod_metrics, workload

pytestmark = pytest.mark.timeout(120)


# ------------------------------------------------------------------------ OTLP receiver


@dataclass
class Receiver:
    url: str = ""
    spans: list[dict[str, Any]] = field(default_factory=list)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


@pytest.fixture
async def otlp() -> AsyncIterator[Receiver]:
    rec = Receiver()

    async def traces(request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        msg = ExportTraceServiceRequest()
        msg.ParseFromString(body)
        for rs in msg.resource_spans:
            resource = {a.key: _value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    rec.spans.append(
                        {
                            "name": sp.name,
                            "trace_id": sp.trace_id.hex(),
                            "span_id": sp.span_id.hex(),
                            "parent": sp.parent_span_id.hex(),
                            "attributes": {a.key: _value(a.value) for a in sp.attributes},
                            "resource": resource,
                        }
                    )
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    rec.url = f"http://127.0.0.1:{port}/v1/traces"
    yield rec
    await runner.cleanup()


# ------------------------------------------------------------------------ processes


class Proc:
    """A running ``hpactl run`` with its JSON log lines collected."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.logs: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        while True:
            line = await self.proc.stderr.readline()
            if not line:
                return
            text = line.decode(errors="replace").strip()
            self.raw.append(text)
            with contextlib.suppress(ValueError):
                obj = json.loads(text)
                if isinstance(obj, dict):
                    self.logs.append(obj)

    def logged(self, event: str) -> dict[str, Any] | None:
        return next((e for e in self.logs if e.get("msg") == event), None)

    async def port(self, which: str) -> int:
        await wait_until(lambda: self.logged("hpactl.serving") is not None, 30, self)
        served = self.logged("hpactl.serving")
        assert served is not None
        return int(served[f"{which}_port"])

    async def metrics(self) -> dict[str, Any]:
        port = await self.port("metrics")
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/metrics") as r,
        ):
            assert r.status == 200
            text = await r.text()
        return {f.name: f for f in text_string_to_metric_families(text)}

    async def readyz(self) -> int:
        port = await self.port("health")
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/readyz") as r,
        ):
            return r.status

    async def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(sig)
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        await self._reader
        return code

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._reader, 5)


async def wait_until(
    pred: Callable[[], bool], timeout: float, proc: Proc | None = None, what: str = ""
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if proc is not None and proc.proc.returncode is not None:
            tail = "\n".join(proc.raw[-30:])
            raise AssertionError(f"hpactl exited ({proc.proc.returncode}) while waiting:\n{tail}")
        if loop.time() > deadline:
            tail = "\n".join(proc.raw[-30:]) if proc is not None else ""
            raise AssertionError(f"timed out waiting for {what or pred}\n{tail}")
        await asyncio.sleep(0.05)


async def wait_until_async(
    pred: Callable[[], Awaitable[bool]], timeout: float, proc: Proc | None = None, what: str = ""
) -> None:
    """``wait_until`` for a probe that must be awaited (an HTTP endpoint)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await pred():
        if proc is not None and proc.proc.returncode is not None:
            tail = "\n".join(proc.raw[-30:])
            raise AssertionError(f"hpactl exited ({proc.proc.returncode}) while waiting:\n{tail}")
        if loop.time() > deadline:
            tail = "\n".join(proc.raw[-30:]) if proc is not None else ""
            raise AssertionError(f"timed out waiting for {what or pred}\n{tail}")
        await asyncio.sleep(0.05)


@pytest.fixture
async def spawn() -> AsyncIterator[Callable[..., Any]]:
    procs: list[Proc] = []

    async def start(args: list[str], env: dict[str, str] | None = None) -> Proc:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        full_env.update(env or {})
        p = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hpactl",
            "run",
            *args,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
        )
        proc = Proc(p)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        await proc.kill()


def _args(emu: Emulator, *extra: str) -> list[str]:
    return [
        f"--master={emu.url}",
        "--horizontal-pod-autoscaler-sync-period=1s",
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--logging-format=json",
        "-v=4",  # hpa.synced for every sync, not only those that rescale
        *extra,
    ]


def _fast_lease(name: str) -> list[str]:
    """Leader election on a short lease (3 s / renew 2 s / retry 250 ms)."""
    return [
        "--leader-elect=true",
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=250ms",
        "--leader-elect-resource-namespace=kube-system",
        f"--leader-elect-resource-name={name}",
    ]


def _holder(emu: Emulator, name: str) -> str:
    lease = emu.store.get("coordination.k8s.io", "leases", "kube-system", name)
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def _replicas(emu: Emulator, name: str = "web") -> int:
    obj = emu.store.get("apps", "deployments", "default", name)
    assert obj is not None
    return int(obj["spec"]["replicas"])


def _now() -> datetime:
    return datetime.now(UTC)


def _total(families: dict[str, Any], name: str, **labels: str) -> float:
    fam = families.get(name)
    if fam is None:
        return 0.0
    return float(
        sum(
            s.value
            for s in fam.samples
            if s.name.endswith("_total") and all(s.labels.get(k) == v for k, v in labels.items())
        )
    )


# ------------------------------------------------------------------------ tests


async def test_run_scales_up_and_down_exports_spans_and_metrics(
    spawn: Callable[..., Any], otlp: Receiver
) -> None:
    async with Emulator() as emu:
        names = workload(emu, "web", 2, _now())
        emu.metrics.set_pod_metrics(pod_metrics(names, "200m", _now()))
        created = emu.store.create(hpa("web", "web", max_replicas=4))
        proc: Proc = await spawn(
            _args(
                emu,
                "--leader-elect=false",
                "--horizontal-pod-autoscaler-downscale-stabilization=0s",
            ),
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": otlp.url,
                "OTEL_BSP_SCHEDULE_DELAY": "100",
                "OTEL_SERVICE_NAME": "hpactl-test",
            },
        )
        await wait_until(lambda: _replicas(emu) == 4, 30, proc, "scale up to 4")
        assert await proc.readyz() == 200

        for i in (2, 3):
            emu.store.create(pod("web", i, _now()))
        names = [f"web-{i}" for i in range(4)]
        emu.metrics.set_pod_metrics(pod_metrics(names, "10m", _now()))
        await wait_until(lambda: _replicas(emu) == 1, 30, proc, "scale down to 1")
        # Status and events follow the scale write within the same sync.
        await wait_until(lambda: len(events(emu, reason="SuccessfulRescale")) == 2, 10, proc)

        obj = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
        assert obj is not None
        conds = {c["type"]: c["reason"] for c in obj["status"]["conditions"]}
        assert conds["AbleToScale"] == "SucceededRescale"
        assert conds["ScalingActive"] == "ValidMetricFound"
        reasons = sorted(e["message"] for e in events(emu, reason="SuccessfulRescale"))
        assert reasons == [
            "New size: 1; reason: All metrics below target",
            "New size: 4; reason: cpu resource utilization (percentage of request) above target",
        ]

        fams = await proc.metrics()
        sub = "horizontal_pod_autoscaler_controller"
        assert _total(fams, f"{sub}_reconciliations", action="scale_up", error="none") >= 1
        assert _total(fams, f"{sub}_reconciliations", action="scale_down", error="none") >= 1
        assert _total(fams, f"{sub}_metric_computation", metric_type="Resource") >= 2
        assert _total(fams, "hpactl_api_requests", verb="update", code="200") >= 2
        assert fams["hpactl_leader"].samples[0].value == 1.0

        assert await proc.stop() == 0
        assert proc.logged("hpactl.stopped") is not None
        synced = [e for e in proc.logs if e.get("msg") == "hpa.synced"]
        assert synced and synced[0]["hpa"] == "default/web"
        assert {"current", "desired", "reason", "limited_by", "trace_id", "span_id"} <= set(
            synced[0]
        )

    syncs = [s for s in otlp.spans if s["name"] == "hpa.sync"]
    assert syncs, "no hpa.sync span exported"
    up = next(s for s in syncs if s["attributes"].get("hpactl.replicas.desired") == 4)
    a = up["attributes"]
    assert a["k8s.namespace.name"] == "default"
    assert a["k8s.hpa.name"] == "web"
    assert a["k8s.hpa.uid"] == created["metadata"]["uid"]
    assert a["k8s.deployment.name"] == "web"
    assert a["hpactl.replicas.current"] == 2
    assert a["hpactl.metric.0.proposal"] == 8
    assert a["hpactl.limited_by"] == "max"
    assert up["resource"]["service.name"] == "hpactl-test"
    children = {s["name"] for s in otlp.spans if s["parent"] == up["span_id"]}
    assert {"hpa.scale.get", "hpa.metric", "hpa.scale.update", "hpa.status.update"} <= children
    # The log line of a sync carries its span's trace id.
    assert up["trace_id"] in {e.get("trace_id") for e in synced}


async def test_leader_hand_over_without_double_scale_and_clean_sigterm(
    spawn: Callable[..., Any],
) -> None:
    le = _fast_lease("hpactl-test")

    def holder() -> str:
        return _holder(emu, "hpactl-test")

    async with Emulator() as emu:
        names = workload(emu, "web", 2, _now())
        emu.metrics.set_pod_metrics(pod_metrics(names, "200m", _now()))
        emu.store.create(hpa("web", "web", max_replicas=4))

        first: Proc = await spawn(_args(emu, *le))
        await wait_until(lambda: first.logged("hpactl.leading") is not None, 30, first, "lead")
        lead = first.logged("hpactl.leading")
        assert lead is not None and holder() == lead["identity"]
        second: Proc = await spawn(_args(emu, *le))
        await wait_until(lambda: second.logged("hpactl.electing") is not None, 30, second)
        await wait_until(lambda: _replicas(emu) == 4, 30, first, "scale up to 4")
        # Its Event too: the recorder writes it in the background after the scale, so a
        # kill right after the scale could lose it (and nobody would scale again).
        await wait_until(
            lambda: len(events(emu, reason="SuccessfulRescale")) == 1, 10, first, "its Event"
        )

        # The new pods arrive and the load sits at the target: 4 is right from now on.
        for i in (2, 3):
            emu.store.create(pod("web", i, _now()))
        emu.metrics.set_pod_metrics(pod_metrics([f"web-{i}" for i in range(4)], "50m", _now()))

        async def standby_ready() -> bool:
            return await second.readyz() == 200

        await wait_until_async(standby_ready, 30, second, "the standby ready")
        fams = await second.metrics()
        assert fams["hpactl_leader"].samples[0].value == 0.0
        assert _total(fams, "horizontal_pod_autoscaler_controller_reconciliations") == 0

        await first.kill()  # SIGKILL: no release, the lease must expire
        await wait_until(
            lambda: second.logged("hpactl.leading") is not None, 30, second, "takeover"
        )
        taken = second.logged("hpactl.leading")
        assert taken is not None and holder() == taken["identity"] != lead["identity"]

        async def reconciled() -> float:
            return _total(
                await second.metrics(), "horizontal_pod_autoscaler_controller_reconciliations"
            )

        async def twice() -> bool:
            return await reconciled() >= 2

        await wait_until_async(twice, 30, second, "two syncs by the new leader")
        assert _replicas(emu) == 4
        (rescale,) = events(emu, reason="SuccessfulRescale")
        assert rescale["count"] == 1  # one scale-up for one need, across two leaders

        assert await second.stop() == 0
        assert holder() == ""  # released on SIGTERM: a standby could take over at once
        assert second.logged("hpactl.lease_released") is not None


async def test_run_aggregates_repeated_events_and_leaves_unchanged_status_alone(
    spawn: Callable[..., Any],
) -> None:
    async with Emulator() as emu:
        workload(emu, "web", 2, _now())
        emu.metrics.set_unavailable(["metrics.k8s.io"])
        emu.store.create(hpa("web", "web"))
        proc: Proc = await spawn(_args(emu, "--leader-elect=false"))

        def failures() -> list[dict[str, Any]]:
            return events(emu, reason="FailedGetResourceMetric")

        def rv() -> str:
            obj = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
            assert obj is not None
            return str(obj["metadata"]["resourceVersion"])

        await wait_until(lambda: bool(failures()) and failures()[0]["count"] >= 2, 30, proc)
        written = rv()  # the first sync wrote the failure conditions
        obj = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
        assert obj is not None
        cond = {c["type"]: c for c in obj["status"]["conditions"]}
        assert (cond["ScalingActive"]["status"], cond["ScalingActive"]["reason"]) == (
            "False",
            "FailedGetResourceMetric",
        )
        await wait_until(lambda: failures()[0]["count"] >= 4, 30, proc)
        (event,) = failures()  # one Event object, counted up, never a new one
        assert event["count"] >= 4 and event["type"] == "Warning"
        assert rv() == written  # the same status is never written again
        assert await proc.stop() == 0


async def test_a_paused_leader_writes_nothing_once_it_resumes_without_the_lease(
    spawn: Callable[..., Any],
) -> None:
    """Issue: a leader paused (SIGSTOP) longer than the lease, resumed after the standby
    took over, went on scaling, writing status and Events for another 10 s. Each
    process talks through its own recording proxy, so every write is attributed."""
    le = [*_fast_lease("hpactl-fence"), "--horizontal-pod-autoscaler-downscale-stabilization=0s"]

    def holder() -> str:
        return _holder(emu, "hpactl-fence")

    async with (
        Emulator() as emu,
        RecordingProxy(emu.url) as via_a,
        RecordingProxy(emu.url) as via_b,
    ):
        names = workload(emu, "web", 2, _now())
        emu.metrics.set_pod_metrics(pod_metrics(names, "50m", _now()))  # at the target
        emu.store.create(hpa("web", "web", max_replicas=4))

        a: Proc = await spawn([f"--master={via_a.url}", *_args(emu, *le)[1:]])
        await wait_until(lambda: a.logged("hpactl.leading") is not None, 30, a, "A leads")
        b: Proc = await spawn([f"--master={via_b.url}", *_args(emu, *le)[1:]])
        await wait_until(lambda: b.logged("hpactl.electing") is not None, 30, b, "B elects")
        # A syncs the HPA at least once: its caches are warm.
        await wait_until(lambda: a.logged("hpa.synced") is not None, 30, a, "A syncs")

        a.proc.send_signal(signal.SIGSTOP)
        try:
            await wait_until(lambda: b.logged("hpactl.leading") is not None, 30, b, "takeover")
            leader_b = b.logged("hpactl.leading")
            assert leader_b is not None and holder() == leader_b["identity"]
            # The load rises while A sleeps: B scales. A's cache still says 2 replicas.
            emu.metrics.set_pod_metrics(pod_metrics(names, "200m", _now()))
            await wait_until(lambda: _replicas(emu) == 4, 30, b, "B scales to 4")
        finally:
            resumed = asyncio.get_running_loop().time()
            a.proc.send_signal(signal.SIGCONT)

        await wait_until(
            lambda: a.logged("hpactl.stopped_leading") is not None, 30, a, "A stops leading"
        )
        await asyncio.sleep(2.0)  # the window in which the old leader used to write
        late = [
            w
            for w in via_a.writes()
            if w.at >= resumed - 0.05  # a write sent before SIGSTOP is not A's fault
        ]
        assert late == [], f"the old leader wrote after resuming: {late}"
        assert holder() == leader_b["identity"]
        assert _replicas(emu) == 4

        # A is a standby again once its caches are relisted; B keeps leading.
        async def a_ready() -> bool:
            return await a.readyz() == 200

        await wait_until_async(a_ready, 30, a, "A ready as a standby")
        assert via_b.writes(), "B, the leader, did write"


async def test_sigterm_after_losing_the_lease_to_an_unreachable_api_server_exits(
    spawn: Callable[..., Any],
) -> None:
    """Losing the lease because the API server went away leaves hpactl waiting for a
    relist that cannot come; SIGTERM must still end it, promptly and cleanly."""
    emu = Emulator()
    await emu.start()
    try:
        names = workload(emu, "web", 2, _now())
        emu.metrics.set_pod_metrics(pod_metrics(names, "50m", _now()))
        emu.store.create(hpa("web", "web", max_replicas=4))
        proc: Proc = await spawn(_args(emu, *_fast_lease("hpactl-gone")))
        await wait_until(lambda: proc.logged("hpactl.leading") is not None, 30, proc, "lead")
    finally:
        await emu.stop()  # the API server goes away: renewals fail
    await wait_until(
        lambda: proc.logged("hpactl.stopped_leading") is not None, 30, proc, "lease lost"
    )
    assert await proc.stop(timeout=20) == 0
    assert proc.logged("hpactl.stopped") is not None
