"""`hpactl emulator` standalone: loads manifests, writes a kubeconfig, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import aiohttp

from .test_kubectl import APP


async def test_standalone_serves_manifests_until_sigterm(tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(APP)
    kc = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hpactl",
        "emulator",
        "--port",
        "0",
        "--kubeconfig-out",
        str(kc),
        str(manifest),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        first = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert first.startswith("hpactl emulator serving http://127.0.0.1:")
        assert "(2 objects loaded)" in first
        url = first.split()[3]
        await asyncio.wait_for(proc.stdout.readline(), 10)  # "kubeconfig written to"
        assert url in kc.read_text()
        async with (
            aiohttp.ClientSession() as s,
            s.get(
                url + "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web"
            ) as resp,
        ):
            assert resp.status == 200
            assert json.loads(await resp.text())["spec"]["maxReplicas"] == 5
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_bad_fault_spec_is_a_usage_error(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hpactl",
        "emulator",
        "--fault",
        "bogus",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1
    assert b"fault spec" in err
