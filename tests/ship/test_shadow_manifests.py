"""`manifests/shadow/`: schema-valid, rendered and applied by kubectl, read-only, and
exactly enough for `hpactl run --shadow`.

* every object validates against the Kubernetes schemas (strict) and `kubectl
  kustomize` renders exactly the listed files; the main manifests are not involved;
* the Deployment runs one replica with --shadow and valid flags; the ClusterRole
  grants only get, list and watch;
* applied to the emulator (authentication and RBAC enforced), hpactl --shadow with
  the ServiceAccount's token decides for every HPA, is ready, uses every permission
  granted, and sends not one write (a recording proxy between it and the server, and
  the authorizer, see every request);
* without any single rule of the ClusterRole it fails visibly: the 403 for exactly
  that permission in its log (and, for what the caches need, never ready).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from support.proxy import RecordingProxy

from hpactl.cli.run_cmd import parse_run_config
from hpactl.emulator import Emulator

from .support import (
    DENIED,
    HPACTL_NAMESPACE,
    MANIFESTS_ROOT,
    Cluster,
    HpactlProcess,
    RecordingAuthorizer,
    hpactl_argv,
    http_status,
    kubectl,
    load_docs,
    poll,
    seed_cluster,
    synced_desired,
)
from .support import (
    uses_verb as _uses,
)

Obj = dict[str, Any]
SHADOW = MANIFESTS_ROOT / "shadow"
SA = "hpactl-shadow"
SA_USER = f"system:serviceaccount:{HPACTL_NAMESPACE}:{SA}"
K8S_VERSION = "1.37"
READ_VERBS = {"get", "list", "watch"}

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")


def _files() -> list[Path]:
    kust = yaml.safe_load((SHADOW / "kustomization.yaml").read_text())
    return [SHADOW / str(name) for name in kust["resources"]]


def _objects() -> list[Obj]:
    return [obj for path in _files() for obj in load_docs(path)]


def _one(kind: str) -> Obj:
    (obj,) = [o for o in _objects() if o["kind"] == kind]
    return obj


def _id(obj: Obj) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def _args() -> list[str]:
    args: list[str] = _one("Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


# --------------------------------------------------------------------------- static checks


def test_kustomization_lists_every_file() -> None:
    assert {p.name for p in _files()} == {p.name for p in SHADOW.glob("*.yaml")} - {
        "kustomization.yaml"
    }


@pytest.mark.parametrize("obj", _objects(), ids=_id)
def test_object_is_valid_against_the_kubernetes_schema(obj: Obj) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_one_replica_runs_shadow_mode_with_valid_flags() -> None:
    dep = _one("Deployment")
    assert dep["spec"]["replicas"] == 1
    config = parse_run_config(_args(), {})  # raises ConfigError on any bad flag
    assert config.shadow
    assert not config.leader_election.leader_elect
    assert not config.metrics_auth.secure  # the role grants no reviews
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == SA == _one("ServiceAccount")["metadata"]["name"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"] == labels
    # Not the main Deployment's labels: its Service, PDB and NetworkPolicy do not apply.
    assert labels == {"app.kubernetes.io/name": "hpactl-shadow"}
    assert _one("Service")["spec"]["selector"] == labels
    assert _one("NetworkPolicy")["spec"]["podSelector"]["matchLabels"] == labels
    binding = _one("ClusterRoleBinding")
    assert binding["roleRef"]["name"] == _one("ClusterRole")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": SA, "namespace": HPACTL_NAMESPACE}
    ]


def test_the_cluster_role_only_reads() -> None:
    role = _one("ClusterRole")
    verbs = {v for rule in role["rules"] for v in rule["verbs"]}
    assert verbs <= READ_VERBS, verbs
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    for forbidden in ("events", "leases", "horizontalpodautoscalers/status"):
        assert forbidden not in resources
    # The only kinds of object in the overlay: no Role (no Lease), no reviews.
    assert {o["kind"] for o in _objects()} == {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Service",
        "NetworkPolicy",
    }


@needs_kubectl
async def test_kubectl_kustomize_renders_the_overlay(tmp_path: Path) -> None:
    async with Emulator() as emu:
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        code, out, err = await kubectl(kubeconfig, "kustomize", str(SHADOW))
    assert code == 0, err
    rendered = [d for d in yaml.safe_load_all(out) if d]

    def key(o: Obj) -> tuple[str, str, str]:
        return (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])

    assert sorted(map(key, rendered)) == sorted(map(key, _objects()))


# --------------------------------------------------------------------------- against the emulator


async def _apply(cluster: Cluster, drop: int | None = None) -> None:
    """kubectl apply the overlay's RBAC (without rule ``drop`` of the ClusterRole)."""
    files: list[Path] = []
    for path in _files():
        docs = load_docs(path)
        if not any(
            d["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
            for d in docs
        ):
            continue
        if drop is not None and any(d["kind"] == "ClusterRole" for d in docs):
            for d in docs:
                del d["rules"][drop]
            path = cluster.tmp / f"without-{path.name}"
            path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        files.append(path)
    code, out, err = await kubectl(cluster.admin_kubeconfig, "apply", *(f"-f={f}" for f in files))
    assert code == 0, f"{out}\n{err}"


def _shadow_argv(cluster: Cluster, proxy: RecordingProxy) -> list[str]:
    token = cluster.emu.token_for_service_account(HPACTL_NAMESPACE, SA)
    kubeconfig = cluster.emu.write_kubeconfig(cluster.tmp / "shadow.kubeconfig", token=token)
    return [
        *hpactl_argv(),
        f"--kubeconfig={kubeconfig}",
        f"--master={proxy.url}",  # every request through the recording proxy
        "--shadow",
        "--leader-elect=false",
        "--horizontal-pod-autoscaler-sync-period=1s",
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--logging-format=json",
        "-v=4",  # hpa.synced for every sync: a shadow decision rescales nothing
    ]


def _rules() -> list[tuple[int, Obj]]:
    return list(enumerate(_one("ClusterRole")["rules"]))


def _rule_id(case: tuple[int, Obj]) -> str:
    _, rule = case
    groups = ",".join(g or "core" for g in rule["apiGroups"])
    return f"{groups}:{','.join(rule['resources'])}"


def _pattern(group: str, resource: str) -> tuple[str, str]:
    g = r"[^\"]*" if group == "*" else re.escape(group)
    if resource == "*":
        r = r"[^\"]+"
    elif resource.startswith("*/"):
        r = r"[^\"/]+/" + re.escape(resource[2:])
    else:
        r = re.escape(resource)
    return g, r


@needs_kubectl
async def test_shadow_works_with_the_read_only_role_and_writes_nothing(cluster: Cluster) -> None:
    emu = cluster.emu
    recorder = RecordingAuthorizer(emu.server.hooks.authorizer, SA_USER)
    emu.server.hooks.authorizer = recorder
    await _apply(cluster)
    seed_cluster(emu)
    async with RecordingProxy(emu.url, ssl=emu.client_ssl_context()) as proxy:
        async with HpactlProcess(_shadow_argv(cluster, proxy)) as proc:
            # The decisions the built-in controller would make (tests/ship/support.py).
            want = {"default/web": 4, "default/worker": 3, "default/front": 3}
            done = await poll(
                lambda: all(synced_desired(proc).get(k) == v for k, v in want.items()), 30
            )
            assert done, f"{synced_desired(proc)}\n{proc.output()}"
            serving = proc.find("hpactl.serving")
            assert serving is not None
            assert await http_status(f"http://127.0.0.1:{serving['health_port']}/readyz") == 200
            await poll(lambda: False, 2.5)  # a few more syncs, each one a chance to write
            assert await proc.terminate() == 0, proc.output()
        writes = proxy.writes(leases=True)
        assert writes == [], f"the shadow wrote: {writes}"
        assert proxy.seen, "the proxy saw the shadow's requests"
    denied = [r for r in recorder.seen if not r[-1]]
    assert denied == [], f"requests denied with the shadow's RBAC: {denied}"
    assert {v for v, *_ in recorder.seen} <= READ_VERBS
    # Nothing was written to the cluster on the shadow's behalf either.
    assert emu.store.get("apps", "deployments", "default", "web")["spec"]["replicas"] == 2  # type: ignore[index]
    assert emu.store.list("", "events", "default") == []
    # Exactly enough: every verb on every resource the role grants was used.
    unused = []
    for _, rule in _rules():
        for verb in rule["verbs"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    g, r = _pattern(group, resource)
                    if not any(
                        _uses(v, verb) and re.fullmatch(g, sg) and re.fullmatch(r, sr)
                        for v, sg, sr, _ns, _ in recorder.seen
                    ):
                        unused.append((verb, group, resource))
    assert unused == [], f"granted but never used: {unused}"


def _log_texts(proc: HpactlProcess) -> list[str]:
    texts: list[str] = list(proc.lines)
    for record in proc.records:
        texts.extend(str(v) for v in record.values())
    return texts


# What the informers need: without it the shadow never turns ready.
CACHED = {
    ("autoscaling", "horizontalpodautoscalers"),
    ("", "pods"),
    ("", "replicationcontrollers"),
    ("apps", "deployments"),
}


@needs_kubectl
@pytest.mark.parametrize("case", _rules(), ids=_rule_id)
async def test_shadow_fails_visibly_without_any_single_rule(
    cluster: Cluster, case: tuple[int, Obj]
) -> None:
    index, rule = case
    emu = cluster.emu
    forbidden = re.compile(
        "|".join(
            rf'User "{re.escape(SA_USER)}" cannot {verb} resource "{_pattern(g, r)[1]}" '
            rf'in API group "{_pattern(g, r)[0]}"'
            for verb in rule["verbs"]
            for g in rule["apiGroups"]
            for r in rule["resources"]
        )
    )
    await _apply(cluster, drop=index)
    seed_cluster(emu)
    async with (
        RecordingProxy(emu.url, ssl=emu.client_ssl_context()) as proxy,
        HpactlProcess(_shadow_argv(cluster, proxy)) as proc,
    ):
        logged = await poll(lambda: any(forbidden.search(t) for t in _log_texts(proc)), 20)
        assert logged, f"no 403 for {rule} in the shadow's output:\n{proc.output()}"
        if (rule["apiGroups"][0], rule["resources"][0]) in CACHED:
            serving = proc.find("hpactl.serving")
            assert serving is not None, proc.output()
            url = f"http://127.0.0.1:{serving['health_port']}/readyz"
            assert await http_status(url) not in (0, 200), "/readyz reports ready"
        assert await proc.terminate() == 0, proc.output()
        assert proxy.writes(leases=True) == []


@needs_kubectl
async def test_shadow_run_under_its_rbac_logs_no_403(cluster: Cluster) -> None:
    """At -v=10, a shadow run that decides for every HPA meets no 403 at all."""
    emu = cluster.emu
    await _apply(cluster)
    seed_cluster(emu)
    async with (
        RecordingProxy(emu.url, ssl=emu.client_ssl_context()) as proxy,
        HpactlProcess([*_shadow_argv(cluster, proxy), "-v=10"]) as proc,
    ):
        want = {"default/web": 4, "default/worker": 3, "default/front": 3}
        done = await poll(
            lambda: all(synced_desired(proc).get(k) == v for k, v in want.items()), 30
        )
        assert done, f"{synced_desired(proc)}\n{proc.output()}"
        await poll(lambda: False, 2.5)  # a few more syncs
        assert await proc.terminate() == 0, proc.output()
    assert any('"v":4' in line for line in proc.lines), "not at debug level"
    found = [line for line in proc.lines if DENIED.search(line)]
    assert found == [], "\n".join(found)
