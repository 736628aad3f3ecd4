"""The real kubectl binary against the emulator, default flags (skipped only without kubectl)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from support.kubectl import needs_kubectl, run_kubectl

from hpactl.emulator import Emulator

pytestmark = needs_kubectl

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        env:
        - {name: A, value: "1"}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 60}
"""


async def kubectl(kubeconfig: Path, *args: str, check: bool = True, timeout: float = 30) -> str:
    """stdout and stderr together; ``check``: the command must succeed."""
    code, out, err = await run_kubectl(kubeconfig, *args, timeout=timeout)
    text = out + err
    if check:
        assert code == 0, text
    return text


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


async def test_apply_create_then_update(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(APP)
    out = await kubectl(kubeconfig, "apply", "-f", str(manifest))
    assert "deployment.apps/web created" in out
    assert "horizontalpodautoscaler.autoscaling/web created" in out
    manifest.write_text(
        APP.replace("maxReplicas: 5", "maxReplicas: 8").replace(
            '{name: A, value: "1"}', '{name: B, value: "2"}'
        )
    )
    out = await kubectl(kubeconfig, "apply", "-f", str(manifest))
    assert "deployment.apps/web configured" in out
    assert "horizontalpodautoscaler.autoscaling/web configured" in out
    hpa = emulator.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
    assert hpa is not None and hpa["spec"]["maxReplicas"] == 8
    assert hpa["metadata"]["generation"] == 2
    dep = emulator.store.get("apps", "deployments", "default", "web")
    assert dep is not None
    # the three-way strategic merge patch removed A and added B
    assert dep["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "B", "value": "2"}]
    out = await kubectl(kubeconfig, "apply", "-f", str(manifest))
    assert "unchanged" in out


async def test_get_columns_like_a_real_cluster(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    (tmp_path / "app.yaml").write_text(APP)
    await kubectl(kubeconfig, "apply", "-f", str(tmp_path / "app.yaml"))
    emulator.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-1", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {"name": "web", "ready": True, "restartCount": 0, "state": {"running": {}}}
                ],
            },
        }
    )
    hpa = rows(await kubectl(kubeconfig, "get", "hpa"))
    assert hpa[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert hpa[1][:7] == ["web", "Deployment/web", "cpu:", "<unknown>/60%", "1", "5", "0"]
    dep = rows(await kubectl(kubeconfig, "get", "deployments"))
    assert dep[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert dep[1][:4] == ["web", "0/2", "0", "0"]
    pods = rows(await kubectl(kubeconfig, "get", "pods"))
    assert pods[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert pods[1][:4] == ["web-1", "1/1", "Running", "0"]
    wide = rows(await kubectl(kubeconfig, "get", "deploy", "-o", "wide"))
    assert wide[0][-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"] and wide[1][-1] == "app=web"
    out = await kubectl(kubeconfig, "get", "hpa", "web", "-o", "jsonpath={.spec.maxReplicas}")
    assert out == "5"
    out = await kubectl(
        kubeconfig,
        "get",
        "horizontalpodautoscalers.v1.autoscaling",
        "web",
        "-o",
        "jsonpath={.spec.targetCPUUtilizationPercentage}",
    )
    assert out == "60"
    out = await kubectl(kubeconfig, "get", "hpa", "nope", check=False)
    assert (
        'Error from server (NotFound): horizontalpodautoscalers.autoscaling "nope" not found' in out
    )


async def test_describe_hpa_shows_conditions_and_events(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    (tmp_path / "app.yaml").write_text(APP)
    await kubectl(kubeconfig, "apply", "-f", str(tmp_path / "app.yaml"))
    hpa = emulator.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
    assert hpa is not None
    hpa["status"] = {
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageValue": "120m", "averageUtilization": 90},
                },
            }
        ],
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "SucceededRescale",
                "message": "the HPA controller was able to update the target scale to 3",
            },
            {
                "type": "ScalingLimited",
                "status": "False",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "DesiredWithinRange",
                "message": "the desired count is within the acceptable range",
            },
        ],
    }
    emulator.store.update_status(hpa)
    emulator.store.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web.17a", "namespace": "default"},
            "involvedObject": {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "name": "web",
                "namespace": "default",
                "uid": hpa["metadata"]["uid"],
            },
            "reason": "SuccessfulRescale",
            "message": "New size: 3; reason: cpu resource utilization (percentage of request) above target",
            "type": "Normal",
            "source": {"component": "horizontal-pod-autoscaler"},
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:00Z",
            "count": 1,
        }
    )
    out = await kubectl(kubeconfig, "describe", "hpa", "web")
    assert "Reference:" in out and "Deployment/web" in out
    assert "90% (120m) / 60%" in out
    assert (
        "AbleToScale     True    SucceededRescale" in out
        or "AbleToScale" in out.split("Conditions:")[1]
    )
    assert "DesiredWithinRange" in out
    assert "SuccessfulRescale" in out and "New size: 3" in out
    assert "Deployment pods:" in out and "2 current / 3 desired" in out
    ev = rows(await kubectl(kubeconfig, "get", "events"))
    assert ev[0][:5] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT"]
    assert "horizontalpodautoscaler/web" in ev[1]


