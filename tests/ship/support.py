"""Helpers for the ship tests: the manifests, kubectl, a scripted cluster for hpactl
to work on, and `hpactl run` as a child process."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import pytest
import yaml

from hpactl.emulator import Emulator

Obj = dict[str, Any]

# A denial in a log line: the API server's Status reads "... is forbidden: User ...
# cannot <verb> resource ..." (reason Forbidden). A bare 403 counts only as a status
# code: the JSON lines' `ts` (epoch milliseconds to three decimals, "….403" one line
# in a thousand), durations and resourceVersions hold the digits too.
DENIED = re.compile(r"forbidden|cannot \w+ resource|\b(?:code|status)\W{0,3}403\b", re.IGNORECASE)


REPO = Path(__file__).resolve().parents[2]
# `kubectl apply -k manifests/` renders base/ unchanged; the overlays are beside it.
MANIFESTS_ROOT = REPO / "manifests"
MANIFESTS = MANIFESTS_ROOT / "base"

HPACTL_NAMESPACE = "hpactl-system"
HPACTL_SA = "hpactl"
APP_NAMESPACE = "default"
#: The API version the manifests are validated against (kubernetes-validate).
K8S_VERSION = "1.37"
#: The user the hpactl ServiceAccount's requests are authorized as.
SA_USER = f"system:serviceaccount:{HPACTL_NAMESPACE}:{HPACTL_SA}"

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")


def obj_id(obj: Obj) -> str:
    """``Kind/name``: how a manifest object is named in test ids and messages."""
    return f"{obj['kind']}/{obj['metadata']['name']}"


# --------------------------------------------------------------------------- manifests


def kustomization_files() -> list[Path]:
    """The files `manifests/base/kustomization.yaml` lists, in its order."""
    kust = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    return [MANIFESTS / str(name) for name in kust["resources"]]


def load_docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def release_image() -> str:
    """The image manifests/image/ (a kustomize component) sets for `image: hpactl`."""
    (image,) = yaml.safe_load((MANIFESTS_ROOT / "image" / "kustomization.yaml").read_text())[
        "images"
    ]
    return f"{image['newName']}:{image['newTag']}"


def with_release_image(obj: Obj) -> Obj:
    """obj as kustomize renders it: containers named `hpactl` run the release image."""
    if obj.get("kind") == "Deployment":
        for c in obj["spec"]["template"]["spec"]["containers"]:
            if c.get("image") == "hpactl":
                c["image"] = release_image()
    return obj


def manifest_objects() -> list[Obj]:
    """base/'s objects as `kubectl kustomize` renders them (the image component applied)."""
    return [with_release_image(obj) for path in kustomization_files() for obj in load_docs(path)]


def rbac_files() -> list[Path]:
    """The manifests that decide what hpactl may do: namespace, account, roles, bindings."""
    kinds = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role"}
    return [p for p in kustomization_files() if any(d["kind"] in kinds for d in load_docs(p))]


def obj_key(obj: Obj) -> tuple[str, str, str]:
    """Kind, namespace and name: what identifies an object in a rendering."""
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def apply_json_patch(obj: Obj, ops: list[Obj]) -> Obj:
    """A copy of ``obj`` with the RFC 6902 operations the overlays use applied (test,
    remove, add, replace; ``-`` appends to a list)."""
    out = copy.deepcopy(obj)
    for op in ops:
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
        ]
        node: Any = out
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        index: Any = last
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
        if op["op"] == "test":
            assert node[index] == op["value"], op
        elif op["op"] == "remove":
            del node[index]
        elif op["op"] == "replace":
            assert (index in node) if isinstance(node, dict) else index < len(node), op
            node[index] = op["value"]
        elif op["op"] == "add" and isinstance(node, list):
            node.insert(index, op["value"])
        elif op["op"] == "add":
            node[index] = op["value"]
        else:
            raise AssertionError(f"unexpected patch operation {op}")
    return out


@dataclass
class Cluster:
    """An emulator with authentication and RBAC enforced, serving https (kubectl sends a
    kubeconfig's token only to https servers); the admin kubeconfig carries its CA."""

    emu: Emulator
    admin_kubeconfig: Path
    tmp: Path


# --------------------------------------------------------------------------- kubectl


