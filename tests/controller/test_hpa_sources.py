"""--hpa-sources against the emulator: hpactl's own HorizontalPodAutoscalers
(autoscaling.hpactl.dev/v1alpha1, the CRD of ``hpactl.model.crd.crd_manifest``)
reconciled by the same controller as autoscaling/v2 ones, on a VirtualClock.

What is checked: one scenario as a built-in HPA and as an hpactl one decides,
writes and reports the same (the Events differing only in their involvedObject);
``crd`` alone never writes a built-in HPA; the default (``builtin``) never asks the
CRD's group anything; an hpactl HPA whose target a built-in HPA also names is not
scaled and says so, and resumes once that HPA is gone; objects of the same name in
the two sources are two HPAs; two hpactl HPAs on one target are upstream's
AmbiguousSelector; shadow mode, decision records and ``explain`` for an hpactl HPA.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from prometheus_client import generate_latest

from hpactl.cache.factory import CRD_HPAS
from hpactl.cli.explain_cmd import parse_target
from hpactl.clock import VirtualClock
from hpactl.config import (
    ClientConnectionConfig,
    ConfigError,
    ControllerConfig,
    HPAControllerConfig,
    build_config,
)
from hpactl.controller.app import ControllerApp
from hpactl.controller.explain import explain_once
from hpactl.controller.horizontal import SyncRecord
from hpactl.emulator.emulator import Emulator
from hpactl.model import crd as hhpa

from .builders import events, hpa, pod, pod_metrics, workload
from .explaining import debug_server, explain, server_url

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GROUP = hhpa.GROUP
Obj = dict[str, Any]


def cr(name: str, target: str, **kw: Any) -> Obj:
    """hpactl's HorizontalPodAutoscaler: the same spec as ``hpa(name, target)``."""
    obj = copy.deepcopy(hpa(name, target, **kw))
    obj["apiVersion"] = hhpa.API_VERSION
    return obj


