"""The other built-in kinds a scenario may name (Ingress, Job, DaemonSet, Node...):
discovery as a real API server gives it, storage, and kubectl against them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hpactl.emulator import Emulator
from tests.emulator.helpers import TABLE, Http
from tests.emulator.test_kubectl import kubectl, rows

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")

# (resource, apiVersion, namespaced, kind, short names, status subresource)
EXPECTED = [
    ("daemonsets", "apps/v1", True, "DaemonSet", ["ds"], True),
    ("jobs", "batch/v1", True, "Job", [], True),
    ("cronjobs", "batch/v1", True, "CronJob", ["cj"], True),
    ("ingresses", "networking.k8s.io/v1", True, "Ingress", ["ing"], True),
    ("ingressclasses", "networking.k8s.io/v1", False, "IngressClass", [], False),
    ("nodes", "v1", False, "Node", ["no"], True),
    ("endpoints", "v1", True, "Endpoints", ["ep"], False),
    ("endpointslices", "discovery.k8s.io/v1", True, "EndpointSlice", [], False),
    ("persistentvolumes", "v1", False, "PersistentVolume", ["pv"], True),
    ("persistentvolumeclaims", "v1", True, "PersistentVolumeClaim", ["pvc"], True),
]

MANIFESTS = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: agent, image: example/agent:1}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: example/migrate:1}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: example/report:1}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: main-route}
spec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {topology.kubernetes.io/zone: zone-a, node-role.kubernetes.io/worker: ""}
status:
  conditions: [{type: Ready, status: "True"}]
  nodeInfo: {kubeletVersion: v1.32.4}
---
apiVersion: v1
kind: Endpoints
metadata: {name: web}
subsets:
- addresses: [{ip: 10.0.0.1}, {ip: 10.0.0.2}]
  ports: [{port: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- addresses: [10.0.0.1]
- addresses: [10.0.0.2]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: data-1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  hostPath: {path: /data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  resources: {requests: {storage: 1Gi}}
"""


@pytest.fixture
async def http(emulator: Emulator) -> Http:
    h = Http(emulator)
    yield h  # type: ignore[misc]
    await h.close()


async def test_discovery_lists_each_kind_with_its_scope_and_subresources(http: Http) -> None:
    for plural, gv, namespaced, kind, short, status in EXPECTED:
        path = f"/apis/{gv}" if "/" in gv else f"/api/{gv}"
        code, doc = await http.get(path)
        assert code == 200, (gv, doc)
        res = {r["name"]: r for r in doc["resources"]}
        assert res[plural]["kind"] == kind
        assert res[plural]["namespaced"] is namespaced
        assert res[plural].get("shortNames", []) == short
        assert "watch" in res[plural]["verbs"] and "deletecollection" in res[plural]["verbs"]
        assert (f"{plural}/status" in res) is status
        # None of these kinds has a scale subresource on a real API server.
        assert f"{plural}/scale" not in res
    code, apps = await http.get("/apis/apps/v1")
    assert "deployments/scale" in {r["name"] for r in apps["resources"]}


async def test_aggregated_discovery_agrees(http: Http) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    code, doc = await http.get("/apis", accept=accept)
    assert code == 200
    by_group = {g["metadata"]["name"]: g for g in doc["items"]}
    ds = next(
        r for r in by_group["apps"]["versions"][0]["resources"] if r["resource"] == "daemonsets"
    )
    assert ds["scope"] == "Namespaced" and ds["shortNames"] == ["ds"]
    assert [s["subresource"] for s in ds["subresources"]] == ["status"]
    ic = next(
        r
        for r in by_group["networking.k8s.io"]["versions"][0]["resources"]
        if r["resource"] == "ingressclasses"
    )
    assert ic["scope"] == "Cluster" and "subresources" not in ic


