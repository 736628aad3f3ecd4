"""The metric fallback's failure streak across a leader hand-off, with and without
``HPAHistoryPersistence`` (the streaks are part of the persisted history).

Two emulators side by side, each with a leader and a standby ``hpactl run``
(``HPAExternalMetricFallback`` on in both); the HPA's only metric (cpu) never has
samples, and its fallback (3 replicas after 4 s) is active before the leader is
stopped (SIGTERM: last flush, lease released). With persistence the new leader
continues the streak: the condition keeps the first failure's time and no second
Activated event comes. Without it the streak starts over at the takeover: the
fallback is pending again and activates a second time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

from hpactl.emulator.emulator import Emulator

from .builders import events, hpa, workload
from .test_run_process import Proc, _args, _fast_lease, _now, _replicas, spawn, wait_until

__all__ = ["spawn"]  # the fixture, shared with test_run_process

FALLBACK = {"cpu": {"replicas": 3, "failureDuration": "4s"}}
FEATURES = "HPAExternalMetricFallback=true"
LOCK = "hpactl-fbf"


def _condition(emu: Emulator) -> dict[str, Any] | None:
    obj = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
    assert obj is not None
    conds = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conds if c["type"] == "ExternalMetricFallbackActive"), None)


async def _logged(p: Proc, event: str) -> None:
    await wait_until(lambda: p.logged(event) is not None, 30, p, event)


def _activations(emu: Emulator) -> int:
    return sum(
        int(e.get("count") or 1) for e in events(emu, reason="ExternalMetricFallbackActivated")
    )


async def test_the_failure_streak_survives_a_hand_off_only_with_persisted_history(
    spawn: Callable[..., Any],
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        emus: dict[str, Emulator] = {}
        procs: dict[str, list[Proc]] = {}
        for name, gates in (("on", f"HPAHistoryPersistence=true,{FEATURES}"), ("off", FEATURES)):
            emu = await stack.enter_async_context(Emulator())
            workload(emu, "web", 2, _now())  # no pod metrics at all: cpu fails
            obj = hpa("web", "web", min_replicas=1, max_replicas=5)
            obj["metadata"]["annotations"] = {"hpactl.dev/metric-fallback": json.dumps(FALLBACK)}
            emu.store.create(obj)
            emus[name] = emu
            flags = [*_fast_lease(LOCK), f"--feature-gates={gates}"]
            leader = await spawn(_args(emu, *flags))
            await _logged(leader, "hpactl.leading")
            standby = await spawn(_args(emu, *flags))
            await _logged(standby, "hpactl.electing")
            procs[name] = [leader, standby]

        # Both leaders fall back: 3 replicas, one activation, the condition True.
        await wait_until(
            lambda: all(_replicas(e) == 3 and _activations(e) == 1 for e in emus.values()), 30
        )
        before = {n: _condition(e) for n, e in emus.items()}
        for c in before.values():
            assert c is not None and (c["status"], c["reason"]) == ("True", "FallbackActive")
            assert "failing since" in c["message"]

        for name in emus:
            assert await procs[name][0].stop() == 0
        for name in emus:
            await _logged(procs[name][1], "hpactl.leading")
        # The takeover as the new leader logged it (its wall clock, ms since the epoch):
        # a test loop slow to read the log cannot shift it later.
        off_leading = procs["off"][1].logged("hpactl.leading")
        assert off_leading is not None
        took_over = off_leading["ts"] / 1000

        # Without persisted history the streak restarts: pending, then a second activation.
        await wait_until(lambda: _activations(emus["off"]) == 2, 30, procs["off"][1])
        # It waited the failureDuration (4 s) again from the takeover; noticed late, the
        # elapsed time only grows, so the bound cannot be missed by a loaded machine.
        assert time.time() - took_over >= 3.0
        # With it: the same streak, still active, never announced again.
        await asyncio.sleep(1.5)  # a sync more
        assert _activations(emus["on"]) == 1
        after = _condition(emus["on"])
        assert after is not None and after["message"] == before["on"]["message"]  # type: ignore[index]
        assert after["status"] == "True"
        leading = procs["on"][1].logged("hpactl.leading")
        assert leading is not None and leading.get("histories") == 1
        off_after = _condition(emus["off"])
        assert off_after is not None and off_after["message"] != before["off"]["message"]  # type: ignore[index]
        for e in emus.values():
            assert _replicas(e) == 3
        for name in emus:
            assert await procs[name][1].stop() == 0
