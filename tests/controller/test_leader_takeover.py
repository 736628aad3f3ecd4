"""The leader SIGKILLed: how long until the standby leads and writes, seen from the
server's side (each `hpactl run` talks through its own recording proxy).

Lease 3 s, renew deadline 2 s, retry period 250 ms (`_fast_lease`): the standby may
take the lease once it has seen the same record for a whole lease duration, so the
takeover is bounded by lease duration + retry period after the last renewal.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import Any

from support.proxy import RecordingProxy

from hpactl.emulator.emulator import Emulator

from .builders import hpa, pod_metrics, workload
from .test_run_process import (
    Proc,
    _args,
    _fast_lease,
    _holder,
    _now,
    _replicas,
    spawn,
    wait_until,
    wait_until_async,
)

__all__ = ["spawn"]  # the fixture, shared with test_run_process

LEASE, RETRY = 3.0, 0.25


async def test_the_standby_leads_and_writes_within_the_lease_after_the_leader_is_killed(
    spawn: Callable[..., Any],
) -> None:
    le = [*_fast_lease("hpactl-kill"), "--horizontal-pod-autoscaler-downscale-stabilization=0s"]
    async with (
        Emulator() as emu,
        RecordingProxy(emu.url) as via_a,
        RecordingProxy(emu.url) as via_b,
    ):
        names = workload(emu, "web", 2, _now())
        emu.metrics.set_pod_metrics(pod_metrics(names, "50m", _now()))  # at the target
        emu.store.create(hpa("web", "web", max_replicas=4))
        a: Proc = await spawn([f"--master={via_a.url}", *_args(emu, *le)[1:]])
        await wait_until(lambda: a.logged("hpactl.leading") is not None, 30, a, "A leads")
        b: Proc = await spawn([f"--master={via_b.url}", *_args(emu, *le)[1:]])
        await wait_until(lambda: b.logged("hpactl.electing") is not None, 30, b, "B elects")

        async def b_ready() -> bool:
            return await b.readyz() == 200

        await wait_until_async(b_ready, 30, b, "B a ready standby (caches synced)")
        await asyncio.sleep(1.0)
        last_renewal = max(w.at for w in via_a.writes(leases=True) if w.is_lease)

        a.proc.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        # The load rises as A dies: B must scale once it leads.
        emu.metrics.set_pod_metrics(pod_metrics(names, "200m", _now()))
        await wait_until(lambda: b.logged("hpactl.leading") is not None, 30, b, "takeover")
        await wait_until(lambda: _replicas(emu) == 4, 30, b, "B scales to 4")
        b_lease = [w for w in via_b.writes(leases=True) if w.is_lease]
        b_other = via_b.writes()
        assert b_lease and b_other
        lease_taken = b_lease[0].at - killed
        first_write = b_other[0].at - killed
        since_renewal = b_lease[0].at - last_renewal
        print(
            f"\n[leader SIGKILL] lease {LEASE:g}s, retry {RETRY:g}s: B took the lease "
            f"{lease_taken:.2f}s after the kill ({since_renewal:.2f}s after A's last "
            f"renewal); B's first write (scale/status/Event) {first_write:.2f}s after "
            f"the kill ({b_other[0].method} {b_other[0].path})"
        )
        assert _holder(emu, "hpactl-kill") == (b.logged("hpactl.leading") or {}).get("identity")
        # Bound: B sees A's last renewal up to one retry period late, waits a whole lease
        # duration from then, and tries again within a retry period; 1 s for loopback,
        # process scheduling and this test's proxy timestamps on a busy CI host (3.43 s
        # measured at loadavg 3 on 2 vCPUs, 0.57 s under the old 0.5 s slack). A takeover
        # that waited the lease plus the renew deadline (5 s) or two leases still fails.
        assert since_renewal <= LEASE + 2 * RETRY + 1.0
        assert lease_taken <= LEASE + 2 * RETRY + 1.0
