"""The topology skew reported after a rescale (hpactl run), against the emulator.

Three nodes in three zones; a Deployment whose template spreads its pods over zones
(maxSkew 1). The test places the pods itself (``spec.nodeName``): the emulator runs
no scheduler here. Skew = most minus fewest matching pods over the zones.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.model.featuregates import parse_feature_gates

from .builders import deployment, events, hpa, pod, pod_metrics
from .test_controller_emulator import Env

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ZONE = "topology.kubernetes.io/zone"
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


def node(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {ZONE: zone, "kubernetes.io/hostname": name}},
    }


def spread_deployment(replicas: int) -> dict[str, Any]:
    d = deployment("web", replicas)
    d["spec"]["template"]["spec"]["topologySpreadConstraints"] = SPREAD
    return d


def place(emu: Emulator, i: int, node_name: str, now: datetime) -> str:
    p = pod("web", i, now)
    p["spec"]["nodeName"] = node_name
    return str(emu.store.create(p)["metadata"]["name"])


def names_of(env: Env) -> list[str]:
    return [p["metadata"]["name"] for p in env.emu.store.list("", "pods", "default")]


def skew_gauge(env: Env) -> float | None:
    return env.app.metrics.registry.get_sample_value(
        "hpactl_target_topology_skew",
        {"namespace": "default", "name": "web", "topology_key": ZONE},
    )


async def make_env(gates: str) -> AsyncIterator[Env]:
    clock = VirtualClock(T0)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Emulator(now=clock.now, bookmark_interval=0.05) as emu:
        config = ControllerConfig(
            client=ClientConnectionConfig(master=emu.url),
            feature_gates=parse_feature_gates(gates),
        )
        async with ControllerApp(
            config, clock=clock, env={}, tracer=provider.get_tracer("test")
        ) as app:
            yield Env(emu, app, clock, exporter)
    provider.shutdown()


@pytest.fixture
async def gate_off() -> AsyncIterator[Env]:
    async for env in make_env(""):
        yield env


@pytest.fixture
async def gate_on() -> AsyncIterator[Env]:
    async for env in make_env("HPATopologySkewEvents=true"):
        yield env


async def scale_up_then_place_unevenly(env: Env) -> None:
    """2 pods (zones a, b) at 200% of the CPU target → 4; the two new pods both land
    in zone a: a=3, b=1, c=0, skew 3."""
    for name, zone in (("n-a", "a"), ("n-b", "b"), ("n-c", "c")):
        env.emu.store.create(node(name, zone))
    env.emu.store.create(spread_deployment(2))
    names = [place(env.emu, 0, "n-a", T0), place(env.emu, 1, "n-b", T0)]
    env.set_cpu(names, "100m")  # 100% of the 100m request, target 50%
    env.emu.store.create(hpa("web", "web", max_replicas=4))
    (rec,) = await env.step()
    assert (rec.current, rec.desired, rec.rescaled) == (2, 4, True)
    assert skew_gauge(env) is None  # measured once the pods have followed

    # Only one of the two new pods exists yet: not measured.
    names.append(place(env.emu, 2, "n-a", env.clock.now()))
    env.set_cpu(names, "50m")  # at target: no rescale
    (rec,) = await env.step(15)
    assert not rec.rescaled
    assert skew_gauge(env) is None

    names.append(place(env.emu, 3, "n-a", env.clock.now()))
    env.set_cpu(names, "50m")
    (rec,) = await env.step(15)
    assert not rec.rescaled


async def test_skew_is_reported_after_a_rescale_and_events_stay_upstreams(
    gate_off: Env,
) -> None:
    env = gate_off
    await scale_up_then_place_unevenly(env)
    assert skew_gauge(env) == 3.0
    sync = [s for s in env.spans.get_finished_spans() if s.name == "hpa.sync"][-1]
    assert sync.attributes is not None
    assert list(sync.attributes["hpactl.topology.skew"]) == [f"{ZONE}=3"]
    assert sync.attributes["hpactl.topology.max_skew_exceeded"] is True
    # Gate off: the events are exactly upstream's (the one rescale), nothing more.
    assert [(e["type"], e["reason"]) for e in events(env.emu)] == [("Normal", "SuccessfulRescale")]
    # Reported once per rescale: without a new rescale the next sync does not
    # measure again, even if the spread changes (a pod moves from zone a to c).
    env.emu.store.delete("", "pods", "default", "web-3")
    place(env.emu, 3, "n-c", env.clock.now())
    env.set_cpu(names_of(env), "50m")
    (rec,) = await env.step(15)
    assert not rec.rescaled
    assert skew_gauge(env) == 3.0
    # Forgetting the HPA drops the series.
    env.app.controller.forget("default/web")
    assert skew_gauge(env) is None


async def test_gate_on_warns_when_the_skew_exceeds_max_skew(gate_on: Env) -> None:
    env = gate_on
    await scale_up_then_place_unevenly(env)
    assert skew_gauge(env) == 3.0
    (warning,) = events(env.emu, reason="TopologySkewExceeded")
    assert warning["type"] == "Warning"
    assert warning["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
    assert warning["message"] == (
        f"pods of Deployment/web are spread over {ZONE} with skew 3, more than maxSkew 1 "
        "(DoNotSchedule): a=3, b=1, c=0"
    )
    assert {e["reason"] for e in events(env.emu)} == {"SuccessfulRescale", "TopologySkewExceeded"}


async def test_gate_on_is_silent_when_the_spread_is_within_max_skew(gate_on: Env) -> None:
    env = gate_on
    for name, zone in (("n-a", "a"), ("n-b", "b"), ("n-c", "c")):
        env.emu.store.create(node(name, zone))
    env.emu.store.create(spread_deployment(2))
    names = [place(env.emu, 0, "n-a", T0), place(env.emu, 1, "n-b", T0)]
    env.set_cpu(names, "100m")
    env.emu.store.create(hpa("web", "web", max_replicas=4))
    await env.step()
    names += [place(env.emu, 2, "n-c", env.clock.now()), place(env.emu, 3, "n-a", env.clock.now())]
    env.emu.metrics.set_pod_metrics(pod_metrics(names, "50m", env.clock.now()))
    await env.step(15)
    assert skew_gauge(env) == 1.0
    assert events(env.emu, reason="TopologySkewExceeded") == []


async def test_a_target_without_constraints_reports_nothing(gate_on: Env) -> None:
    env = gate_on
    env.emu.store.create(node("n-a", "a"))
    env.emu.store.create(deployment("web", 2))
    names = [place(env.emu, 0, "n-a", T0), place(env.emu, 1, "n-a", T0)]
    env.set_cpu(names, "100m")
    env.emu.store.create(hpa("web", "web", max_replicas=4))
    await env.step()
    names += [place(env.emu, 2, "n-a", env.clock.now()), place(env.emu, 3, "n-a", env.clock.now())]
    env.set_cpu(names, "50m")
    await env.step(15)
    assert skew_gauge(env) is None
    assert events(env.emu, reason="TopologySkewExceeded") == []
