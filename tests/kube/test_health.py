"""The api-server readiness check, from what a real KubeSession saw of the emulator."""

from __future__ import annotations

import pytest

from hpactl.emulator import Emulator
from hpactl.kube import errors
from hpactl.kube.health import api_server_check
from hpactl.kube.requests import get_json
from hpactl.kube.session import KubeSession


async def test_fails_while_the_api_server_does_not_answer() -> None:
    emu = Emulator()
    await emu.start()
    port = emu.port
    try:
        async with KubeSession(master=emu.url, connect_timeout=2.0) as session:
            now = [0.0]
            check = api_server_check(session, monotonic=lambda: now[0])
            assert check() == (True, "")  # nothing sent yet: start-up is the caches' check
            await get_json(session, "/api/v1/namespaces/default")
            # An error status is still an answer.
            with pytest.raises(errors.NotFound):
                await get_json(session, "/api/v1/namespaces/nope")
            assert check() == (True, "")
            await emu.stop()
            with pytest.raises(errors.TransportError):
                await get_json(session, "/api/v1/namespaces/default")
            assert session.last_success is not None
            now[0] = session.last_success + 42
            ok, reason = check()
            assert not ok
            assert reason.startswith("no answer from the API server for 42s: Get ")
            assert "connect: connection refused" in reason
            # It answers again: ready again.
            emu = Emulator(port=port)
            await emu.start()
            await get_json(session, "/api/v1/namespaces/default")
            assert check() == (True, "")
    finally:
        await emu.stop()


def test_no_answer_ever() -> None:
    class Session:
        last_success: float | None = None
        last_failure: tuple[float, str] | None = (5.0, 'Get "https://x/api": refused')

    ok, reason = api_server_check(Session())()
    assert (ok, reason) == (
        False,
        'no answer from the API server yet: Get "https://x/api": refused',
    )