class RecordingApp(ControllerApp):
    """The app, noting the resource of every request its client sends."""

    def __init__(self, *args: Any, seen: list[str], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._seen = seen

    def _on_request(self, verb: str, resource: str, code: str, seconds: float) -> None:
        self._seen.append(f"{verb} {resource}")
        super()._on_request(verb, resource, code, seconds)


@dataclass
class Env:
    emu: Emulator
    app: ControllerApp
    clock: VirtualClock
    requests: list[str] = field(default_factory=list)

    async def step(self, seconds: float = 0.0) -> list[SyncRecord]:
        if seconds:
            self.clock.advance(seconds)
        await self.app.wait_for_rv(self.emu.store.current_resource_version(), timeout=10)
        return await self.app.controller.sync_all()

    def obj(self, name: str, *, crd: bool) -> Obj:
        group = GROUP if crd else "autoscaling"
        got = self.emu.store.get(group, "horizontalpodautoscalers", "default", name)
        assert got is not None
        return got

    def replicas(self, name: str = "web") -> int:
        obj = self.emu.store.get("apps", "deployments", "default", name)
        assert obj is not None
        return int(obj["spec"]["replicas"])

    def set_cpu(self, names: list[str], cpu: str) -> None:
        self.emu.metrics.set_pod_metrics(pod_metrics(names, cpu, self.clock.now()))

    def writes(self) -> list[tuple[str, str]]:
        assert self.emu.audit is not None
        return [(r["method"], r["path"]) for r in self.emu.audit.records()]


@asynccontextmanager
async def environment(
    sources: tuple[str, ...] = ("builtin",),
    *,
    shadow: bool = False,
    install_crd: bool = True,
    setup: Callable[[Emulator], None] | None = None,
) -> AsyncIterator[Env]:
    clock = VirtualClock(T0)
    async with Emulator(now=clock.now, bookmark_interval=0.05, audit=True) as emu:
        if install_crd:
            emu.store.create(hhpa.crd_manifest())
        if setup is not None:
            setup(emu)
        config = ControllerConfig(
            client=ClientConnectionConfig(master=emu.url), hpa_sources=sources, shadow=shadow
        )
        seen: list[str] = []
        async with RecordingApp(config, clock=clock, env={}, seen=seen) as app:
            yield Env(emu, app, clock, seen)


def _event_view(ev: Obj) -> tuple[Any, ...]:
    return (ev["type"], ev["reason"], ev["message"], ev["count"], ev["firstTimestamp"])


def _record_view(rec: SyncRecord) -> tuple[Any, ...]:
    expl = rec.explanation.to_dict() if rec.explanation is not None else None
    return (rec.current, rec.desired, rec.rescaled, rec.reason, rec.action, expl, rec.errors)


async def _scenario(crd: bool) -> tuple[list[Any], list[Obj], list[Obj], list[tuple[Any, ...]]]:
    """Scale up on load, hold in the stabilization window, scale down; then delete."""
    sources = ("crd",) if crd else ("builtin",)
    decisions: list[Any] = []
    statuses: list[Obj] = []
    async with environment(sources) as env:
        names = workload(env.emu, "web", 2, T0)
        env.set_cpu(names, "200m")
        env.emu.store.create(
            cr("web", "web", max_replicas=4) if crd else hpa("web", "web", max_replicas=4)
        )
        for i, (seconds, cpu, pods) in enumerate(
            [(0, "200m", 2), (15, "10m", 4), (60, "10m", 4), (301, "10m", 4), (15, "10m", 1)]
        ):
            for j in range(2 if i == 1 else 0, pods if i == 1 else 0):
                env.emu.store.create(pod("web", j, env.clock.now()))
            if i == 1:
                names = [f"web-{j}" for j in range(4)]
            env.set_cpu(names, cpu)
            recs = await env.step(seconds)
            decisions.append([_record_view(r) for r in recs])
            statuses.append(env.obj("web", crd=crd)["status"])
        evs = sorted(events(env.emu), key=lambda e: (e["firstTimestamp"], e["reason"]))
        involved = {(e["involvedObject"]["apiVersion"], e["involvedObject"]["uid"]) for e in evs}
        assert involved == {
            (
                hhpa.API_VERSION if crd else "autoscaling/v2",
                env.obj("web", crd=crd)["metadata"]["uid"],
            )
        }
        keys = sorted(env.app.controller.records)
        assert keys == (["default/hhpa:web"] if crd else ["default/web"])
        return decisions, statuses, evs, [_event_view(e) for e in evs]


async def test_the_same_scenario_as_a_builtin_hpa_and_as_an_hpactl_one() -> None:
    builtin = await _scenario(crd=False)
    mine = await _scenario(crd=True)
    assert mine[0] == builtin[0]  # decisions, explanations included
    assert mine[1] == builtin[1]  # every status written
    assert mine[3] == builtin[3]  # events: type, reason, message, count, time
    reasons = [e[1] for e in builtin[3]]
    assert reasons.count("SuccessfulRescale") == 2
    assert builtin[0][0][0][:3] == (2, 4, True) and builtin[0][3][0][:3] == (4, 1, True)


async def test_crd_alone_reads_builtin_hpas_and_never_writes_them() -> None:
    async with environment(("crd",)) as env:
        workload(env.emu, "api", 2, T0)
        names = workload(env.emu, "web", 2, T0)
        api_names = ["api-0", "api-1"]
        env.emu.metrics.set_pod_metrics(pod_metrics(names + api_names, "200m", env.clock.now()))
        env.emu.store.create(hpa("api", "api", max_replicas=4))
        env.emu.store.create(cr("web", "web", max_replicas=4))
        recs = await env.step()
        assert [r.key for r in recs] == ["default/hhpa:web"]
        await env.step(15)
        assert env.replicas("web") == 4 and env.replicas("api") == 2
        assert "status" not in env.obj("api", crd=False) or not env.obj("api", crd=False)["status"]
        writes = env.writes()
        assert not [w for w in writes if w[1].startswith("/apis/autoscaling/")], writes
        assert (
            "PUT",
            f"/apis/{hhpa.API_VERSION}/namespaces/default/horizontalpodautoscalers/web/status",
        ) in writes
        # Built-in HPAs are listed and watched all the same (the conflict check).
        assert any(r.split()[1] == "horizontalpodautoscalers.autoscaling" for r in env.requests)


async def test_builtin_default_asks_nothing_of_the_crd_group() -> None:
    async with environment() as env:
        names = workload(env.emu, "web", 2, T0)
        workload(env.emu, "api", 2, T0)
        env.set_cpu([*names, "api-0", "api-1"], "200m")
        env.emu.store.create(hpa("web", "web", max_replicas=4))
        env.emu.store.create(cr("api", "api", max_replicas=4))
        recs = await env.step()
        await env.step(15)
        assert [r.key for r in recs] == ["default/web"]
        assert env.app.informers.informer_for_kind(CRD_HPAS) is None
        assert env.replicas("web") == 4 and env.replicas("api") == 2
        assert not [r for r in env.requests if GROUP in r], env.requests
        assert not [w for w in env.writes() if GROUP in w[1]]
        assert not env.obj("api", crd=True).get("status")


def _conditions(obj: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


CONFLICT_MESSAGE = (
    "the autoscaling/v2 HorizontalPodAutoscaler default/web-kcm also targets Deployment/web: "
    "the built-in controller scales it, so hpactl does not while that HPA exists (two "
    "controllers would undo each other's writes)"
)


@pytest.mark.parametrize("cr_first", [False, True])
async def test_conflict_with_a_builtin_hpa_then_resume(cr_first: bool) -> None:
    async with environment(("crd",)) as env:
        names = workload(env.emu, "web", 2, T0)
        env.set_cpu(names, "200m")
        if cr_first:
            env.emu.store.create(cr("web", "web", max_replicas=4))
            (rec,) = await env.step()
            assert rec.rescaled and env.replicas() == 4
            for j in (2, 3):
                env.emu.store.create(pod("web", j, env.clock.now()))
            names = [f"web-{j}" for j in range(4)]
            env.set_cpu(names, "400m")
            env.emu.store.create(hpa("web-kcm", "web", max_replicas=10))
            (rec,) = await env.step(15)
        else:
            env.emu.store.create(hpa("web-kcm", "web", max_replicas=10))
            env.emu.store.create(cr("web", "web", max_replicas=4))
            (rec,) = await env.step()
        current = env.replicas()
        assert not rec.rescaled and rec.desired == current
        assert rec.explanation is not None
        assert rec.explanation.path == "conflicting-autoscaler"
        obj = env.obj("web", crd=True)
        cond = _conditions(obj)["ScalingActive"]
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "False",
            "ConflictingAutoscaler",
            CONFLICT_MESSAGE,
        )
        assert obj["status"]["desiredReplicas"] == current
        assert obj["status"]["currentReplicas"] == current
        assert "currentMetrics" not in obj["status"]
        (ev,) = events(env.emu, reason="ConflictingAutoscaler")
        assert ev["type"] == "Warning" and ev["message"] == CONFLICT_MESSAGE
        assert ev["involvedObject"]["apiVersion"] == hhpa.API_VERSION
        assert ev["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
        assert ev["involvedObject"]["uid"] == obj["metadata"]["uid"]
        (rec,) = await env.step(15)
        assert not rec.rescaled and env.replicas() == current
        assert not _conditions(env.obj("web-kcm", crd=False))  # never written by hpactl
        # The built-in HPA goes: the next sync reconciles as usual.
        env.emu.store.delete("autoscaling", "horizontalpodautoscalers", "default", "web-kcm")
        (rec,) = await env.step(15)
        assert rec.explanation is not None and rec.explanation.path == "metrics"
        cond = _conditions(env.obj("web", crd=True))["ScalingActive"]
        assert (cond["status"], cond["reason"]) == ("True", "ValidMetricFound")
        if not cr_first:
            assert rec.rescaled and env.replicas() == 4


async def test_both_sources_one_target_the_builtin_hpa_scales_alone() -> None:
    async with environment(("builtin", "crd")) as env:
        names = workload(env.emu, "web", 2, T0)
        env.set_cpu(names, "200m")
        env.emu.store.create(hpa("web", "web", max_replicas=3))
        env.emu.store.create(cr("web", "web", max_replicas=4))
        recs = {r.key: r for r in await env.step()}
        assert set(recs) == {"default/web", "default/hhpa:web"}
        assert recs["default/web"].rescaled and env.replicas() == 3
        assert not recs["default/hhpa:web"].rescaled
        builtin = _conditions(env.obj("web", crd=False))["ScalingActive"]
        assert builtin["reason"] == "ValidMetricFound"  # no AmbiguousSelector
        mine = _conditions(env.obj("web", crd=True))["ScalingActive"]
        assert mine["reason"] == "ConflictingAutoscaler"
        assert "default/web also targets Deployment/web" in mine["message"]


async def test_same_name_in_both_sources_are_two_hpas() -> None:
    async with environment(("builtin", "crd")) as env:
        names = workload(env.emu, "web", 2, T0) + workload(env.emu, "api", 2, T0)
        env.set_cpu(names, "200m")
        env.emu.store.create(hpa("web", "web", max_replicas=3))
        env.emu.store.create(cr("web", "api", max_replicas=4))
        recs = {r.key: r for r in await env.step()}
        assert {k: (r.desired, r.rescaled) for k, r in recs.items()} == {
            "default/web": (3, True),
            "default/hhpa:web": (4, True),
        }
        assert (env.replicas("web"), env.replicas("api")) == (3, 4)
        assert env.obj("web", crd=False)["status"]["desiredReplicas"] == 3
        assert env.obj("web", crd=True)["status"]["desiredReplicas"] == 4
        rescales = events(env.emu, reason="SuccessfulRescale")
        by_api = {e["involvedObject"]["apiVersion"]: e["message"] for e in rescales}
        assert set(by_api) == {"autoscaling/v2", hhpa.API_VERSION}
        assert by_api["autoscaling/v2"].startswith("New size: 3;")
        assert by_api[hhpa.API_VERSION].startswith("New size: 4;")
        assert sorted(env.app.controller.history) == ["default/hhpa:web", "default/web"]
        text = generate_latest(env.app.metrics.registry).decode()
        assert 'desired_replicas{hpa_name="web",namespace="default"} 3.0' in text
        assert 'desired_replicas{hpa_name="hhpa:web",namespace="default"} 4.0' in text
        # Deleting one forgets that one only.
        env.emu.store.delete(GROUP, "horizontalpodautoscalers", "default", "web")
        recs2 = await env.step(15)
        assert [r.key for r in recs2] == ["default/web"]
        assert sorted(env.app.controller.history) == ["default/web"]
        text = generate_latest(env.app.metrics.registry).decode()
        assert 'hpa_name="hhpa:web"' not in text
        assert env.app.controller.shard_of("default/hhpa:web") == env.app.controller.shard_of(
            "default/web"
        )


async def test_two_hpactl_hpas_on_one_target_are_an_ambiguous_selector() -> None:
    async with environment(("crd",)) as env:
        names = workload(env.emu, "web", 2, T0)
        env.set_cpu(names, "200m")
        env.emu.store.create(cr("a", "web", max_replicas=4))
        env.emu.store.create(cr("b", "web", max_replicas=4))
        await env.step()
        recs = await env.step(15)
        assert not any(r.rescaled for r in recs)
        for name in ("a", "b"):
            cond = _conditions(env.obj(name, crd=True))["ScalingActive"]
            assert cond["reason"] == "AmbiguousSelector", cond
        assert "default/hhpa:a" in cond["message"] and "default/hhpa:b" in cond["message"]


async def test_invalid_hpactl_hpa_is_reported_on_itself() -> None:
    async with environment(("crd",)) as env:
        workload(env.emu, "web", 2, T0)
        bad = cr("web", "web")
        bad["spec"]["metrics"] = [{"type": "Resource"}]  # the emulator's schema may refuse it
        try:
            env.emu.store.create(bad)
        except Exception:
            pytest.skip("the emulator's schema validation refuses the malformed object")
        (rec,) = await env.step()
        assert rec.skipped == "invalid"
        (ev,) = events(env.emu, reason="InvalidHPA")
        assert ev["involvedObject"]["apiVersion"] == hhpa.API_VERSION


async def test_shadow_mode_records_and_explain_for_an_hpactl_hpa() -> None:
    async with environment(("crd",), shadow=True) as env:
        names = workload(env.emu, "web", 2, T0)
        env.set_cpu(names, "200m")
        env.emu.store.create(cr("web", "web", max_replicas=4))
        (rec,) = await env.step()
        assert rec.key == "default/hhpa:web" and rec.desired == 4
        assert env.replicas() == 2  # shadow: nothing written
        assert not [w for w in env.writes() if w[0] != "POST" or "/events" not in w[1]]
        assert not events(env.emu)
        doc = env.app.controller.records.to_json("default/hhpa:web")
        assert doc is not None
        assert '"default/hhpa:web"' in str(doc) or "default/hhpa:web" in str(doc)
        once = await explain_once("default", "web", master=env.emu.url, crd=True)
        assert once["hpa"] == "default/hhpa:web"
        assert once["desiredReplicas"] == 4
        assert once["explanation"]["path"] == "metrics"


def test_explain_names_an_hpactl_hpa_as_kubectl_does() -> None:
    assert parse_target("default/web") == ("default", "web")
    assert parse_target("default/hhpa:web") == ("default", "hhpa:web")
    assert parse_target("hhpa/web", "default") == ("default", "hhpa:web")
    assert parse_target("horizontalpodautoscalers.autoscaling.hpactl.dev/web", "ns") == (
        "ns",
        "hhpa:web",
    )
    assert parse_target("hpa/web", "default") == ("default", "web")
    assert parse_target("web", "default") == ("default", "web")
    with pytest.raises(ValueError, match="not a HorizontalPodAutoscaler type"):
        parse_target("deploy/web", "default")


async def test_kubectl_get_hhpa_shows_the_printer_columns_after_a_sync() -> None:
    async with environment(("crd",)) as env:
        names = workload(env.emu, "web", 2, T0)
        env.set_cpu(names, "200m")
        env.emu.store.create(cr("web", "web", max_replicas=4))
        await env.step()
        url = f"{env.emu.url}/apis/{hhpa.API_VERSION}/namespaces/default/horizontalpodautoscalers"
        accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
        async with (
            aiohttp.ClientSession() as http,
            http.get(url, headers={"Accept": accept}) as resp,
        ):
            table = await resp.json()
        columns = [c["name"] for c in table["columnDefinitions"]]
        assert columns[:6] == ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas"]
        (row,) = table["rows"]
        cells = dict(zip(columns, row["cells"], strict=False))
        assert cells["Reference"] in ("Deployment/web", "web")  # a CRD column is one JSONPath
        assert cells["MinPods"] == 1 and cells["MaxPods"] == 4 and cells["Replicas"] == 2
        assert cells["Targets"] == "200"  # the first currentMetrics utilization, printed


async def test_explain_reads_an_hpactl_hpas_records_from_the_debug_endpoint() -> None:
    async with environment(("crd",)) as env:
        names = workload(env.emu, "web", 2, T0)
        env.set_cpu(names, "200m")
        env.emu.store.create(hpa("web-kcm", "web", max_replicas=10))
        env.emu.store.create(cr("web", "web", max_replicas=4))
        await env.step()
        async with debug_server(env.app) as server:
            url = server_url(server)
            code, out, err = await explain(
                "-n", "default", "hhpa/web", "--server", url, "-o", "json"
            )
            assert code == 0, err
            doc = json.loads(out)
            assert doc["hpa"] == "default/hhpa:web" and doc["source"] == "server"
            (rec,) = doc["records"]
            assert rec["explanation"]["path"] == "conflicting-autoscaler"
            assert [e["reason"] for e in rec["writes"]["events"]] == ["ConflictingAutoscaler"]
            code, out, err = await explain("default/hhpa:web", "--server", url)
            assert code == 0, err
            assert "not scaled (ConflictingAutoscaler)" in out
            assert "default/web-kcm also targets Deployment/web" in out
            # The built-in HPA of the other name is not hpactl's: no records for it.
            code, out, err = await explain(
                "default/web-kcm", "--server", url, "--kubeconfig", "/nonexistent"
            )
            assert code == 1


async def _until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not check():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"{what}: not seen within {timeout:g} s") from None


async def test_scheduled_hpactl_hpa_resumes_when_the_builtin_one_goes_not_a_period_later() -> None:
    """The leader's schedule, one sync per hour: only the wake-up a built-in HPA's
    deletion gives can rescale within the test."""
    async with Emulator(bookmark_interval=0.05) as emu:
        emu.store.create(hhpa.crd_manifest())
        config = ControllerConfig(
            client=ClientConnectionConfig(master=emu.url),
            hpa=HPAControllerConfig(sync_period=timedelta(hours=1)),
            hpa_sources=("crd",),
        )
        async with ControllerApp(config, env={}) as app:
            now = app.clock.now()
            names = workload(emu, "web", 2, now)
            emu.metrics.set_pod_metrics(pod_metrics(names, "200m", now))
            emu.store.create(hpa("web-kcm", "web", max_replicas=10))
            await app.wait_for_rv(emu.store.current_resource_version(), timeout=10)
            app.controller.start_scheduling()
            emu.store.create(cr("web", "web", max_replicas=4))

            def reason() -> str:
                obj = emu.store.get(GROUP, "horizontalpodautoscalers", "default", "web") or {}
                return str(_conditions(obj).get("ScalingActive", {}).get("reason"))

            await _until(lambda: reason() == "ConflictingAutoscaler", "the conflict")
            emu.metrics.set_pod_metrics(pod_metrics(names, "200m", app.clock.now()))
            emu.store.delete("autoscaling", "horizontalpodautoscalers", "default", "web-kcm")

            def replicas() -> int:
                obj = emu.store.get("apps", "deployments", "default", "web") or {}
                return int(obj["spec"]["replicas"])

            await _until(lambda: replicas() == 4, "the rescale")
            # The same sync writes the status after the scale: polled, not read at once.
            await _until(lambda: reason() == "ValidMetricFound", "the status after the rescale")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("builtin", ("builtin",)), ("crd", ("crd",)), ("builtin,crd", ("builtin", "crd"))],
)
def test_hpa_sources_flag(value: str, expected: tuple[str, ...]) -> None:
    assert build_config({"hpa_sources": value}).hpa_sources == expected
    assert build_config({}).hpa_sources == ("builtin",)


@pytest.mark.parametrize("value", ["crds", "", "builtin,v2", "CRD"])
def test_hpa_sources_flag_refuses_anything_else_in_one_line(value: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_config({"hpa_sources": value})
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("--hpa-sources: ") and text.endswith("list of builtin and crd")
