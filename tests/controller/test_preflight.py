"""`hpactl run` mistakes that are one line on stderr and an exit code, before anything
starts: a kubeconfig missing, not a kubeconfig or without a current context (2), a
metrics or health port another process holds (1)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "hpactl", "run", "--leader-elect=false", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _kubeconfig(path: Path, current: str | None = "emu") -> Path:
    lines = [
        "apiVersion: v1",
        "kind: Config",
        "clusters: [{name: emu, cluster: {server: 'http://127.0.0.1:1'}}]",
        "contexts: [{name: emu, context: {cluster: emu, user: emu}}]",
        "users: [{name: emu, user: {}}]",
    ]
    if current is not None:
        lines.append(f"current-context: {current}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "no such file"),
        (
            "clusters: [\n",
            "not valid YAML (line 2): expected the node content, but found '<stream end>'",
        ),
        ("just text\n", "not a kubeconfig (no clusters or contexts)"),
        ("", "not a kubeconfig (no clusters or contexts)"),
    ],
)
def test_a_bad_kubeconfig_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    code, out, err = _run(f"--kubeconfig={path}")
    assert (code, out, err) == (2, "", f"hpactl run: error: --kubeconfig {path}: {problem}\n")


def test_a_kubeconfig_without_current_context_names_it(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "kubeconfig", current=None)
    code, _, err = _run(f"--kubeconfig={path}")
    assert (code, err) == (2, f"hpactl run: error: --kubeconfig {path}: no current-context set\n")


def test_a_directory_as_kubeconfig(tmp_path: Path) -> None:
    code, _, err = _run(f"--kubeconfig={tmp_path}")
    assert (code, err) == (2, f"hpactl run: error: --kubeconfig {tmp_path}: is a directory\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_kubeconfig(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "kubeconfig")
    path.chmod(0)
    code, _, err = _run(f"--kubeconfig={path}")
    assert (code, err) == (2, f"hpactl run: error: --kubeconfig {path}: permission denied\n")


def test_no_kubeconfig_anywhere_says_what_to_give(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }
    env["HOME"] = str(tmp_path)
    code, _, err = _run(env=env)
    want = (
        f"hpactl run: error: default kubeconfig {tmp_path}/.kube/config: no such file "
        "(give --kubeconfig or --master)\n"
    )
    assert (code, err) == (2, want)


@pytest.fixture
def held_port() -> Iterator[int]:
    """A loopback port another process (here: this one) is listening on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("flag", ["--metrics-bind-address", "--health-probe-bind-address"])
def test_a_port_in_use_is_named_before_anything_starts(
    tmp_path: Path, held_port: int, flag: str
) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig")
    others = {
        "--metrics-bind-address": "127.0.0.1:0",
        "--health-probe-bind-address": "127.0.0.1:0",
    }
    others[flag] = f"127.0.0.1:{held_port}"
    code, out, err = _run(f"--kubeconfig={kubeconfig}", *(f"{k}={v}" for k, v in others.items()))
    want = f"hpactl run: error: {flag}=127.0.0.1:{held_port}: address already in use\n"
    assert (code, out, err) == (1, "", want)  # no log line: the informers never started
