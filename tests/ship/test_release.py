"""Release artifacts: one image reference, the rendered install manifests, the workflow.

* the image's registry path and tag are set once (manifests/image/, a kustomize
  component) and the tag is hpactl.__version__; every overlay renders that image;
* deploy/*.yaml is exactly what `scripts/render-release` renders from manifests/ (CI
  fails until it is rerun), and the script refuses a stale tree or a tag that is not
  the version;
* .github/workflows/release.yml, which cannot run here, is checked for structure:
  trigger on v-tags, every action pinned to a commit, a two-platform image pushed
  under the component's name, deploy/ checked and attached; actionlint runs on it
  when installed;
* CHANGELOG.md and docs/upgrading.md know the version.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import hpactl

from .support import MANIFESTS_ROOT, REPO, load_docs

IMAGE_COMPONENT = MANIFESTS_ROOT / "image" / "kustomization.yaml"
RENDER = REPO / "scripts" / "render-release"
DEPLOY = REPO / "deploy"
WORKFLOW = REPO / ".github" / "workflows" / "release.yml"
OVERLAYS = (".", "base", "ha", "managed", "shadow")

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")


def _image() -> dict[str, str]:
    component = yaml.safe_load(IMAGE_COMPONENT.read_text())
    assert component["kind"] == "Component"
    (image,) = component["images"]
    return {k: str(v) for k, v in image.items()}


def _release_image() -> str:
    image = _image()
    return f"{image['newName']}:{image['newTag']}"


def _kustomize(directory: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, check=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if isinstance(d, dict)]


def _containers(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        c
        for o in objs
        if o["kind"] == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
    ]


# --------------------------------------------------------------------------- the image


def test_the_image_tag_is_the_project_version_and_the_name_has_a_registry() -> None:
    image = _image()
    assert image["name"] == "hpactl"
    assert image["newTag"] == hpactl.__version__
    registry = image["newName"].split("/", 1)[0]
    assert "." in registry and image["newName"].count("/") >= 2, image["newName"]
    # pyproject takes its version from the package, so the wheel agrees too.
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "hpactl.__version__"


def test_deployments_name_the_image_without_registry_or_tag() -> None:
    """Only the component says where the image lives and which version it is."""
    for path in (MANIFESTS_ROOT / "base" / "deployment.yaml", MANIFESTS_ROOT / "shadow"):
        files = [path] if path.is_file() else sorted(path.glob("*.yaml"))
        for f in files:
            for doc in load_docs(f):
                if doc["kind"] == "Deployment":
                    for c in doc["spec"]["template"]["spec"]["containers"]:
                        assert c["image"] == "hpactl", f"{f}: {c['image']}"
    for base in ("base", "shadow"):
        kust = yaml.safe_load((MANIFESTS_ROOT / base / "kustomization.yaml").read_text())
        assert kust.get("components") == ["../image"], base
    hits = [
        p.relative_to(REPO)
        for p in MANIFESTS_ROOT.rglob("*.yaml")
        if p != IMAGE_COMPONENT and f"newTag: {hpactl.__version__}" in p.read_text()
    ]
    assert hits == []


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_renders_the_release_image(overlay: str) -> None:
    containers = _containers(_kustomize(MANIFESTS_ROOT / overlay))
    assert containers
    assert {c["image"] for c in containers} == {_release_image()}


@needs_kubectl
def test_an_operators_kustomization_moves_the_image_to_its_own_registry(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                # kustomize takes a base by relative path only
                "resources": [os.path.relpath(MANIFESTS_ROOT, tmp_path)],
                "images": [
                    {
                        "name": _image()["newName"],
                        "newName": "registry.example.com/platform/hpactl",
                    }
                ],
            }
        )
    )
    (container,) = {c["image"] for c in _containers(_kustomize(tmp_path))}
    assert container == f"registry.example.com/platform/hpactl:{hpactl.__version__}"


# --------------------------------------------------------------------------- deploy/


def _render(*args: str, root: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "render-release"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@needs_kubectl
def test_deploy_is_what_manifests_render() -> None:
    """Fails whenever manifests/ changes without `scripts/render-release`."""
    result = _render("--check")
    assert result.returncode == 0, result.stderr


def test_deploy_holds_one_file_per_install_each_with_the_release_image() -> None:
    names = sorted(p.name for p in DEPLOY.glob("*.yaml"))
    assert names == [
        "install-ha.yaml",
        "install-managed.yaml",
        "install-shadow-crd.yaml",
        "install-shadow.yaml",
        "install.yaml",
        "monitoring.yaml",
    ]
    for name in names:
        text = (DEPLOY / name).read_text()
        assert text.startswith(f"# hpactl {hpactl.__version__}: "), name
        images = set(re.findall(r"^\s+image: (\S+)$", text, re.MULTILINE))
        assert images == (set() if name == "monitoring.yaml" else {_release_image()}), name


def _copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for sub in ("manifests", "scripts", "deploy"):
        shutil.copytree(REPO / sub, root / sub)
    (root / "hpactl").mkdir()
    shutil.copy(REPO / "hpactl" / "__init__.py", root / "hpactl" / "__init__.py")
    return root


@needs_kubectl
def test_render_release_check_names_a_stale_or_unknown_file(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    with (root / "deploy" / "install-ha.yaml").open("a") as f:
        f.write("# edited by hand\n")
    (root / "deploy" / "old.yaml").write_text("{}\n")
    result = _render("--check", root=root)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "render-release: deploy/ is out of date (stale: install-ha.yaml; unknown: old.yaml): "
        "run scripts/render-release"
    )
    # Rendering repairs the stale file (the unknown one is the operator's to remove).
    assert _render(root=root).returncode == 0
    (root / "deploy" / "old.yaml").unlink()
    assert _render("--check", root=root).returncode == 0


def test_render_release_refuses_an_image_tag_that_is_not_the_version(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    init = root / "hpactl" / "__init__.py"
    init.write_text(init.read_text().replace(hpactl.__version__, "9.9.9"))
    before = {p.name: p.read_text() for p in (root / "deploy").glob("*.yaml")}
    result = _render(root=root)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"render-release: manifests/image/ tags the image {hpactl.__version__} but "
        "hpactl.__version__ is 9.9.9: set newTag: 9.9.9"
    )
    assert {p.name: p.read_text() for p in (root / "deploy").glob("*.yaml")} == before


# --------------------------------------------------------------------------- the workflow


def _workflow() -> dict[Any, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(doc, dict)
    return doc


def _steps(job: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _workflow()["jobs"][job]["steps"]
    return steps


def test_the_release_workflow_runs_on_version_tags_only() -> None:
    wf = _workflow()
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as true
    assert on == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    assert wf["permissions"] == {"contents": "read"}
    jobs = wf["jobs"]
    assert set(jobs) == {"verify", "image", "release"}
    assert jobs["image"]["needs"] == "verify"
    assert jobs["release"]["needs"] == ["verify", "image"]
    assert jobs["image"]["permissions"] == {"contents": "read", "packages": "write"}
    assert jobs["release"]["permissions"] == {"contents": "write"}


def test_every_action_is_pinned_to_a_commit_with_its_version_beside_it() -> None:
    uses = re.findall(r"uses: (\S+)(.*)$", WORKFLOW.read_text(), re.MULTILINE)
    assert uses
    for ref, comment in uses:
        action, _, sha = ref.partition("@")
        assert re.fullmatch(r"[0-9a-f]{40}", sha), f"{action} is not pinned to a commit"
        assert re.fullmatch(r" # v\d+\.\d+\.\d+", comment), f"{action}: no version comment"


def test_the_workflow_checks_the_version_and_deploy_then_builds_two_platforms() -> None:
    verify = "\n".join(s.get("run", "") for s in _steps("verify"))
    assert "hpactl/__init__.py" in verify and "manifests/image/kustomization.yaml" in verify
    assert "scripts/render-release --check" in verify
    kubectl_version = _workflow()["env"]["KUBECTL_VERSION"]
    client = subprocess.run(
        ["kubectl", "version", "--client"], capture_output=True, text=True, check=False
    ).stdout
    if client:  # deploy/ was rendered by the kubectl the workflow installs
        assert f"Client Version: {kubectl_version}" in client
    (build,) = [s for s in _steps("image") if "docker/build-push-action" in s.get("uses", "")]
    w = build["with"]
    assert w["platforms"] == "linux/amd64,linux/arm64"
    assert w["push"] is True
    assert w["tags"] == "${{ needs.verify.outputs.image }}:${{ needs.verify.outputs.version }}"
    assert w["build-args"] == "VERSION=${{ needs.verify.outputs.version }}"
    release = "\n".join(s.get("run", "") for s in _steps("release"))
    assert "gh release create" in release and "deploy/*.yaml" in release


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint not on PATH")
def test_actionlint_finds_nothing() -> None:
    result = subprocess.run(
        ["actionlint", str(WORKFLOW)], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --------------------------------------------------------------------------- notes


def test_the_changelog_and_the_upgrade_notes_know_the_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\](.*)$", changelog, re.MULTILINE)
    assert headings[0] == ("Unreleased", "")
    versions = [v for v, _ in headings[1:]]
    assert hpactl.__version__ in versions
    for version, rest in headings[1:]:
        assert re.fullmatch(r" - \d{4}-\d{2}-\d{2}", rest), f"{version}: no date"
    # Every heading has its compare (or release) link at the end.
    links = dict(re.findall(r"^\[([^\]]+)\]: (\S+)$", changelog, re.MULTILINE))
    for version, _ in headings:
        assert version in links, f"no link for [{version}]"
    assert links["Unreleased"].endswith(f"/compare/v{versions[0]}...HEAD")
    upgrading = (REPO / "docs" / "upgrading.md").read_text()
    assert f"## From {hpactl.__version__.rsplit('.', 1)[0]}" in upgrading
