"""kubectl against an emulator, for the tests that check what the real client does."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")


async def run_kubectl(kubeconfig: Path, *args: str, timeout: float = 30) -> tuple[int, str, str]:
    """``kubectl --kubeconfig kubeconfig args...`` in the kubeconfig's folder, bounded in
    time: exit code, stdout, stderr. The discovery cache is per kubeconfig, as ports
    are reused between emulators."""
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        f"--cache-dir={kubeconfig.parent / '.kube-cache'}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(kubeconfig.parent),
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
