"""`manifests/shadow-crd/`: shadow mode for hpactl's own HorizontalPodAutoscalers too.

* the overlay is `manifests/shadow/` plus one read rule (list, watch on
  ``autoscaling.hpactl.dev`` horizontalpodautoscalers) and ``--hpa-sources=builtin,crd``
  appended; every patched object validates (strict) and ``kubectl kustomize`` renders
  exactly that, still read-only;
* applied to the emulator (authentication and RBAC enforced) beside the CRD, the shadow
  with the ServiceAccount's token decides for built-in and hpactl HPAs alike, uses the
  new rule, is never denied and writes nothing;
* without the new rule it fails visibly (the 403 for that resource, never ready).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from support.proxy import RecordingProxy

from hpactl.cli.run_cmd import parse_run_config
from hpactl.model import crd

from .support import (
    HPACTL_NAMESPACE,
    K8S_VERSION,
    MANIFESTS_ROOT,
    Cluster,
    HpactlProcess,
    RecordingAuthorizer,
    app_deployment,
    apply_json_patch,
    assert_kustomize_renders,
    external_hpa,
    hpactl_argv,
    http_status,
    kubectl,
    load_docs,
    needs_kubectl,
    poll,
    seed_cluster,
    synced_desired,
    uses_verb,
    with_release_image,
)

Obj = dict[str, Any]
SHADOW = MANIFESTS_ROOT / "shadow"
OVERLAY = MANIFESTS_ROOT / "shadow-crd"
CRD_FILE = MANIFESTS_ROOT / "crd" / f"{crd.CRD_NAME}.yaml"
SA = "hpactl-shadow"
SA_USER = f"system:serviceaccount:{HPACTL_NAMESPACE}:{SA}"
READ_VERBS = {"get", "list", "watch"}
CR_RULE = {
    "apiGroups": [crd.GROUP],
    "resources": ["horizontalpodautoscalers"],
    "verbs": ["list", "watch"],
}


def _kustomization() -> Obj:
    kust: Obj = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    return kust


def _shadow_objects() -> list[Obj]:
    kust = yaml.safe_load((SHADOW / "kustomization.yaml").read_text())
    return [with_release_image(o) for name in kust["resources"] for o in load_docs(SHADOW / name)]


def _expected_render() -> list[Obj]:
    patches: dict[str, list[Obj]] = {}
    for patch in _kustomization()["patches"]:
        assert patch["target"]["name"] == SA
        patches[patch["target"]["kind"]] = yaml.safe_load((OVERLAY / patch["path"]).read_text())
    return [
        apply_json_patch(o, patches[o["kind"]]) if o["kind"] in patches else o
        for o in _shadow_objects()
    ]


def _one(kind: str, objects: list[Obj] | None = None) -> Obj:
    (obj,) = [o for o in (objects or _expected_render()) if o["kind"] == kind]
    return obj


def _args(objects: list[Obj] | None = None) -> list[str]:
    dep = _one("Deployment", objects)
    args: list[str] = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


# --------------------------------------------------------------------------- static checks


def test_kustomization_is_the_shadow_overlay_and_two_patches() -> None:
    kust = _kustomization()
    assert kust["resources"] == ["../shadow"]
    used = {str(p["path"]) for p in kust["patches"]}
    assert used == {p.name for p in OVERLAY.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.parametrize("kind", ["Deployment", "ClusterRole"])
def test_patched_objects_are_valid_against_the_kubernetes_schema(kind: str) -> None:
    kubernetes_validate.validate(_one(kind), K8S_VERSION, strict=True)


def test_only_the_cr_rule_and_the_sources_flag_are_added() -> None:
    shadow = _shadow_objects()
    assert _args() == [*_args(shadow), "--hpa-sources=builtin,crd"]
    config = parse_run_config(_args(), {})
    assert config.shadow
    assert set(config.hpa_sources) == {"builtin", "crd"}
    added = [
        r for r in _one("ClusterRole")["rules"] if r not in _one("ClusterRole", shadow)["rules"]
    ]
    assert added == [CR_RULE]
    verbs = {v for rule in _one("ClusterRole")["rules"] for v in rule["verbs"]}
    assert verbs <= READ_VERBS, verbs
    for obj in _expected_render():  # everything else is the shadow overlay's
        if obj["kind"] not in ("Deployment", "ClusterRole"):
            assert obj in shadow


@needs_kubectl
async def test_kubectl_kustomize_renders_the_overlay(tmp_path: Path) -> None:
    await assert_kustomize_renders(tmp_path, OVERLAY, _expected_render())


# --------------------------------------------------------------------------- against the emulator


async def _apply(cluster: Cluster, *, without_cr_rule: bool = False) -> None:
    """kubectl apply the overlay's RBAC (optionally without the CR rule) and the CRD."""
    docs = [
        o
        for o in _expected_render()
        if o["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
    ]
    if without_cr_rule:
        role = _one("ClusterRole", docs)
        role["rules"] = [r for r in role["rules"] if r != CR_RULE]
    rbac = cluster.tmp / "shadow-crd-rbac.yaml"
    rbac.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    code, out, err = await kubectl(
        cluster.admin_kubeconfig, "apply", f"-f={rbac}", f"-f={CRD_FILE}"
    )
    assert code == 0, f"{out}\n{err}"
    seed_cluster(cluster.emu)
    cluster.emu.store.create(app_deployment("api", 1))
    # queue_length 30 at 15 per replica: the hpactl HPA's decision is 2.
    cluster.emu.apply_object(
        external_hpa(crd.API_VERSION, "api", "15", {"matchLabels": {"queue": "orders"}})
    )


def _shadow_argv(cluster: Cluster, proxy: RecordingProxy) -> list[str]:
    token = cluster.emu.token_for_service_account(HPACTL_NAMESPACE, SA)
    kubeconfig = cluster.emu.write_kubeconfig(cluster.tmp / "shadow.kubeconfig", token=token)
    return [
        *hpactl_argv(),
        *_args()[_args().index("--shadow=true") :],  # the rendered flags, from --shadow on
        f"--kubeconfig={kubeconfig}",
        f"--master={proxy.url}",
        "--horizontal-pod-autoscaler-sync-period=1s",
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--logging-format=json",
        "-v=4",
    ]


@needs_kubectl
async def test_shadow_decides_for_both_kinds_and_writes_nothing(cluster: Cluster) -> None:
    emu = cluster.emu
    recorder = RecordingAuthorizer(emu.server.hooks.authorizer, SA_USER)
    emu.server.hooks.authorizer = recorder
    await _apply(cluster)
    async with RecordingProxy(emu.url, ssl=emu.client_ssl_context()) as proxy:
        async with HpactlProcess(_shadow_argv(cluster, proxy)) as proc:
            want = {"default/web": 4, "default/hhpa:api": 2}
            done = await poll(
                lambda: all(synced_desired(proc).get(k) == v for k, v in want.items()), 30
            )
            assert done, f"{synced_desired(proc)}\n{proc.output()}"
            assert await proc.terminate() == 0, proc.output()
        assert proxy.writes(leases=True) == []
    assert [r for r in recorder.seen if not r[-1]] == []
    assert {v for v, *_ in recorder.seen} <= READ_VERBS
    for verb in CR_RULE["verbs"]:
        assert any(
            uses_verb(v, verb) and g == crd.GROUP and r == "horizontalpodautoscalers"
            for v, g, r, _ns, _ in recorder.seen
        ), f"{verb} of {crd.GROUP} never used"
    cr = emu.store.get(crd.GROUP, crd.PLURAL, "default", "api") or {}
    assert "status" not in cr or not cr["status"].get("desiredReplicas")
    assert emu.store.get("apps", "deployments", "default", "api")["spec"]["replicas"] == 1  # type: ignore[index]


@needs_kubectl
async def test_without_the_cr_rule_the_shadow_fails_visibly(cluster: Cluster) -> None:
    await _apply(cluster, without_cr_rule=True)
    forbidden = (
        f'User "{SA_USER}" cannot list resource "horizontalpodautoscalers" '
        f'in API group "{crd.GROUP}"'
    )
    emu = cluster.emu
    async with (
        RecordingProxy(emu.url, ssl=emu.client_ssl_context()) as proxy,
        HpactlProcess(_shadow_argv(cluster, proxy)) as proc,
    ):

        def logged() -> bool:
            texts = [*proc.lines, *(str(v) for r in proc.records for v in r.values())]
            return any(forbidden in t or forbidden.replace("list", "watch") in t for t in texts)

        assert await poll(logged, 20), proc.output()
        serving = proc.find("hpactl.serving")
        assert serving is not None, proc.output()
        url = f"http://127.0.0.1:{serving['health_port']}/readyz"
        assert await http_status(url) not in (0, 200), "/readyz reports ready"
        assert await proc.terminate() == 0, proc.output()
        assert proxy.writes(leases=True) == []
