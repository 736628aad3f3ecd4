"""The container image, tested without a container engine.

No Docker runs on the CI machines, so this file does two things:

* checks the Dockerfile's structure: two stages, a pinned slim official Python
  base, wheels built in the first stage and installed from them (no index) in the
  final one, a numeric non-root user, ``ENTRYPOINT ["hpactl", "run"]``, OCI labels,
  and that it agrees with ``manifests/deployment.yaml`` (user, ports, image tag);
* repeats what the two stages do: copies exactly what the build stage COPYs, builds
  the wheel with ``pip wheel`` (as stage 1), installs it with pip into a fresh
  virtualenv and byte-compiles it (as stage 2), then runs the entrypoint — its
  ``--help`` and a short ``run`` against the emulator, ended by SIGTERM.

Dependencies: the image installs hpactl's dependencies from wheels built in stage 1;
building them here would need the network and minutes. Instead the fresh virtualenv
installs only hpactl's wheel (``--no-deps --no-index``) and gets its dependencies from
the shared development virtualenv through a ``.pth`` file. A ``.pth`` line is appended
to ``sys.path`` after the virtualenv's own site-packages, so ``hpactl`` itself is
always imported from the installed wheel — never from the source tree or the shared
environment's editable install — which the test checks. That the wheel declares
every dependency it needs is checked separately, from its metadata.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import yaml

import hpactl
from hpactl.emulator import Emulator

from .support import (
    REPO,
    HpactlProcess,
    http_status,
    poll,
    poll_async,
    run_flags,
    seed_cluster,
    unmet,
)

DOCKERFILE = REPO / "Dockerfile"


# --------------------------------------------------------------------------- Dockerfile


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


def parse_dockerfile(text: str) -> list[list[Instruction]]:
    """Instructions grouped by stage (ARGs before the first FROM form stage 0's prelude)."""
    logical: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    stages: list[list[Instruction]] = [[]]
    for line in logical:
        keyword, _, args = line.partition(" ")
        inst = Instruction(keyword.upper(), args.strip())
        if inst.keyword == "FROM":
            stages.append([])
        stages[-1].append(inst)
    return stages


def _dockerfile() -> tuple[list[Instruction], list[list[Instruction]]]:
    prelude, *stages = parse_dockerfile(DOCKERFILE.read_text())
    return prelude, stages


def _args(prelude: list[Instruction]) -> dict[str, str]:
    out: dict[str, str] = {}
    for inst in prelude:
        if inst.keyword == "ARG" and "=" in inst.args:
            name, _, value = inst.args.partition("=")
            out[name] = value
    return out


def _base_image(from_args: str, args: dict[str, str]) -> str:
    image = from_args.split()[0]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args[m.group(1) or m.group(2)], image)


def _labels(stage: list[Instruction]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for inst in stage:
        if inst.keyword == "LABEL":
            for token in shlex.split(inst.args):
                key, _, value = token.partition("=")
                labels[key] = value
    return labels


def _deployment_container() -> dict[str, object]:
    dep = yaml.safe_load((REPO / "manifests" / "deployment.yaml").read_text())
    container: dict[str, object] = dep["spec"]["template"]["spec"]["containers"][0]
    return container


def test_dockerfile_is_multi_stage_on_a_pinned_slim_python() -> None:
    prelude, stages = _dockerfile()
    args = _args(prelude)
    assert len(stages) == 2, "a build stage and a final stage"
    build_from, final_from = stages[0][0].args, stages[1][0].args
    assert build_from.split()[-2:] == ["AS", "build"] or build_from.split()[-2:] == ["as", "build"]
    for from_args in (build_from, final_from):
        image = _base_image(from_args, args)
        # The official image, pinned to a patch release, slim variant.
        match = re.fullmatch(r"python:(3)\.(\d+)\.(\d+)-slim(-[a-z]+)?", image)
        assert match, f"base image {image!r} is not a pinned official python slim image"
        requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
            "requires-python"
        ]
        minimum = re.fullmatch(r">=\s*3\.(\d+)", requires)
        assert minimum and int(match.group(2)) >= int(minimum.group(1))
    assert _base_image(build_from, args) == _base_image(final_from, args)


