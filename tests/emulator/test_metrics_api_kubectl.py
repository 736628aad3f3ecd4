"""kubectl against the emulator's metrics APIs: `kubectl apply -f` of PodMetrics,
MetricValue and ExternalMetricValue manifests (emulator-only writes), and
`kubectl top pod` reading what was written."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hpactl.emulator import Emulator

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


class Kubectl:
    def __init__(self, emu: Emulator, kubeconfig: Path, workdir: Path) -> None:
        self.emu = emu
        self.kubeconfig = kubeconfig
        self.workdir = workdir

    async def __call__(self, *args: str, check: bool = True) -> tuple[int, str, str]:
        assert KUBECTL is not None
        # The emulator runs on this event loop: kubectl must not block it.
        proc = await asyncio.create_subprocess_exec(
            KUBECTL,
            f"--kubeconfig={self.kubeconfig}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"HOME": str(self.workdir), "PATH": "/usr/bin:/bin"},
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        code = proc.returncode or 0
        if check and code != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({code}): {err.decode()}")
        return code, out.decode(), err.decode()

    async def apply(self, name: str, text: str) -> str:
        path = self.workdir / name
        path.write_text(text)
        return (await self("apply", "-f", str(path)))[1].strip()


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with Emulator() as emu:
        emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"namespace": "default", "name": "web-1", "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            }
        )
        yield Kubectl(emu, emu.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path)


POD_METRICS = """\
apiVersion: metrics.k8s.io/v1beta1
kind: PodMetrics
metadata:
  name: web-1
  namespace: default
containers:
- name: app
  usage:
    cpu: {cpu}
    memory: 64Mi
"""


async def _get(k: Kubectl, *args: str) -> Any:
    return json.loads((await k("get", *args, "-o", "json"))[1])


async def test_kubectl_apply_pod_metrics_creates_updates_and_deletes(kubectl: Kubectl) -> None:
    out = await kubectl.apply("pm.yaml", POD_METRICS.format(cpu="250m"))
    assert out == "podmetrics.metrics.k8s.io/web-1 created"
    got = await _get(kubectl, "podmetrics.metrics.k8s.io", "web-1")
    assert got["containers"][0]["usage"]["cpu"] == "250m"
    assert got["metadata"]["labels"] == {"app": "web"}
    last = json.loads(
        got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert last["containers"][0]["usage"]["cpu"] == "250m"

    assert await kubectl.apply("pm.yaml", POD_METRICS.format(cpu="250m")) == (
        "podmetrics.metrics.k8s.io/web-1 unchanged"
    )
    assert await kubectl.apply("pm.yaml", POD_METRICS.format(cpu="750m")) == (
        "podmetrics.metrics.k8s.io/web-1 configured"
    )
    # What a controller reads changed.
    listed = kubectl.emu.metrics.pod_metrics()
    assert [c["usage"]["cpu"] for c in listed[0]["containers"]] == ["750m"]
    _, top, _ = await kubectl("top", "pod", "-n", "default", "--no-headers")
    assert top.split() == ["web-1", "750m", "64Mi"]
    _, table, _ = await kubectl("get", "podmetrics", "-n", "default")
    assert [line.split() for line in table.splitlines()] == [
        ["NAME", "CPU", "MEMORY", "WINDOW"],
        ["web-1", "750m", "64Mi", "30s"],
    ]

    _, out, _ = await kubectl("delete", "-f", str(kubectl.workdir / "pm.yaml"))
    assert out.strip() == 'podmetrics.metrics.k8s.io "web-1" deleted'
    code, _, err = await kubectl("get", "podmetrics.metrics.k8s.io", "web-1", check=False)
    assert code != 0 and "NotFound" in err


async def test_kubectl_apply_custom_and_external_values(kubectl: Kubectl) -> None:
    out = await kubectl.apply(
        "mv.yaml",
        """\
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
""",
    )
    assert out.splitlines() == [
        "metricvalue.custom.metrics.k8s.io/web-requests created",
        "externalmetricvalue.external.metrics.k8s.io/queue-a created",
    ]
    _, raw, _ = await kubectl(
        "get",
        "--raw",
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/services/web/requests",
    )
    assert [i["value"] for i in json.loads(raw)["items"]] == ["120"]
    _, raw, _ = await kubectl(
        "get",
        "--raw",
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_length?labelSelector=queue%3Da",
    )
    assert [i["value"] for i in json.loads(raw)["items"]] == ["30"]
    assert (
        await kubectl.apply(
            "mv2.yaml", (kubectl.workdir / "mv.yaml").read_text().replace('"120"', '"150"')
        )
    ).splitlines() == [
        "metricvalue.custom.metrics.k8s.io/web-requests configured",
        "externalmetricvalue.external.metrics.k8s.io/queue-a unchanged",
    ]
    _, raw, _ = await kubectl(
        "get",
        "--raw",
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/services/web/requests",
    )
    assert [i["value"] for i in json.loads(raw)["items"]] == ["150"]


async def test_kubectl_sees_unavailable_metrics_group(kubectl: Kubectl) -> None:
    kubectl.emu.metrics.set_unavailable(["metrics.k8s.io"])
    code, _, err = await kubectl(
        "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", check=False
    )
    assert code != 0
    assert "the server is currently unable to handle the request" in err
    kubectl.emu.metrics.set_unavailable([])
    await kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods")


async def test_kubectl_server_side_apply_replace_patch_create(kubectl: Kubectl) -> None:
    path = kubectl.workdir / "pm.yaml"
    path.write_text(POD_METRICS.format(cpu="100m"))
    _, out, _ = await kubectl("apply", "--server-side", "-f", str(path))
    assert out.strip() == "podmetrics.metrics.k8s.io/web-1 serverside-applied"
    path.write_text(POD_METRICS.format(cpu="300m"))
    _, out, _ = await kubectl("replace", "-f", str(path))
    assert out.strip() == "podmetrics.metrics.k8s.io/web-1 replaced"
    await kubectl("patch", "podmetrics", "web-1", "--type=merge", "-p", '{"window":"15s"}')
    _, out, _ = await kubectl(
        "get", "podmetrics", "web-1", "-o", "jsonpath={.containers[0].usage.cpu} {.window}"
    )
    assert out == "300m 15s"
    code, _, err = await kubectl("create", "-f", str(path), check=False)
    assert code != 0
    assert "Error from server (AlreadyExists): error when creating" in err
    _, out, _ = await kubectl("apply", "-f", str(path), "--dry-run=server")
    assert out.strip() == "podmetrics.metrics.k8s.io/web-1 configured (server dry run)"
    _, out, _ = await kubectl(
        "get", "podmetrics", "web-1", "-o", "jsonpath={.metadata.annotations}"
    )
    assert "last-applied-configuration" not in out  # the dry run stored nothing