async def test_scale_autoscale_create_delete(emulator: Emulator, kubeconfig: Path) -> None:
    out = await kubectl(
        kubeconfig, "create", "deployment", "api", "--image=nginx:1.27", "--replicas=2"
    )
    assert "deployment.apps/api created" in out
    out = await kubectl(kubeconfig, "scale", "deployment", "api", "--replicas=4")
    assert "deployment.apps/api scaled" in out
    dep = emulator.store.get("apps", "deployments", "default", "api")
    assert dep is not None and dep["spec"]["replicas"] == 4
    out = await kubectl(
        kubeconfig, "autoscale", "deployment", "api", "--min=2", "--max=6", "--cpu-percent=70"
    )
    assert "horizontalpodautoscaler.autoscaling/api autoscaled" in out
    hpa = emulator.store.get("autoscaling", "horizontalpodautoscalers", "default", "api")
    assert hpa is not None
    assert hpa["spec"]["minReplicas"] == 2 and hpa["spec"]["maxReplicas"] == 6
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
    out = await kubectl(kubeconfig, "autoscale", "deployment", "api", "--max=3", check=False)
    assert "AlreadyExists" in out or "already exists" in out
    out = await kubectl(kubeconfig, "delete", "hpa", "api")
    assert 'horizontalpodautoscaler.autoscaling "api" deleted' in out
    out = await kubectl(kubeconfig, "delete", "deployment", "api")
    assert 'deployment.apps "api" deleted' in out
    assert emulator.store.get("apps", "deployments", "default", "api") is None
    out = await kubectl(kubeconfig, "delete", "deployment", "api", check=False)
    assert 'deployments.apps "api" not found' in out


async def test_scale_custom_resource(emulator: Emulator, kubeconfig: Path, tmp_path: Path) -> None:
    from .test_api import CRD

    emulator.store.create(CRD)
    emulator.store.create(
        {
            "apiVersion": "example.com/v1",
            "kind": "Worker",
            "metadata": {"name": "w"},
            "spec": {"size": 1},
        }
    )
    out = await kubectl(kubeconfig, "scale", "workers", "w", "--replicas=3")
    assert "worker.example.com/w scaled" in out
    cr = emulator.store.get("example.com", "workers", "default", "w")
    assert cr is not None and cr["spec"]["size"] == 3
    out = await kubectl(kubeconfig, "get", "wk")
    assert rows(out)[0] == ["NAME", "AGE"]


