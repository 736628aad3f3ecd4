"""TLS verification stays on unless the kubeconfig turns it off.

Against the emulator serving HTTPS with its own CA (and bearer tokens): a kubeconfig
without ``certificate-authority(-data)`` makes ``hpactl run`` and ``hpactl explain``
fail at once — exit 1, one line naming the certificate problem, no traceback — and
nothing is sent without verification; ``insecure-skip-tls-verify: true`` or the CA
(inline or as a file) makes them work.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hpactl.emulator import Emulator

pytestmark = pytest.mark.timeout(120)

HPACTL = str(Path(sys.executable).parent / "hpactl")


def _web(emu: Emulator) -> None:
    labels = {"app": "web"}
    container = {"name": "app", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
    emu.store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        }
    )
    emu.store.create(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2,
                "maxReplicas": 5,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ],
            },
        }
    )


def _kubeconfig(emu: Emulator, path: Path, how: str) -> Path:
    """The emulator's kubeconfig with the CA given `how`: "data", "file", "none" or
    "insecure" (none, and insecure-skip-tls-verify: true)."""
    doc: dict[str, Any] = copy.deepcopy(emu.kubeconfig())
    cluster = doc["clusters"][0]["cluster"]
    ca = base64.b64decode(cluster.pop("certificate-authority-data"))
    if how == "data":
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    elif how == "file":
        (path.parent / "ca.crt").write_bytes(ca)
        cluster["certificate-authority"] = str(path.parent / "ca.crt")
    elif how == "insecure":
        cluster["insecure-skip-tls-verify"] = True
    path.write_text(yaml.safe_dump(doc))
    return path


async def _hpactl(*args: str, timeout: float = 60) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        HPACTL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"hpactl {args[0]} still running after {timeout}s") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _replicas(emu: Emulator) -> int:
    dep = emu.store.get("apps", "deployments", "default", "web") or {}
    return int(dep["spec"]["replicas"])


def _run_args(kubeconfig: Path, fmt: str) -> list[str]:
    return [
        "run",
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        "--horizontal-pod-autoscaler-sync-period=1s",
        f"--logging-format={fmt}",
        "-v=4",
    ]


def _assert_one_certificate_line(code: int, out: str, err: str) -> None:
    text = out + err
    assert code == 1, text
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if "certificate" in line]
    assert len(lines) == 1, text
    assert "tls: failed to verify certificate: " in lines[0], lines[0]
    assert "certificate-authority" in lines[0], lines[0]


@pytest.mark.parametrize("fmt", ["json", "console"])
async def test_run_without_the_ca_fails_clearly_and_sends_nothing(tmp_path: Path, fmt: str) -> None:
    async with Emulator(auth=True, tls=True) as emu:
        _web(emu)
        kubeconfig = _kubeconfig(emu, tmp_path / "kubeconfig", "none")
        before = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
        code, out, err = await _hpactl(*_run_args(kubeconfig, fmt), timeout=30)
        _assert_one_certificate_line(code, out, err)
        # Never fell back to an unverified connection: nothing was written.
        assert _replicas(emu) == 1
        after = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
        assert after == before


@pytest.mark.parametrize("how", ["insecure", "file"])
async def test_run_works_with_insecure_skip_tls_verify_or_the_ca(tmp_path: Path, how: str) -> None:
    async with Emulator(auth=True, tls=True) as emu:
        _web(emu)
        kubeconfig = _kubeconfig(emu, tmp_path / "kubeconfig", how)
        proc = await asyncio.create_subprocess_exec(
            HPACTL,
            *_run_args(kubeconfig, "json"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            # minReplicas 2 > 1: the first sync scales the Deployment up.
            for _ in range(300):
                if _replicas(emu) == 2 or proc.returncode is not None:
                    break
                await asyncio.sleep(0.1)
            assert _replicas(emu) == 2, f"no scale with a {how} kubeconfig"
        finally:
            if proc.returncode is None:
                proc.terminate()
            await asyncio.wait_for(proc.wait(), 20)


async def test_explain_verifies_the_certificate_as_the_kubeconfig_says(tmp_path: Path) -> None:
    async with Emulator(auth=True, tls=True) as emu:
        _web(emu)
        for how in ("none", "insecure", "data", "file"):
            kubeconfig = _kubeconfig(emu, tmp_path / f"{how}.kubeconfig", how)
            code, out, err = await _hpactl(
                "explain", "default/web", "--server", "", f"--kubeconfig={kubeconfig}"
            )
            if how == "none":
                _assert_one_certificate_line(code, out, err)
                assert err.count("\n") == 1 and out == "", (out, err)
            else:
                assert code == 0, (how, out, err)
                assert out.startswith("default/web"), out
