"""`hpactl run` as a process: /readyz tells the truth when the API server goes away,
while /healthz (liveness) stays up; it recovers when the API server is back."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from hpactl.emulator import Emulator

from .support import HpactlProcess, hpactl_argv, poll_async, run_flags, seed_cluster

pytestmark = pytest.mark.timeout(120)


async def _get(url: str) -> tuple[int, str]:
    try:
        async with aiohttp.ClientSession() as http, http.get(url) as resp:
            return resp.status, await resp.text()
    except aiohttp.ClientError as exc:
        return 0, str(exc)


async def test_readyz_fails_while_the_api_server_is_unreachable(tmp_path: Path) -> None:
    emu = Emulator(bookmark_interval=0.5)
    await emu.start()
    port = emu.port
    try:
        seed_cluster(emu)
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        argv = hpactl_argv() + run_flags(kubeconfig, leader_elect=False)
        async with HpactlProcess(argv) as proc:
            serving = await proc.wait_for_record("hpactl.serving", 30)
            health = f"http://127.0.0.1:{serving['health_port']}"

            async def ready() -> int:
                return (await _get(f"{health}/readyz"))[0]

            assert await poll_async(ready, 200, 30), proc.output()
            code, text = await _get(f"{health}/readyz?verbose")
            assert code == 200
            for check in ("api-server", "informer-caches", "informers", "leader-election"):
                assert f"[+]{check} ok" in text, text

            await emu.stop()
            # The watches break, the relists get no answer: not ready, and why.
            assert await poll_async(ready, 500, 30), proc.output()
            code, text = await _get(f"{health}/readyz")
            assert "[-]api-server failed: no answer from the API server" in text, text
            assert "connection refused" in text
            assert (await _get(f"{health}/readyz/api-server"))[0] == 500
            # Liveness is not readiness: the process still answers, no restart wanted.
            assert await _get(f"{health}/healthz") == (200, "ok\n")

            emu = Emulator(port=port, bookmark_interval=0.5)
            await emu.start()
            seed_cluster(emu)
            assert await poll_async(ready, 200, 60), proc.output()
            assert await proc.terminate() == 0, proc.output()
    finally:
        await emu.stop()