async def test_get_watch_bounded(emulator: Emulator, kubeconfig: Path, tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(APP)
    await kubectl(kubeconfig, "apply", "-f", str(tmp_path / "app.yaml"))
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        f"--cache-dir={kubeconfig.parent / '.kube-cache'}",
        "get",
        "hpa",
        "-w",
        "--request-timeout=20s",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        header = await asyncio.wait_for(proc.stdout.readline(), 20)
        assert header.split() == [
            b"NAME",
            b"REFERENCE",
            b"TARGETS",
            b"MINPODS",
            b"MAXPODS",
            b"REPLICAS",
            b"AGE",
        ]
        first = await asyncio.wait_for(proc.stdout.readline(), 20)
        assert first.split()[:6] == [
            b"web",
            b"Deployment/web",
            b"cpu:",
            b"<unknown>/60%",
            b"1",
            b"5",
        ]
        hpa = emulator.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
        assert hpa is not None
        hpa["spec"]["maxReplicas"] = 9
        emulator.store.apply(hpa)
        changed = await asyncio.wait_for(proc.stdout.readline(), 20)
        assert changed.split()[:6] == [
            b"web",
            b"Deployment/web",
            b"cpu:",
            b"<unknown>/60%",
            b"1",
            b"9",
        ]
    finally:
        proc.kill()
        await proc.wait()


async def test_create_commands_send_protobuf(emulator: Emulator, kubeconfig: Path) -> None:
    await kubectl(kubeconfig, "create", "namespace", "team")
    await kubectl(kubeconfig, "create", "serviceaccount", "hpactl", "-n", "team")
    await kubectl(
        kubeconfig,
        "create",
        "clusterrole",
        "hpa-reader",
        "--verb=get,list,watch",
        "--resource=horizontalpodautoscalers.autoscaling",
    )
    await kubectl(
        kubeconfig,
        "create",
        "clusterrolebinding",
        "hpa-reader",
        "--clusterrole=hpa-reader",
        "--serviceaccount=team:hpactl",
    )
    await kubectl(kubeconfig, "run", "web", "--image=nginx", "--labels=app=web", "--port=80")
    crb = emulator.store.get("rbac.authorization.k8s.io", "clusterrolebindings", "", "hpa-reader")
    assert crb is not None
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": "hpactl", "namespace": "team"}]
    assert crb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "hpa-reader",
    }
    role = emulator.store.get("rbac.authorization.k8s.io", "clusterroles", "", "hpa-reader")
    assert role is not None
    assert role["rules"] == [
        {
            "verbs": ["get", "list", "watch"],
            "apiGroups": ["autoscaling"],
            "resources": ["horizontalpodautoscalers"],
        }
    ]
    p = emulator.store.get("", "pods", "default", "web")
    assert p is not None and p["spec"]["containers"][0]["ports"] == [{"containerPort": 80}]
    ns = emulator.store.get("", "namespaces", "", "team")
    assert ns is not None and ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}


async def test_auth_mode_serves_tls_and_enforces_rbac(tmp_path: Path) -> None:
    pytest.importorskip("hpactl.emulator.rbac")
    async with Emulator(auth=True, tls=True) as emu:
        assert emu.url.startswith("https://")
        admin = emu.write_kubeconfig(tmp_path / "admin")
        sa = emu.write_kubeconfig(
            tmp_path / "sa", token=emu.token_for_service_account("default", "hpactl")
        )
        await kubectl(admin, "create", "serviceaccount", "hpactl")
        out = await kubectl(sa, "get", "hpa", check=False)
        assert (
            'Error from server (Forbidden): horizontalpodautoscalers.autoscaling is forbidden: User "system:serviceaccount:default:hpactl" '
            'cannot list resource "horizontalpodautoscalers" in API group "autoscaling" in the namespace "default"'
        ) in out
        await kubectl(
            admin,
            "create",
            "clusterrole",
            "hpa-reader",
            "--verb=list",
            "--resource=horizontalpodautoscalers.autoscaling",
        )
        await kubectl(
            admin,
            "create",
            "clusterrolebinding",
            "hpa-reader",
            "--clusterrole=hpa-reader",
            "--serviceaccount=default:hpactl",
        )
        out = await kubectl(sa, "get", "hpa")
        assert "No resources found in default namespace." in out
        bogus = emu.write_kubeconfig(tmp_path / "bogus", token="nope")
        out = await kubectl(bogus, "get", "hpa", check=False)
        assert "Unauthorized" in out


SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data: {a: "1", b: "2"}
"""


async def test_services_pdbs_configmaps(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "svc.yaml"
    manifest.write_text(SERVICE)
    out = await kubectl(kubeconfig, "apply", "-f", str(manifest))
    assert "service/web created" in out and "poddisruptionbudget.policy/web created" in out
    svc = rows(await kubectl(kubeconfig, "get", "svc"))
    assert svc[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert svc[1][:2] == ["web", "ClusterIP"] and svc[1][3:5] == ["<none>", "80/TCP"]
    pdb = rows(await kubectl(kubeconfig, "get", "pdb"))
    assert pdb[0] == [
        "NAME",
        "MIN",
        "AVAILABLE",
        "MAX",
        "UNAVAILABLE",
        "ALLOWED",
        "DISRUPTIONS",
        "AGE",
    ]
    assert pdb[1][:4] == ["web", "1", "N/A", "0"]
    cm = rows(await kubectl(kubeconfig, "get", "cm"))
    assert cm[1][:2] == ["web", "2"]
    # Service ports merge by `port`: a changed port replaces the old entry
    manifest.write_text(SERVICE.replace("port: 80,", "port: 90,"))
    await kubectl(kubeconfig, "apply", "-f", str(manifest))
    stored = emulator.store.get("", "services", "default", "web")
    assert stored is not None
    assert stored["spec"]["ports"] == [
        {"name": "http", "port": 90, "targetPort": 8080, "protocol": "TCP"}
    ]
    assert stored["spec"]["clusterIP"].startswith("10.96.")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not on PATH")
async def test_tls_with_openssl_made_certificates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from hpactl.emulator import tls

    # Without the cryptography package the emulator falls back to the openssl command.
    monkeypatch.setattr(tls, "make_serving_cert", tls._openssl_serving_cert)
    async with Emulator(auth=True, tls=True) as emu:
        out = await kubectl(
            emu.write_kubeconfig(tmp_path / "kc"), "get", "ns", "default", "-o", "name"
        )
        assert out.strip() == "namespace/default"


async def test_auth_can_i_and_impersonation(tmp_path: Path) -> None:
    pytest.importorskip("hpactl.emulator.rbac")
    async with Emulator(auth=True, tls=True) as emu:
        admin = emu.write_kubeconfig(tmp_path / "admin")
        sa = "--as=system:serviceaccount:default:hpactl"
        assert (await kubectl(admin, "auth", "can-i", "list", "hpa")).strip() == "yes"
        assert (
            await kubectl(admin, "auth", "can-i", "list", "hpa", sa, check=False)
        ).strip() == "no"
        await kubectl(
            admin,
            "create",
            "clusterrole",
            "r",
            "--verb=list",
            "--resource=horizontalpodautoscalers.autoscaling",
        )
        await kubectl(
            admin,
            "create",
            "clusterrolebinding",
            "r",
            "--clusterrole=r",
            "--serviceaccount=default:hpactl",
        )
        assert (await kubectl(admin, "auth", "can-i", "list", "hpa", sa)).strip() == "yes"
        assert (
            await kubectl(admin, "auth", "can-i", "delete", "hpa", sa, check=False)
        ).strip() == "no"
        out = await kubectl(admin, "get", "pods", sa, check=False)
        assert 'User "system:serviceaccount:default:hpactl" cannot list resource "pods"' in out
        # only system:masters may impersonate
        user = emu.write_kubeconfig(
            tmp_path / "user", token=emu.token_for_service_account("default", "hpactl")
        )
        out = await kubectl(user, "get", "hpa", "--as=admin", check=False)
        assert "cannot impersonate" in out


async def test_unknown_hpa_fields_strict_and_warn(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        APP.replace(
            "averageUtilization: 60}", "averageUtilization: 60, targetAverageUtilization: 50}"
        )
    )
    out = await kubectl(kubeconfig, "apply", "-f", str(bad), check=False)
    assert (
        'HorizontalPodAutoscaler in version "v2" cannot be handled as a HorizontalPodAutoscaler: strict decoding '
        'error: unknown field "spec.metrics[0].resource.target.targetAverageUtilization"'
    ) in out
    assert emulator.store.get("autoscaling", "horizontalpodautoscalers", "default", "web") is None
    out = await kubectl(kubeconfig, "apply", "-f", str(bad), "--validate=warn")
    assert (
        'Warning: unknown field "spec.metrics[0].resource.target.targetAverageUtilization"' in out
    )
    hpa = emulator.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
    assert hpa is not None
    assert hpa["spec"]["metrics"][0]["resource"]["target"] == {
        "type": "Utilization",
        "averageUtilization": 60,
    }