async def kubectl(kubeconfig: Path, *args: str, timeout: float = 60.0) -> tuple[int, str, str]:
    """Run kubectl (exit code, stdout, stderr); bounded in time."""
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        f"--kubeconfig={kubeconfig}",
        "--request-timeout=20s",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECACHEDIR": str(kubeconfig.parent / "kube-cache")},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# --------------------------------------------------------------------------- the cluster


def app_deployment(name: str, replicas: int) -> Obj:
    """A Deployment of the app namespace whose pods request 100m CPU."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": APP_NAMESPACE, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}},
                        }
                    ]
                },
            },
        },
    }


def external_hpa(api_version: str, name: str, value: str, selector: Obj | None = None) -> Obj:
    """An HPA (built-in or hpactl's, by ``api_version``) scaling Deployment ``name`` on
    the External metric queue_length at ``value`` per replica."""
    metric: Obj = {"name": "queue_length"}
    if selector is not None:
        metric["selector"] = selector
    return {
        "apiVersion": api_version,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": APP_NAMESPACE},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": metric,
                        "target": {"type": "AverageValue", "averageValue": value},
                    },
                }
            ],
        },
    }


def synced_desired(proc: HpactlProcess) -> dict[str, int | None]:
    """Each HPA's latest decision (desired replicas) in a -v=4 JSON log, by key."""
    out: dict[str, int | None] = {}
    for r in proc.records:
        if r.get("msg") == "hpa.synced":
            out[str(r["hpa"])] = r.get("desired")
    return out


def _pod(app: str, i: int) -> Obj:
    started = "2020-01-01T00:00:00Z"  # long ago: past every readiness / initialization window
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{app}-{i}", "namespace": APP_NAMESPACE, "labels": {"app": app}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m"}},
                }
            ]
        },
        "status": {
            "phase": "Running",
            "startTime": started,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}],
        },
    }


# A custom resource with a scale subresource: hpactl caches no such kind, so it reads
# (GET) and writes its scale through the API, like the built-in controller does.
CONSUMER_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "consumers.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "consumers", "singular": "consumer", "kind": "Consumer"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
            }
        ],
    },
}


def _consumer(name: str, replicas: int) -> Obj:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Consumer",
        "metadata": {"name": name, "namespace": APP_NAMESPACE},
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas, "selector": f"app={name}"},
    }


def _hpa(
    name: str, target: str, metric: Obj, max_replicas: int = 10, kind: str = "Deployment"
) -> Obj:
    api_version = "example.com/v1" if kind == "Consumer" else "apps/v1"
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": APP_NAMESPACE},
        "spec": {
            "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target},
            "minReplicas": 1,
            "maxReplicas": max_replicas,
            "metrics": [metric],
        },
    }


# What each HPA must reach, and from which metric: one HPA per metrics API, so that
# every metrics permission is needed; "ghost" scales a Deployment that does not exist,
# so its FailedGetScale event repeats (the recorder then patches the event's count).
EXPECTED_REPLICAS = {"web": 4, "worker": 3, "front": 3}


