"""An Object metric describing a custom resource whose CRD declares an irregular plural:
the controller maps the kind through discovery, the emulator files the value under the
same plural, and the HPA scales."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from support.objects import scale_crd

from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator

from .builders import workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def object_metric_hpa(target: str, described: dict[str, str], metric: str, value: str) -> Any:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Object",
                    "object": {
                        "describedObject": described,
                        "metric": {"name": metric},
                        "target": {"type": "Value", "value": value},
                    },
                }
            ],
        },
    }


@pytest.fixture
async def env() -> AsyncIterator[tuple[Emulator, ControllerApp]]:
    clock = VirtualClock(T0)
    async with Emulator(now=clock.now, bookmark_interval=0.05) as emu:
        config = ControllerConfig(client=ClientConnectionConfig(master=emu.url))
        async with ControllerApp(config, clock=clock, env={}) as app:
            yield emu, app


async def test_object_metric_on_irregular_plural_custom_resource_scales(
    env: tuple[Emulator, ControllerApp],
) -> None:
    emu, app = env
    emu.store.create(scale_crd("elasticsearches", "Elasticsearch"))
    described = {"apiVersion": "example.com/v1", "kind": "Elasticsearch", "name": "logs"}
    emu.metrics.set_custom(
        [
            {
                "describedObject": {**described, "namespace": "default"},
                "metric": {"name": "pending_writes"},
                "value": "20",
            }
        ]
    )
    workload(emu, "web", 2, T0)
    emu.store.create(object_metric_hpa("web", described, "pending_writes", "10"))

    await app.wait_for_rv(emu.store.current_resource_version(), timeout=10)
    (rec,) = await app.controller.sync_all()
    # 20 against a target of 10 on 2 ready pods: 4 replicas.
    assert (rec.current, rec.desired, rec.rescaled) == (2, 4, True), rec.errors
    deploy = emu.store.get("apps", "deployments", "default", "web")
    assert deploy is not None and deploy["spec"]["replicas"] == 4
    hpa = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
    assert hpa is not None
    conds = {c["type"]: c for c in hpa["status"]["conditions"]}
    assert conds["ScalingActive"]["reason"] == "ValidMetricFound"
    (current,) = hpa["status"]["currentMetrics"]
    assert current["object"]["current"]["value"] == "20"
