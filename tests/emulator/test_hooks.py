"""The emulator's call sites for the metrics APIs and fault injection."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hpactl.emulator import Emulator

from .helpers import PODS, Http, pod
from .test_kubectl import kubectl
from .test_kubectl import rows as rows_of

METRICS = """\
apiVersion: metrics.k8s.io/v1beta1
kind: PodMetrics
metadata: {name: web-1, namespace: default}
containers:
- name: app
  usage: {cpu: 250m, memory: 64Mi}
---
apiVersion: custom.metrics.k8s.io/v1beta2
kind: MetricValue
metadata: {name: web-requests, namespace: default}
describedObject: {kind: Service, name: web}
metric: {name: requests}
value: "120"
---
apiVersion: external.metrics.k8s.io/v1beta1
kind: ExternalMetricValue
metadata: {name: queue-a, namespace: default}
metricName: queue_length
metricLabels: {queue: a}
value: "30"
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")
async def test_kubectl_apply_metrics_manifests(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    emulator.store.create(pod("web-1", {"app": "web"}))
    (tmp_path / "m.yaml").write_text(METRICS)
    out = await kubectl(kubeconfig, "apply", "-f", str(tmp_path / "m.yaml"))
    assert "podmetrics.metrics.k8s.io/web-1 created" in out
    assert "metricvalue.custom.metrics.k8s.io/web-requests created" in out
    assert "externalmetricvalue.external.metrics.k8s.io/queue-a created" in out
    out = await kubectl(
        kubeconfig,
        "get",
        "--raw",
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dweb",
    )
    assert '"name":"web-1"' in out and '"cpu":"250m"' in out
    out = await kubectl(
        kubeconfig,
        "get",
        "--raw",
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_length",
    )
    assert '"value":"30"' in out
    top = rows_of(await kubectl(kubeconfig, "top", "pod", "-l", "app=web"))
    assert top == [["NAME", "CPU(cores)", "MEMORY(bytes)"], ["web-1", "250m", "64Mi"]]


async def test_load_manifests_routes_metrics_kinds(emulator: Emulator) -> None:
    emulator.store.create(pod("web-1", {"app": "web"}))
    assert emulator.load_manifests([METRICS]) == 3
    http = Http(emulator)
    try:
        code, body = await http.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web-1")
        assert code == 200 and body["containers"][0]["usage"]["cpu"] == "250m"
        code, body = await http.get(
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/services/web/requests"
        )
        assert code == 200 and body["items"][0]["value"] == "120"
    finally:
        await http.close()


async def test_fault_hooks_gone_and_dropped_watch() -> None:
    faults_mod = pytest.importorskip("hpactl.emulator.faults")
    faults = faults_mod.FaultInjector(seed=1)
    async with Emulator(faults=faults) as emu:
        http = Http(emu)
        try:
            emu.store.create(pod("a", {}))
            rv = emu.store.current_resource_version()
            rule = faults.add(f"gone={PODS}")
            code, err = await http.get(
                PODS, params={"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"}
            )
            assert code == 410 and err["reason"] == "Expired"
            events = await http.watch(
                PODS, {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "5"}
            )
            assert [e["type"] for e in events] == ["ERROR"] and events[0]["object"]["code"] == 410
            code, _ = await http.get(PODS)  # no resourceVersion: unaffected
            assert code == 200
            faults.remove(rule)
            faults.add(f"watch-drop={PODS},events=1")
            emu.store.create(pod("b", {}))
            # without the fault this watch would last 30 s; it ends after one event
            events = await http.watch(PODS, {"watch": "true", "timeoutSeconds": "30"})
            assert [e["type"] for e in events] == ["ADDED"]
        finally:
            await http.close()


async def test_load_manifests_creates_missing_namespaces(emulator: Emulator) -> None:
    emulator.load_manifests(
        ["apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: team-a}\ndata: {a: b}\n"]
    )
    assert emulator.store.get("", "namespaces", "", "team-a") is not None
    assert emulator.store.get("", "configmaps", "team-a", "c") is not None
