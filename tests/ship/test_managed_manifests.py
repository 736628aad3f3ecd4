"""`manifests/managed/`: hpactl beside a built-in HPA controller that cannot be turned off.

* the overlay is the base plus the CRD, the Deployment's flags ending in
  ``--hpa-sources=crd``, and the ClusterRole with the built-in HPAs' status writes
  replaced by hpactl's own resource (get/list/watch, status update); every object
  validates against the Kubernetes schemas (strict) and ``kubectl kustomize`` renders
  exactly that;
* no rule lets hpactl write an ``autoscaling`` HorizontalPodAutoscaler, while the
  built-in ones stay listed and watched (the conflict check);
* applied to the emulator (authentication and RBAC enforced), ``hpactl run`` with the
  ServiceAccount's token and the rendered flags scales a workload through an hpactl
  HorizontalPodAutoscaler and writes its status, leaves the built-in HPAs alone, and
  is never denied anything.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from hpactl.cli.run_cmd import parse_run_config
from hpactl.model import crd

from .support import (
    HPACTL_NAMESPACE,
    HPACTL_SA,
    K8S_VERSION,
    MANIFESTS_ROOT,
    SA_USER,
    Cluster,
    HpactlProcess,
    RecordingAuthorizer,
    app_deployment,
    apply_json_patch,
    assert_kustomize_renders,
    external_hpa,
    hpactl_argv,
    kubectl,
    load_docs,
    manifest_objects,
    needs_kubectl,
    poll,
    rbac_files,
    run_flags,
)

Obj = dict[str, Any]
MANAGED = MANIFESTS_ROOT / "managed"
CRD_FILE = MANIFESTS_ROOT / "crd" / f"{crd.CRD_NAME}.yaml"
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}


def _kustomization() -> Obj:
    kust: Obj = yaml.safe_load((MANAGED / "kustomization.yaml").read_text())
    return kust


def _patches() -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for patch in _kustomization()["patches"]:
        out[patch["target"]["kind"]] = yaml.safe_load((MANAGED / patch["path"]).read_text())
        assert patch["target"]["name"] == "hpactl"
    return out


def _expected_render() -> list[Obj]:
    patches = _patches()
    out = [
        apply_json_patch(o, patches[o["kind"]])
        if o["kind"] in patches and o["metadata"]["name"] == "hpactl"
        else o
        for o in manifest_objects()
    ]
    return [*out, *load_docs(CRD_FILE)]


def _one(kind: str) -> Obj:
    (obj,) = [
        o
        for o in _expected_render()
        if o["kind"] == kind and o["metadata"]["name"] in ("hpactl", crd.CRD_NAME)
    ]
    return obj


def _args() -> list[str]:
    args: list[str] = _one("Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


# --------------------------------------------------------------------------- static checks


def test_kustomization_is_the_base_the_crd_and_two_patches() -> None:
    kust = _kustomization()
    assert kust["resources"] == ["../base", "../crd"]
    used = {str(p["path"]) for p in kust["patches"]}
    assert used == {p.name for p in MANAGED.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.parametrize("kind", ["Deployment", "ClusterRole", "CustomResourceDefinition"])
def test_patched_objects_are_valid_against_the_kubernetes_schema(kind: str) -> None:
    kubernetes_validate.validate(_one(kind), K8S_VERSION, strict=True)


def test_the_rendered_flags_serve_only_hpactls_resource() -> None:
    (dep,) = [o for o in manifest_objects() if o["kind"] == "Deployment"]
    base = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    args = _args()
    assert args == [*base, "--hpa-sources=crd"]  # appended, nothing else changed
    config = parse_run_config(args, {})
    assert config.hpa_sources == ("crd",)
    assert not config.shadow


def _grants(role: Obj) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_reads_builtin_hpas_and_writes_only_hpactls_own() -> None:
    (base_role,) = [
        o
        for o in manifest_objects()
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "hpactl"
    ]
    managed = _grants(_one("ClusterRole"))
    base = _grants(base_role)
    assert base - managed == {("autoscaling", "horizontalpodautoscalers/status", "update")}
    assert managed - base == {
        (crd.GROUP, "horizontalpodautoscalers", "get"),
        (crd.GROUP, "horizontalpodautoscalers", "list"),
        (crd.GROUP, "horizontalpodautoscalers", "watch"),
        (crd.GROUP, "horizontalpodautoscalers/status", "update"),
    }
    for group, resource, verb in managed:
        if group in ("autoscaling", "*") and "horizontalpodautoscalers" in resource:
            assert verb not in WRITE_VERBS, (group, resource, verb)
    # Still read, for the conflict check.
    assert ("autoscaling", "horizontalpodautoscalers", "watch") in managed


def test_every_other_rbac_file_is_the_bases() -> None:
    for obj in _expected_render():
        if obj["kind"] in ("ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"):
            assert obj in manifest_objects()


@needs_kubectl
async def test_kubectl_kustomize_renders_the_overlay(tmp_path: Path) -> None:
    await assert_kustomize_renders(tmp_path, MANAGED, _expected_render())


# --------------------------------------------------------------------------- the cluster


@needs_kubectl
async def test_hpactl_runs_its_own_hpas_under_the_managed_rbac(cluster: Cluster) -> None:
    emu = cluster.emu
    patched = cluster.tmp / "clusterrole.yaml"
    patched.write_text(yaml.safe_dump(_one("ClusterRole")))
    files = [p for p in rbac_files() if p.name != "clusterrole.yaml"] + [patched, CRD_FILE]
    code, out, err = await kubectl(cluster.admin_kubeconfig, "apply", *(f"-f={f}" for f in files))
    assert code == 0, f"{out}\n{err}"
    # web: hpactl's resource, queue 30 at 10 per replica -> 3. legacy: a built-in HPA
    # (run by the built-in controller, absent here) that hpactl must not touch.
    emu.store.create(app_deployment("web", 1))
    emu.store.create(app_deployment("legacy", 1))
    emu.metrics.set_external(
        [{"namespace": "default", "metricName": "queue_length", "metricLabels": {}, "value": "30"}]
    )
    emu.apply_object(external_hpa(crd.API_VERSION, "web", "10"))
    emu.apply_object(external_hpa("autoscaling/v2", "legacy", "10"))
    legacy_before = copy.deepcopy(
        emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "legacy")
    )

    recorder = RecordingAuthorizer(emu.server.hooks.authorizer, SA_USER)
    emu.server.hooks.authorizer = recorder
    token = emu.token_for_service_account(HPACTL_NAMESPACE, HPACTL_SA)
    kubeconfig = emu.write_kubeconfig(cluster.tmp / "hpactl.kubeconfig", token=token)
    argv = [*hpactl_argv(), *_args(), *run_flags(kubeconfig, leader_elect=True)]
    async with HpactlProcess(argv) as proc:

        def done() -> bool:
            dep = emu.store.get("apps", "deployments", "default", "web") or {}
            cr = emu.store.get(crd.GROUP, crd.PLURAL, "default", "web") or {}
            return (
                dep.get("spec", {}).get("replicas") == 3
                and (cr.get("status") or {}).get("desiredReplicas") == 3
            )

        assert await poll(done, 30), proc.output()
    legacy = emu.store.get("apps", "deployments", "default", "legacy") or {}
    assert legacy["spec"]["replicas"] == 1
    assert (
        emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "legacy")
        == legacy_before
    )
    denied = [r for r in recorder.seen if not r[-1]]
    assert denied == []
    written = {(r[0], r[1], r[2]) for r in recorder.seen if r[0] in WRITE_VERBS}
    assert ("update", crd.GROUP, "horizontalpodautoscalers/status") in written
    assert not any(g == "autoscaling" for _, g, _ in written)
