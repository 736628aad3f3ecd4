"""`hpactl emulator` mistakes: one line on stderr naming the file, flag or port, and
an exit code (2 for argument mistakes, as argparse's own; 1 for bad input)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from hpactl.cli import main


def _emulator(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["emulator", "--port", "0", *args])
    captured = capsys.readouterr()
    assert captured.out == ""  # never started: no "serving" line
    return code, captured.err


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: [\n",
            "not valid YAML (line 4): expected the node content, but found '<stream end>'",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: x}\n",
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
            "unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            "apiVersion: v1\nkind: Nope\nmetadata: {name: a}\n",
            'no matches for kind "Nope" in version "v1"',
        ),
        ("just text\n", "document 1 is not an object (a str)"),
    ],
)
def test_a_bad_manifest_names_its_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(content)
    assert _emulator(capsys, str(path)) == (1, f"hpactl emulator: {path}: {problem}\n")


def test_a_missing_manifest(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert _emulator(capsys, str(path)) == (1, f"hpactl emulator: {path}: no such file\n")


def test_a_service_account_token_needs_auth(capsys: pytest.CaptureFixture[str]) -> None:
    assert _emulator(capsys, "--service-account-token=default/x") == (
        2,
        "hpactl emulator: error: --service-account-token needs --auth\n",
    )


@pytest.mark.parametrize("value", ["defaultx", "/x", "default/", "a/b/c"])
def test_a_malformed_service_account_name(capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert _emulator(capsys, "--auth", f"--service-account-token={value}") == (
        2,
        f'hpactl emulator: error: --service-account-token "{value}": want NAMESPACE/NAME\n',
    )


def test_a_port_in_use_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        code = main(["emulator", "--port", str(port)])
    err = capsys.readouterr().err
    assert (code, err) == (
        1,
        f"hpactl emulator: --host/--port 127.0.0.1:{port}: address already in use\n",
    )
