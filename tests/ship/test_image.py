"""The container image, tested without a container engine.

No Docker runs on the CI machines, so this file does three things:

* checks the Dockerfile's structure: two stages, a pinned slim official Python
  base, the dependencies fetched hash-checked from ``requirements/image.lock`` and
  hpactl's wheel built with the tools of ``requirements/build.lock`` in the first
  stage, all installed from those files (no index, hash-checked again, ``pip check``)
  in the final one, a numeric non-root user, ``ENTRYPOINT ["hpactl", "run"]``, OCI
  labels, and that it agrees with ``manifests/base/deployment.yaml`` (user, ports, tag);
* checks the locks: every pyproject dependency pinned within its bound, every pin
  with sha256 hashes, nothing pinned that hpactl does not need; and, where the
  package index can be reached, repeats the image's hashed install into a fresh
  virtualenv (and fetches the arm64 wheels) to show that the lock alone is exactly
  hpactl's runtime closure;
* repeats what the two stages do for hpactl itself: copies exactly what the build
  stage COPYs, builds the wheel with ``pip wheel`` (as stage 1), installs it with pip
  into a fresh virtualenv and byte-compiles it (as stage 2), then runs the entrypoint
  — its ``--help`` and a short ``run`` against the emulator, ended by SIGTERM.

Dependencies of that last part: installing them needs the network, so, for the
entrypoint tests to run anywhere, the fresh virtualenv installs only hpactl's wheel
(``--no-deps --no-index``) and gets its dependencies from the shared development
virtualenv through a ``.pth`` file. A ``.pth`` line is appended to ``sys.path`` after
the virtualenv's own site-packages, so ``hpactl`` itself is always imported from the
installed wheel — never from the source tree or the shared environment's editable
install — which the test checks. That the wheel declares every dependency it needs
is checked separately, from its metadata; that the locked set installs and runs
without the shared environment, by the hashed-install tests.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
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
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

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
IMAGE_LOCK = REPO / "requirements" / "image.lock"
BUILD_LOCK = REPO / "requirements" / "build.lock"


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
    dep = yaml.safe_load((REPO / "manifests" / "base" / "deployment.yaml").read_text())
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


def _pip_commands(runs: list[str]) -> list[list[str]]:
    """The `python -m pip ...` commands of RUN lines, as argument lists after `pip`."""
    commands: list[list[str]] = []
    for run in runs:
        for part in run.split("&&"):
            words = shlex.split(part)
            if "pip" in words:
                commands.append(words[words.index("pip") + 1 :])
    return commands


def test_dockerfile_builds_wheels_first_and_installs_them_without_build_tools() -> None:
    _, (build, final) = _dockerfile()
    # Stage 1: the dependencies exactly as locked (hashes, no resolver, no sdist builds);
    # hpactl's wheel from the locked build tools, not from whatever an isolated build
    # environment would fetch.
    build_pip = _pip_commands([i.args for i in build if i.keyword == "RUN"])
    fetch = next(c for c in build_pip if "requirements/image.lock" in c)
    assert fetch[0] in ("download", "wheel")
    for flag in ("--require-hashes", "--no-deps", "--only-binary=:all:"):
        assert flag in fetch, f"stage 1 fetches the locked dependencies without {flag}"
    tools = next(c for c in build_pip if "requirements/build.lock" in c)
    assert tools[0] == "install" and {"--require-hashes", "--no-deps"} <= set(tools)
    (own,) = (c for c in build_pip if c[0] == "wheel" and c[-1] == ".")
    assert {"--no-deps", "--no-build-isolation"} <= set(own) and "/wheels" in own
    assert build_pip.index(tools) < build_pip.index(own)
    copied = " ".join(i.args for i in build if i.keyword == "COPY")
    assert "requirements/image.lock" in copied and "requirements/build.lock" in copied
    # Stage 2: one RUN, from the bind-mounted wheels only, hash-checked again.
    final_runs = [i.args for i in final if i.keyword == "RUN"]
    assert len(final_runs) == 1
    install = final_runs[0]
    assert "from=build" in install
    final_pip = _pip_commands(final_runs)
    deps, own_install, check = final_pip[:3]
    assert deps[0] == "install" and deps[-2:] == ["-r", "/requirements/image.lock"]
    for flag in ("--no-index", "--find-links=/wheels", "--require-hashes", "--no-deps"):
        assert flag in deps
    assert own_install[0] == "install" and own_install[-1] == "hpactl"
    assert {"--no-index", "--find-links=/wheels", "--no-deps"} <= set(own_install)
    # The locked set must satisfy hpactl's own requirements (a stale lock fails the build).
    assert check == ["check"]
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
    pod = yaml.safe_load((REPO / "manifests" / "base" / "deployment.yaml").read_text())["spec"][
        "template"
    ]["spec"]
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
    # The bare name: manifests/image/ adds the registry and the tag (test_release.py).
    assert container["image"] == "hpactl"


def _dockerignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore leaves `path` out of the build context (the last matching
    pattern decides; `!` re-includes; a pattern naming a directory covers its files)."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern.lstrip("!").strip("/")
        anywhere = pat.startswith("**/") and any(
            fnmatch.fnmatchcase(part, pat[3:]) for part in path.split("/")
        )
        if anywhere or fnmatch.fnmatchcase(path, pat) or path.startswith(pat + "/"):
            ignored = not negate
    return ignored


def test_dockerignore_keeps_everything_the_build_copies() -> None:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    _, (build, _) = _dockerfile()
    sources = [src for i in build if i.keyword == "COPY" for src in shlex.split(i.args)[:-1]]
    files = [
        str(f.relative_to(REPO))
        for src in sources
        for f in ([REPO / src] if (REPO / src).is_file() else (REPO / src).rglob("*.py"))
    ]
    assert "requirements/image.lock" in files and "requirements/build.lock" in files
    assert [f for f in files if _dockerignored(f, patterns)] == []
    # ...and leaves out what the image must not see.
    for other in ("tests/ship/test_image.py", "docs/install.md", ".venv", "hpactl/__pycache__"):
        assert _dockerignored(other, patterns), other


# --------------------------------------------------------------------------- the locks


@dataclass(frozen=True)
class Pin:
    version: str
    hashes: tuple[str, ...]
    via: frozenset[str]  # canonical names of what pulls it in; "hpactl" for pyproject.toml


def parse_lock(text: str) -> dict[str, Pin]:
    """A `uv pip compile --generate-hashes` file: canonical name -> pin.

    Raises on anything but `name==version` requirements with `--hash` options (no
    ranges, URLs, markers, editable installs or index options)."""
    pins: dict[str, Pin] = {}
    name = ""
    version = ""
    hashes: list[str] = []
    via: set[str] = set()
    in_via = False

    def flush() -> None:
        if name:
            assert name not in pins, f"{name} is pinned twice"
            pins[name] = Pin(version, tuple(hashes), frozenset(via))

    logical = re.sub(r"\\\n", " ", text)
    for raw in logical.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            comment = line[1:].strip()
            if comment.startswith("via"):
                rest = comment[3:].strip()
                in_via = not rest
                if rest:
                    via.add(_via_name(rest))
            elif in_via and raw.startswith("    #   "):
                via.add(_via_name(comment))
            else:
                in_via = False
            continue
        in_via = False
        flush()
        requirement, *options = line.split()
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", requirement)
        assert match, f"not an exact pin: {line!r}"
        assert all(o.startswith("--hash=") for o in options), f"unexpected option in {line!r}"
        name, version = str(canonicalize_name(match.group(1))), match.group(2)
        hashes = [o.removeprefix("--hash=") for o in options]
        via = set()
    flush()
    return pins


def _via_name(annotation: str) -> str:
    if annotation.endswith("(pyproject.toml)"):
        return "hpactl"
    return str(canonicalize_name(annotation.split()[0]))


def _runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [Requirement(d) for d in project["dependencies"]]


def test_lock_pins_every_runtime_dependency_within_its_bound() -> None:
    pins = parse_lock(IMAGE_LOCK.read_text())
    for req in _runtime_requirements():
        name = str(canonicalize_name(req.name))
        assert name in pins, f"{req} is not pinned in {IMAGE_LOCK.name}"
        pin = pins[name]
        assert req.specifier.contains(pin.version, prereleases=True), (
            f"{IMAGE_LOCK.name} pins {name}=={pin.version}, outside pyproject's {req}: "
            "run scripts/lock-image-deps"
        )
        assert "hpactl" in pin.via


def test_every_pin_carries_sha256_hashes() -> None:
    for lock in (IMAGE_LOCK, BUILD_LOCK):
        pins = parse_lock(lock.read_text())
        assert pins, f"{lock.name} pins nothing"
        for name, pin in pins.items():
            assert pin.hashes, f"{lock.name}: {name} has no --hash"
            for digest in pin.hashes:
                assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), f"{name}: {digest}"
            assert len(set(pin.hashes)) == len(pin.hashes)


def test_lock_holds_nothing_the_runtime_does_not_need() -> None:
    """Every pin is reached from pyproject's dependencies through the `# via` chain,
    and every `via` names something pinned (no orphans left by a hand edit)."""
    pins = parse_lock(IMAGE_LOCK.read_text())
    for name, pin in pins.items():
        assert pin.via, f"{name} has no `# via` annotation"
        assert pin.via <= set(pins) | {"hpactl"}, f"{name} via {sorted(pin.via)}"
    reached = {"hpactl"}
    frontier = ["hpactl"]
    while frontier:
        parent = frontier.pop()
        for name, pin in pins.items():
            if parent in pin.via and name not in reached:
                reached.add(name)
                frontier.append(name)
    assert set(pins) <= reached, f"pinned but not needed: {sorted(set(pins) - reached)}"
    # The dev tools stay out of the image.
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = {str(canonicalize_name(r.name)) for r in _runtime_requirements()}
    for dev in project["optional-dependencies"]["dev"]:
        name = str(canonicalize_name(Requirement(dev).name))
        if name not in runtime:
            pin = pins.get(name, Pin("", (), frozenset()))
            assert "hpactl" not in pin.via, f"dev tool {name} is pinned for the runtime"


def test_build_lock_pins_the_build_system_requirements() -> None:
    pins = parse_lock(BUILD_LOCK.read_text())
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    for spec in requires:
        req = Requirement(spec)
        name = str(canonicalize_name(req.name))
        assert name in pins, f"{req} is not pinned in {BUILD_LOCK.name}"
        assert req.specifier.contains(pins[name].version, prereleases=True), req
    # The runtime lock is for running hpactl only: no build tools in it.
    assert not set(parse_lock(IMAGE_LOCK.read_text())) & {"setuptools", "wheel", "pip"}


# The hashed install, as the image does it. It needs the package index; the tests skip
# (saying why) where it cannot be reached. pip runs isolated from this machine's pip
# configuration (extra indexes, find-links), as it does in the image's build.

_NETWORK_ERRORS = (
    "NewConnectionError",
    "Max retries exceeded",
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Name or service not known",
    "ConnectTimeoutError",
    "Read timed out",
    "ProxyError",
    "CERTIFICATE_VERIFY_FAILED",
)


def _pip(*argv: str | Path, python: Path | None = None, timeout: float = 120.0) -> str:
    """`pip --isolated ...` (for the interpreter `python`); skips the test when the
    failure is the package index being out of reach."""
    cmd: list[str | Path] = [sys.executable, "-m", "pip", "--isolated"]
    cmd += ["--disable-pip-version-check", "--timeout", "20", "--retries", "2"]
    if os.environ.get("PIP_CERT"):
        cmd += ["--cert", os.environ["PIP_CERT"]]
    if python is not None:
        cmd += ["--python", python]
    proc = subprocess.run(
        [str(a) for a in [*cmd, *argv]], capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0 and any(e in proc.stderr for e in _NETWORK_ERRORS):
        why = next(
            line for line in proc.stderr.splitlines() if any(e in line for e in _NETWORK_ERRORS)
        )
        pytest.skip(f"the package index cannot be reached: {why.strip()[:300]}")
    assert proc.returncode == 0, f"pip {argv} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@dataclass(frozen=True)
class HashedInstall:
    venv: Path
    purelib: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


@pytest.fixture(scope="module")
def hashed_install(tmp_path_factory: pytest.TempPathFactory) -> HashedInstall:
    """Both stages of the Dockerfile, with pip, into fresh virtualenvs."""
    root = tmp_path_factory.mktemp("hashed")
    context = _build_context(root / "src")
    wheels = root / "wheels"
    # Stage 1: the locked wheels, hash-checked; the build tools, hash-checked; hpactl's
    # wheel built with them and no build isolation.
    lock = context / "requirements" / "image.lock"
    _pip("download", "-q", "--require-hashes", "--no-deps", "--only-binary=:all:",
         "--dest", wheels, "-r", lock)  # fmt: skip
    builder = root / "builder"
    _run(sys.executable, "-m", "venv", "--without-pip", builder)
    tools = context / "requirements" / "build.lock"
    _pip("install", "-q", "--require-hashes", "--no-deps", "-r", tools,
         python=builder / "bin" / "python")  # fmt: skip
    _pip("wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", wheels,
         context, python=builder / "bin" / "python")  # fmt: skip
    # Stage 2: from those files only, hash-checked again; then pip check, compileall.
    venv = root / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    py = venv / "bin" / "python"
    _pip("install", "-q", "--no-index", f"--find-links={wheels}", "--require-hashes",
         "--no-deps", "-r", lock, python=py)  # fmt: skip
    _pip("install", "-q", "--no-index", f"--find-links={wheels}", "--no-deps", "hpactl", python=py)
    _pip("check", python=py)
    purelib = Path(
        _run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    _run(py, "-m", "compileall", "-q", purelib)
    return HashedInstall(venv, purelib)


def _closure(purelib: Path) -> set[str]:
    """hpactl's runtime dependency closure, from the metadata installed in `purelib`
    (markers evaluated for this interpreter, requested extras followed)."""
    dists = {
        str(canonicalize_name(d.metadata["Name"])): d
        for d in importlib.metadata.distributions(path=[str(purelib)])
    }
    base = {key: str(value) for key, value in default_environment().items()}
    seen: set[tuple[str, str]] = set()
    todo = [("hpactl", "")]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        assert name in dists, f"{name} is required but not installed"
        for spec in dists[name].requires or []:
            req = Requirement(spec)
            env = {**base, "extra": extra}
            if req.marker is None or req.marker.evaluate(env):
                dep = str(canonicalize_name(req.name))
                todo.append((dep, ""))
                todo.extend((dep, str(canonicalize_name(x))) for x in req.extras)
    return {name for name, _ in seen} - {"hpactl"}


def test_hashed_install_is_exactly_the_runtime_closure(hashed_install: HashedInstall) -> None:
    pins = parse_lock(IMAGE_LOCK.read_text())
    installed = {
        str(canonicalize_name(d.metadata["Name"])): d.version
        for d in importlib.metadata.distributions(path=[str(hashed_install.purelib)])
    }
    assert installed.pop("hpactl") == hpactl.__version__
    assert {n: Version(v) for n, v in installed.items()} == {
        n: Version(p.version) for n, p in pins.items()
    }
    # pip check passed in the fixture (nothing missing); and nothing is extra.
    closure = _closure(hashed_install.purelib)
    assert closure == set(installed), (
        f"missing: {sorted(closure - set(installed))}, unneeded: {sorted(set(installed) - closure)}"
    )


def test_hashed_install_runs_hpactl_on_the_locked_set_alone(
    hashed_install: HashedInstall, tmp_path: Path
) -> None:
    # Every hpactl module (but __main__, which runs the CLI) imports with only the
    # locked packages on the path.
    check = (
        "import importlib, pkgutil, sys, hpactl\n"
        "names = [m.name for m in pkgutil.walk_packages(hpactl.__path__, 'hpactl.')\n"
        "         if not m.name.endswith('.__main__')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "assert all(p.startswith(sys.prefix) for p in sys.path if 'site-packages' in p)\n"
        "print(len(names))\n"
    )
    assert int(_run(hashed_install.python, "-I", "-c", check, cwd=tmp_path)) > 10
    hpactl_exe = hashed_install.venv / "bin" / "hpactl"
    out = _run(hpactl_exe, "--version", cwd=tmp_path)
    assert out.strip() == f"hpactl {hpactl.__version__}"


def test_lock_has_arm64_wheels_for_every_pin(tmp_path: Path) -> None:
    """The image is built for linux/arm64 too: each pin has a wheel for it (no
    compiler in the image) and the lock holds its hash."""
    platforms = [f"--platform=manylinux_2_{v}_aarch64" for v in (17, 28, 31, 34, 36)]
    _pip("download", "-q", "--require-hashes", "--no-deps", "--only-binary=:all:",
         *platforms, "--platform=manylinux2014_aarch64", "--python-version=3.11",
         "--implementation=cp", "--abi=cp311", "--abi=abi3", "--abi=none",
         "--dest", tmp_path, "-r", IMAGE_LOCK)  # fmt: skip
    names = {str(canonicalize_name(w.name.split("-")[0])) for w in tmp_path.glob("*.whl")}
    assert names == set(parse_lock(IMAGE_LOCK.read_text()))
    native = [w.name for w in tmp_path.glob("*.whl") if not w.name.endswith("-any.whl")]
    assert native and all("aarch64" in n for n in native), native


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
            # Docker: a file goes into a target ending in "/" under its own name, and a
            # directory's contents are copied into the target.
            into_dir = target.endswith("/") and not origin.is_dir()
            where = dest / target / origin.name if into_dir else dest / target
            where.parent.mkdir(parents=True, exist_ok=True)
            if origin.is_dir():
                shutil.copytree(
                    origin, where, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True
                )
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