def seed_cluster(emu: Emulator) -> None:
    """Workloads, pods, metric values and HPAs in the `default` namespace.

    web: 2 pods at 150m of 100m requested (150 %) against a 50 % target → 6, capped at
    maxReplicas 4. worker (a custom resource, Consumer): external `queue_length` 30,
    10 per replica → 3.
    front: custom object metric `requests_per_second` 300 on the Deployment, 100 per
    replica → 3.
    """
    for name, replicas in (("web", 2), ("front", 1)):
        emu.store.create(app_deployment(name, replicas))
    emu.apply_object(CONSUMER_CRD)
    emu.apply_object(_consumer("worker", 1))
    for i in range(2):
        emu.store.create(_pod("web", i))
    emu.metrics.set_pod_metrics(
        [
            {
                "metadata": {"name": f"web-{i}", "namespace": APP_NAMESPACE},
                "window": "30s",
                "containers": [{"name": "app", "usage": {"cpu": "150m"}}],
            }
            for i in range(2)
        ]
    )
    emu.metrics.set_external(
        [
            {
                "namespace": APP_NAMESPACE,
                "metricName": "queue_length",
                "metricLabels": {"queue": "orders"},
                "value": "30",
            }
        ]
    )
    emu.metrics.set_custom(
        [
            {
                "describedObject": {
                    "kind": "Deployment",
                    "apiVersion": "apps/v1",
                    "namespace": APP_NAMESPACE,
                    "name": "front",
                },
                "metric": {"name": "requests_per_second"},
                "value": "300",
            }
        ]
    )
    cpu = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
    }
    external = {
        "type": "External",
        "external": {
            "metric": {"name": "queue_length", "selector": {"matchLabels": {"queue": "orders"}}},
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }
    obj = {
        "type": "Object",
        "object": {
            "describedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "front"},
            "metric": {"name": "requests_per_second"},
            "target": {"type": "AverageValue", "averageValue": "100"},
        },
    }
    emu.store.create(_hpa("web", "web", cpu, max_replicas=4))
    emu.store.create(_hpa("worker", "worker", external, kind="Consumer"))
    emu.store.create(_hpa("front", "front", obj))
    emu.store.create(_hpa("ghost", "ghost", cpu))


def _condition(hpa: Obj | None, kind: str) -> Obj:
    for c in ((hpa or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return dict(c)
    return {}


def events(emu: Emulator, namespace: str = APP_NAMESPACE) -> list[Obj]:
    return list(emu.store.list("", "events", namespace))


def hpa(emu: Emulator, name: str) -> Obj | None:
    return emu.store.get("autoscaling", "horizontalpodautoscalers", APP_NAMESPACE, name)


def unmet(emu: Emulator, *, leader_elect: bool = True) -> list[str]:
    """What is still missing from "hpactl did its job"; [] when everything is there."""
    missing: list[str] = []
    if leader_elect:
        lease = emu.store.get("coordination.k8s.io", "leases", HPACTL_NAMESPACE, "hpactl")
        if not lease or not (lease.get("spec") or {}).get("holderIdentity"):
            missing.append(f"lease {HPACTL_NAMESPACE}/hpactl held")
    evs = events(emu)
    for name, replicas in EXPECTED_REPLICAS.items():
        key = ("example.com", "consumers") if name == "worker" else ("apps", "deployments")
        dep = emu.store.get(*key, APP_NAMESPACE, name) or {}
        if (dep.get("spec") or {}).get("replicas") != replicas:
            missing.append(f"{key[1]} {name} scaled to {replicas}")
        h = hpa(emu, name)
        status = (h or {}).get("status") or {}
        if status.get("desiredReplicas") != replicas:
            missing.append(f"hpa {name} status.desiredReplicas={replicas}")
        for kind in ("AbleToScale", "ScalingActive"):
            if _condition(h, kind).get("status") != "True":
                missing.append(f"hpa {name} condition {kind}=True")
        if not any(
            e.get("reason") == "SuccessfulRescale"
            and (e.get("involvedObject") or {}).get("name") == name
            and str(e.get("message", "")).startswith(f"New size: {replicas}; reason: ")
            for e in evs
        ):
            missing.append(f"event SuccessfulRescale for hpa {name}")
    ghost = _condition(hpa(emu, "ghost"), "AbleToScale")
    if ghost.get("status") != "False" or ghost.get("reason") != "FailedGetScale":
        missing.append("hpa ghost condition AbleToScale=False/FailedGetScale")
    if not any(
        e.get("reason") == "FailedGetScale"
        and (e.get("involvedObject") or {}).get("name") == "ghost"
        and int(e.get("count") or 0) >= 2
        for e in evs
    ):
        missing.append("event FailedGetScale for hpa ghost, seen twice")
    return missing


async def poll(check: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    """Wait (real time: hpactl is another process) until check() holds; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(interval)


async def poll_async(
    probe: Callable[[], Awaitable[object]], want: object, timeout: float, interval: float = 0.1
) -> bool:
    """Like poll, for an async probe: True once probe() == want."""
    deadline = time.monotonic() + timeout
    while True:
        if await probe() == want:
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(interval)


async def http_status(url: str) -> int:
    """The HTTP status of a GET (0 when nothing answers)."""
    try:
        async with aiohttp.ClientSession() as http, http.get(url) as resp:
            return resp.status
    except aiohttp.ClientError:
        return 0


# --------------------------------------------------------------------------- hpactl run


def run_flags(kubeconfig: Path, *, leader_elect: bool) -> list[str]:
    """`hpactl run` flags for a short, fast test run (1 s syncs, 2 s leases)."""
    flags = [
        f"--kubeconfig={kubeconfig}",
        "--horizontal-pod-autoscaler-sync-period=1s",
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--logging-format=json",
    ]
    if leader_elect:
        flags += [
            "--leader-elect=true",
            "--leader-elect-lease-duration=2s",
            "--leader-elect-renew-deadline=1s",
            "--leader-elect-retry-period=250ms",
            f"--leader-elect-resource-namespace={HPACTL_NAMESPACE}",
            "--leader-elect-resource-name=hpactl",
        ]
    else:
        flags.append("--leader-elect=false")
    return flags


class HpactlProcess:
    """`hpactl run ...` as a child process; its JSON log records are collected."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault("PYTHONUNBUFFERED", "1")
        self.cwd = cwd
        self.records: list[Obj] = []
        self.lines: list[str] = []
        self.proc: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> HpactlProcess:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            asyncio.create_task(self._read(self.proc.stdout)),
            asyncio.create_task(self._read(self.proc.stderr)),
        ]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        await asyncio.gather(*self._readers, return_exceptions=True)

    async def _read(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            text = line.decode(errors="replace").rstrip("\n")
            self.lines.append(text)
            with contextlib.suppress(ValueError):
                record = json.loads(text)
                if isinstance(record, dict):
                    self.records.append(record)

    def find(self, event: str) -> Obj | None:
        return next((r for r in self.records if r.get("msg") == event), None)

    async def wait_for_record(self, event: str, timeout: float) -> Obj:
        ok = await poll(lambda: self.find(event) is not None or self.exited, timeout)
        record = self.find(event)
        assert ok and record is not None, f"no {event!r} log record; output:\n{self.output()}"
        return record

    @property
    def exited(self) -> bool:
        return self.proc is not None and self.proc.returncode is not None

    async def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM, then the exit code (killed after `timeout` seconds)."""
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            raise AssertionError(
                f"hpactl ignored SIGTERM for {timeout}s:\n{self.output()}"
            ) from None
        await asyncio.gather(*self._readers, return_exceptions=True)
        return code

    def output(self, last: int = 60) -> str:
        return "\n".join(self.lines[-last:])

    def mentions(self, *needles: str) -> list[str]:
        return [line for line in self.lines if all(n in line for n in needles)]


def hpactl_argv(exe: Iterable[str] | None = None) -> list[str]:
    """`hpactl run` from the shared virtualenv (the source tree's console script)."""
    if exe is not None:
        return [*exe, "run"]
    return [str(Path(sys.executable).parent / "hpactl"), "run"]


class RecordingAuthorizer:
    """Wraps the emulator's RBAC authorizer and records one user's requests as
    ``(verb, api_group, resource[/subresource], namespace, allowed)``."""

    def __init__(self, inner: Any, user: str) -> None:
        self.inner = inner
        self.user = user
        self.seen: list[tuple[str, str, str, str, bool]] = []

    def authorize(
        self,
        user: str,
        groups: Any,
        verb: str,
        api_group: str,
        resource: str,
        subresource: str,
        namespace: str,
        name: str,
    ) -> bool:
        ok: bool = self.inner.authorize(
            user, groups, verb, api_group, resource, subresource, namespace, name
        )
        if user == self.user:
            full = f"{resource}/{subresource}" if subresource else resource
            self.seen.append((verb, api_group, full, namespace, ok))
        return ok

    def authorize_path(self, *args: Any) -> bool:
        ok: bool = self.inner.authorize_path(*args)
        return ok


async def assert_kustomize_renders(tmp_path: Path, folder: Path, expected: list[Obj]) -> None:
    """``kubectl kustomize folder`` renders exactly ``expected``, object for object."""
    kubeconfig = tmp_path / "kubeconfig"  # kustomize needs no server; kubectl wants a file
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    code, out, err = await kubectl(kubeconfig, "kustomize", str(folder))
    assert code == 0, err
    rendered = {obj_key(d): d for d in yaml.safe_load_all(out) if d}
    by_key = {obj_key(o): o for o in expected}
    assert sorted(rendered) == sorted(by_key)
    for key, obj in by_key.items():
        assert rendered[key] == obj, key


def uses_verb(seen: str, granted: str) -> bool:
    """Whether a request authorized as ``seen`` uses the ``granted`` verb.

    The informers list by watch-list (a watch with sendInitialEvents, authorized as
    ``watch``); ``list`` is their fallback on a server without WatchList, so a watch of
    a resource counts as a use of its ``list`` grant.
    """
    return seen == granted or (granted == "list" and seen == "watch")