def test_dockerfile_builds_wheels_first_and_installs_them_without_build_tools() -> None:
    _, (build, final) = _dockerfile()
    build_runs = " ".join(i.args for i in build if i.keyword == "RUN")
    assert "pip wheel" in build_runs and "--wheel-dir /wheels" in build_runs
    final_runs = [i.args for i in final if i.keyword == "RUN"]
    assert len(final_runs) == 1
    install = final_runs[0]
    assert (
        "from=build" in install and "pip install --no-index --find-links=/wheels hpactl" in install
    )
    # Nothing is compiled or fetched in the final stage, and no wheel stays in a layer.
    for banned in ("apt-get", "apk ", "gcc", "build-essential", "pip install --upgrade"):
        assert banned not in install
    assert not any(i.keyword in ("COPY", "ADD") for i in final)
    # Read-only root filesystem: bytecode compiled now, never written at run time.
    assert "compileall" in install
    env = " ".join(i.args for i in final if i.keyword == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env


def test_dockerfile_runs_hpactl_as_a_numeric_non_root_user() -> None:
    _, (_, final) = _dockerfile()
    users = [i.args for i in final if i.keyword == "USER"]
    assert len(users) == 1
    match = re.fullmatch(r"(\d+)(?::(\d+))?", users[0])
    assert match, f"USER {users[0]} is not numeric (runAsNonRoot needs a numeric uid)"
    assert int(match.group(1)) != 0
    entrypoints = [i.args for i in final if i.keyword == "ENTRYPOINT"]
    assert len(entrypoints) == 1 and json.loads(entrypoints[0]) == ["hpactl", "run"]
    # The Deployment runs the image as that same user and group.
    pod = yaml.safe_load((REPO / "manifests" / "deployment.yaml").read_text())["spec"]["template"][
        "spec"
    ]
    assert pod["securityContext"]["runAsUser"] == int(match.group(1))
    if match.group(2):
        assert pod["securityContext"]["runAsGroup"] == int(match.group(2))


def test_dockerfile_labels_ports_and_version_match_the_project() -> None:
    _, (_, final) = _dockerfile()
    labels = _labels(final)
    for key in ("title", "description", "version", "licenses"):
        assert labels.get(f"org.opencontainers.image.{key}"), f"missing OCI label {key}"
    assert labels["org.opencontainers.image.title"] == "hpactl"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert labels["org.opencontainers.image.licenses"] == project["license"]["text"]
    version_args = _args([i for i in final if i.keyword == "ARG"])
    assert version_args.get("VERSION") == hpactl.__version__
    exposed = {int(p) for i in final if i.keyword == "EXPOSE" for p in i.args.split()}
    container = _deployment_container()
    ports = {int(p["containerPort"]) for p in container["ports"]}  # type: ignore[attr-defined]
    assert exposed == ports
    assert container["image"] == f"hpactl:{hpactl.__version__}"


# --------------------------------------------------------------------------- the install


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path

    @property
    def hpactl(self) -> Path:
        return self.venv / "bin" / "hpactl"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def _build_context(dest: Path) -> Path:
    """Copy what the build stage COPYs (its `COPY src... dst` lines, relative to WORKDIR)."""
    _, (build, _) = _dockerfile()
    copies = [shlex.split(i.args) for i in build if i.keyword == "COPY"]
    assert copies, "the build stage copies nothing"
    for *sources, target in copies:
        for src in sources:
            origin = REPO / src
            where = dest / target / src if target.endswith("/") else dest / target
            where.parent.mkdir(parents=True, exist_ok=True)
            if origin.is_dir():
                shutil.copytree(origin, where, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(origin, where)
    return dest


def _run(*argv: str | Path, timeout: float = 120.0, **kw: object) -> str:
    proc = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,  # type: ignore[call-overload]
    )
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    out: str = proc.stdout
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("image")
    context = _build_context(root / "src")
    wheels = root / "wheels"
    # Stage 1 (hpactl's own wheel only; see the module docstring for the dependencies).
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", wheels, context)
    (wheel,) = wheels.glob("hpactl-*.whl")
    # Stage 2: a clean environment, pip install from the wheel with no index, compileall.
    venv = root / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        venv / "bin" / "python",
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        wheel,
    )
    purelib = _run(
        venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    ).strip()
    Path(purelib, "zz_shared_dependencies.pth").write_text(
        "".join(f"{p}\n" for p in site.getsitepackages())
    )
    _run(venv / "bin" / "python", "-m", "compileall", "-q", purelib)
    yield Installed(wheel, venv)