async def test_daemonset_scale_is_not_found_as_upstream(http: Http) -> None:
    code, _ = await http.post(
        "/apis/apps/v1/namespaces/default/daemonsets",
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "a", "image": "a"}]},
                },
            },
        },
    )
    assert code == 201
    code, body = await http.get("/apis/apps/v1/namespaces/default/daemonsets/agent/scale")
    assert code == 404
    assert body["reason"] == "NotFound"
    assert body["message"] == "the server could not find the requested resource"
    code, ds = await http.get("/apis/apps/v1/namespaces/default/daemonsets/agent")
    assert code == 200 and ds["metadata"]["generation"] == 1
    assert ds["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}


async def test_daemonset_selector_must_match_template(http: Http) -> None:
    code, body = await http.post(
        "/apis/apps/v1/namespaces/default/daemonsets",
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "other"}},
                    "spec": {"containers": [{"name": "a", "image": "a"}]},
                },
            },
        },
    )
    assert code == 422
    assert "`selector` does not match template `labels`" in body["message"]


async def test_job_gets_a_generated_selector_and_create_resets_status(http: Http) -> None:
    code, job = await http.post(
        "/apis/batch/v1/namespaces/default/jobs",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "m", "image": "m"}],
                    }
                }
            },
            "status": {"succeeded": 3},
        },
    )
    assert code == 201
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels["job-name"] == "migrate" and labels["controller-uid"] == uid
    assert job["spec"]["completions"] == 1 and job["spec"]["backoffLimit"] == 6
    assert job["status"] == {}


async def test_node_keeps_status_on_create_pv_starts_pending(http: Http) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "a"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    code, got = await http.post("/api/v1/nodes", node)
    assert code == 201 and got["status"] == node["status"]
    assert "namespace" not in got["metadata"]
    # Cluster-scoped: no namespaced path.
    code, _ = await http.get("/api/v1/namespaces/default/nodes/node-a")
    assert code == 404
    code, pv = await http.post(
        "/api/v1/persistentvolumes",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-1"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]},
        },
    )
    assert code == 201
    assert pv["status"] == {"phase": "Pending"}
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    code, table = await http.get("/api/v1/persistentvolumes", accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]][:5] == [
        "Name",
        "Capacity",
        "Access Modes",
        "Reclaim Policy",
        "Status",
    ]
    assert table["rows"][0]["cells"][:5] == ["pv-1", "1Gi", "RWO", "Retain", "Pending"]


async def test_endpointslice_ports_are_replaced_by_a_strategic_patch(http: Http) -> None:
    base = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
    code, _ = await http.post(
        base,
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": "web-a"},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
            "endpoints": [],
        },
    )
    assert code == 201
    code, got = await http.patch(
        f"{base}/web-a",
        {"ports": [{"name": "alt", "port": 8080}]},
        "application/strategic-merge-patch+json",
    )
    assert code == 200
    assert got["ports"] == [{"name": "alt", "port": 8080, "protocol": "TCP"}]


@needs_kubectl
async def test_kubectl_api_resources(emulator: Emulator, kubeconfig: Path) -> None:
    out = await kubectl(kubeconfig, "api-resources", "--no-headers")
    table = {}
    for line in out.strip().splitlines():
        cells = line.split()
        # NAME [SHORTNAMES] APIVERSION NAMESPACED KIND
        name, kind, namespaced, api_version = cells[0], cells[-1], cells[-2], cells[-3]
        short = cells[1].split(",") if len(cells) == 5 else []
        table[(name, api_version)] = (namespaced, kind, short)
    for plural, gv, namespaced, kind, short, _status in EXPECTED:
        assert table[(plural, gv)] == (str(namespaced).lower(), kind, short), plural
    cluster = await kubectl(kubeconfig, "api-resources", "--namespaced=false", "-o", "name")
    assert {"nodes", "persistentvolumes", "ingressclasses.networking.k8s.io"} <= set(
        cluster.split()
    )
    assert "ingresses.networking.k8s.io" not in cluster.split()


