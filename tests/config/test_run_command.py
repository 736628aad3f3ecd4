"""`python -m hpactl run` as a process: exit status 2 and one line on bad config; help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpactl", "run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--bogus"], "hpactl run: error: --bogus: unknown flag"),
        (
            ["--horizontal-pod-autoscaler-sync-period=5x"],
            'hpactl run: error: --horizontal-pod-autoscaler-sync-period: time: unknown unit "x" in duration "5x"',
        ),
        (
            ["--horizontal-pod-autoscaler-sync-period=0s"],
            "hpactl run: error: --horizontal-pod-autoscaler-sync-period: must be greater than 0, got 0s",
        ),
        (
            ["--horizontal-pod-autoscaler-tolerance", "-1"],
            "hpactl run: error: --horizontal-pod-autoscaler-tolerance: must not be negative, got -1",
        ),
        (
            ["--concurrent-horizontal-pod-autoscaler-syncs=0"],
            "hpactl run: error: --concurrent-horizontal-pod-autoscaler-syncs: must be greater than 0, but got 0",
        ),
        (
            ["--feature-gates=NotAGate=true"],
            "hpactl run: error: --feature-gates: unrecognized feature gate: NotAGate",
        ),
    ],
)
def test_bad_flags_exit_2_with_one_line(args: list[str], line: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr == line + "\n"
    assert result.stdout == ""


def test_bad_config_file_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubecontrollermanager.config.k8s.io/v1alpha1\n"
        "kind: KubeControllerManagerConfiguration\n"
        "hpaController:\n"
        "  horizontalPodAutoscalerSyncPeriod: soon\n",
        encoding="utf-8",
    )
    result = run("--config", str(path))
    assert result.returncode == 2
    assert result.stderr == (
        f"hpactl run: error: {path}: hpaController.horizontalPodAutoscalerSyncPeriod: "
        'time: invalid duration "soon"\n'
    )


def test_unparsable_config_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: [\n", encoding="utf-8")
    result = run(f"--config={path}")
    assert result.returncode == 2
    assert result.stderr.startswith(f"hpactl run: error: {path}: invalid YAML: ")
    assert result.stderr.count("\n") == 1


def test_help_groups_flags_like_kube_controller_manager_and_shows_defaults() -> None:
    result = run("--help")
    assert result.returncode == 0
    out = result.stdout
    sections = [
        "Generic flags:",
        "Horizontalpodautoscaling controller flags:",
        "Serving flags:",
        "Logs flags:",
        "Misc flags:",
        "Global flags:",
    ]
    positions = [out.index(s) for s in sections]
    assert positions == sorted(positions)
    # Each flag sits in its section.
    generic, hpa = out[positions[0] : positions[1]], out[positions[1] : positions[2]]
    assert "--leader-elect-lease-duration duration" in generic
    assert "--kube-api-qps float32" in generic
    assert "--horizontal-pod-autoscaler-sync-period duration" in hpa
    flat = " ".join(out.split())
    for default in (
        "(default 15s)",  # sync period, lease duration
        "(default 0.1)",
        "(default 5m0s)",
        "(default 30s)",
        "(default 5)",
        "(default 20)",
        "(default 30)",
        "(default true)",
        "(default 10s)",
        "(default 2s)",
        '(default "leases")',
        '(default "hpactl")',
        '(default "kube-system")',
        '(default ":8080")',
        '(default ":8081")',
        '(default "text")',
    ):
        assert default in flat, default
    assert "HPAScaleToZero=true|false (BETA - default=true)" in out
    # Deprecated flags are hidden, as pflag hides them.
    assert "upscale-delay" not in out


def test_help_wins_over_bad_flags() -> None:
    result = run("--bogus", "-h")
    assert result.returncode == 0
    assert "Generic flags:" in result.stdout


def test_invalid_configuration_prints_only_the_error() -> None:
    # An invalid value elsewhere stops the run before anything connects.
    result = run("--horizontal-pod-autoscaler-upscale-delay=1m", "--kube-api-burst=0")
    assert result.returncode == 2
    assert result.stderr == "hpactl run: error: --kube-api-burst: must be greater than 0, got 0\n"


def test_version() -> None:
    from hpactl import __version__

    result = run("--version")
    assert result.returncode == 0
    assert result.stdout == f"hpactl {__version__}\n"