def test_wheel_holds_every_package_and_declares_its_dependencies(installed: Installed) -> None:
    source = {
        str(p.parent.relative_to(REPO)).replace(os.sep, ".")
        for p in (REPO / "hpactl").rglob("__init__.py")
    }
    with zipfile.ZipFile(installed.wheel) as whl:
        names = whl.namelist()
        packaged = {
            n.rpartition("/")[0].replace("/", ".") for n in names if n.endswith("__init__.py")
        }
        metadata = whl.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry_points = whl.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert source <= packaged, f"packages missing from the wheel: {sorted(source - packaged)}"
    assert not any(n.startswith(("tests/", "bench/", "docs/")) for n in names)
    assert re.search(r"^hpactl = hpactl\.cli:main$", entry_points, re.M)
    # Each dependency in pyproject.toml is declared by the wheel and present for it.
    declared = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)(?!.*extra ==)", metadata, re.M)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in project["dependencies"]]  # type: ignore[union-attr]
    norm = {re.sub(r"[-_.]+", "-", d).lower() for d in declared}
    assert {re.sub(r"[-_.]+", "-", d).lower() for d in wanted} <= norm
    check = (
        "import importlib.metadata as m, sys\n"
        "missing = [n for n in sys.argv[1:] if not m.distribution(n)]\n"
        "print(missing)\n"
    )
    assert _run(installed.python, "-c", check, *wanted).strip() == "[]"


def test_entrypoint_is_the_installed_wheel(installed: Installed, tmp_path: Path) -> None:
    out = _run(
        installed.python,
        "-c",
        "import hpactl, importlib.metadata as m; print(hpactl.__file__); print(m.version('hpactl'))",
        cwd=tmp_path,
    )
    where, version = out.split()
    assert Path(where).is_relative_to(installed.venv)
    assert version == hpactl.__version__
    assert (
        _run(installed.hpactl, "--version", cwd=tmp_path).strip() == f"hpactl {hpactl.__version__}"
    )


def test_entrypoint_help_lists_the_controller_flags(installed: Installed, tmp_path: Path) -> None:
    out = _run(installed.hpactl, "run", "--help", cwd=tmp_path)
    assert out.startswith("Usage:") or "usage:" in out.lower()
    for flag in (
        "--horizontal-pod-autoscaler-sync-period",
        "--leader-elect",
        "--kubeconfig",
        "--metrics-bind-address",
        "--health-probe-bind-address",
    ):
        assert flag in out


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


async def test_entrypoint_runs_against_the_emulator_and_stops_on_sigterm(
    installed: Installed, tmp_path: Path
) -> None:
    workdir = tmp_path / "cwd"
    home = tmp_path / "home"
    workdir.mkdir()
    home.mkdir()
    before = _tree(installed.venv)
    env = {
        "PATH": f"{installed.venv / 'bin'}:{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",  # as the image sets it
        "PYTHONUNBUFFERED": "1",
    }
    async with Emulator() as emu:
        seed_cluster(emu)
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        argv = [str(installed.hpactl), "run", *run_flags(kubeconfig, leader_elect=False)]
        async with HpactlProcess(argv, env=env, cwd=workdir) as proc:
            serving = await proc.wait_for_record("hpactl.serving", 30)
            health = f"http://127.0.0.1:{serving['health_port']}"
            metrics = f"http://127.0.0.1:{serving['metrics_port']}/metrics"
            assert await http_status(f"{health}/healthz") == 200
            ready = await poll_async(lambda: http_status(f"{health}/readyz"), 200, 30)
            assert ready, f"/readyz never became ready:\n{proc.output()}"
            done = await poll(lambda: not unmet(emu, leader_elect=False), 30)
            assert done, f"unmet: {unmet(emu, leader_elect=False)}\n{proc.output()}"
            async with aiohttp.ClientSession() as http, http.get(metrics) as resp:
                assert resp.status == 200
                text = await resp.text()
            assert re.search(r"^hpactl_informer_caches_synced 1(\.0)?$", text, re.M)
            code = await proc.terminate()
        assert code == 0, proc.output()
        assert proc.find("hpactl.stopped") is not None
    # Nothing was written next to the code (read-only root filesystem) or in the cwd.
    assert _tree(installed.venv) == before
    assert list(workdir.iterdir()) == []