@needs_kubectl
async def test_kubectl_apply_and_get_each_kind(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "kinds.yaml"
    manifest.write_text(MANIFESTS)
    out = await kubectl(kubeconfig, "apply", "-f", str(manifest))
    for created in (
        "daemonset.apps/agent created",
        "job.batch/migrate created",
        "cronjob.batch/report created",
        "ingressclass.networking.k8s.io/nginx created",
        "ingress.networking.k8s.io/main-route created",
        "node/node-a created",
        "endpoints/web created",
        "endpointslice.discovery.k8s.io/web-abc created",
        "persistentvolume/data-1 created",
        "persistentvolumeclaim/data created",
    ):
        assert created in out, out
    out = await kubectl(kubeconfig, "apply", "-f", str(manifest))
    # Protocols are given: the defaulted lists are atomic, and a real server too
    # would show "configured" for a manifest that leaves them to the defaults.
    assert out.count(" unchanged") == 10, out

    ds = rows(await kubectl(kubeconfig, "get", "ds"))
    assert ds[0] == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "NODE",
        "SELECTOR",
        "AGE",
    ]
    assert ds[1][:7] == ["agent", "0", "0", "0", "0", "0", "kubernetes.io/os=linux"]
    job = rows(await kubectl(kubeconfig, "get", "jobs"))
    assert job[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert job[1][:3] == ["migrate", "Running", "0/1"]
    cj = rows(await kubectl(kubeconfig, "get", "cj"))
    assert cj[0][:3] == ["NAME", "SCHEDULE", "TIMEZONE"]
    # The schedule's five fields split into cells too.
    assert cj[1][:10] == ["report", "*/5", "*", "*", "*", "*", "<none>", "False", "0", "<none>"]
    ing = rows(await kubectl(kubeconfig, "get", "ing"))
    assert ing[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert ing[1][:4] == ["main-route", "nginx", "shop.example.com", "80"]
    ic = rows(await kubectl(kubeconfig, "get", "ingressclass"))
    assert ic[1][:3] == ["nginx", "k8s.io/ingress-nginx", "<none>"]
    nodes = rows(await kubectl(kubeconfig, "get", "no"))
    assert nodes[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert nodes[1][:3] == ["node-a", "Ready", "worker"] and nodes[1][-1] == "v1.32.4"
    zone = await kubectl(
        kubeconfig,
        "get",
        "no",
        "node-a",
        "-o",
        "jsonpath={.metadata.labels.topology\\.kubernetes\\.io/zone}",
    )
    assert zone == "zone-a"
    ep = rows(await kubectl(kubeconfig, "get", "ep"))
    assert ep[1][:2] == ["web", "10.0.0.1:8080,10.0.0.2:8080"]
    eps = rows(await kubectl(kubeconfig, "get", "endpointslices"))
    assert eps[0][:4] == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS"]
    assert eps[1][:4] == ["web-abc", "IPv4", "8080", "10.0.0.1,10.0.0.2"]
    pv = rows(await kubectl(kubeconfig, "get", "pv"))
    assert pv[1][:7] == ["data-1", "10Gi", "RWO", "Retain", "Pending", "standard", "<unset>"]
    pvc = rows(await kubectl(kubeconfig, "get", "pvc"))
    assert pvc[0][:2] == ["NAME", "STATUS"] and pvc[1][:2] == ["data", "Pending"]
    # Deleting works for cluster-scoped and namespaced kinds alike.
    out = await kubectl(kubeconfig, "delete", "node/node-a", "ingress/main-route")
    assert (
        'node "node-a" deleted' in out and 'ingress.networking.k8s.io "main-route" deleted' in out
    )


@needs_kubectl
async def test_kubectl_scale_daemonset_is_refused_as_upstream(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "ds.yaml"
    manifest.write_text(MANIFESTS.split("---")[0])
    await kubectl(kubeconfig, "apply", "-f", str(manifest))
    out = await kubectl(kubeconfig, "scale", "ds", "agent", "--replicas=3", check=False)
    assert "the server could not find the requested resource" in out
