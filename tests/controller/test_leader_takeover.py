"""The leader SIGKILLed: how long until the standby leads and writes (each `hpactl
run` talks through its own recording proxy, so its writes are attributed).

Lease 3 s, renew deadline 2 s, retry period 250 ms (`_fast_lease`): the standby may
take the lease once it has seen the same record for a whole lease duration. It polls
every retry period plus up to 1.2 times that in jitter (client-go's JitterUntil), so it
sees the last renewal up to one jittered retry late and takes the lease up to one
jittered retry after that record expired: lease + 2 x 0.55 s after the last renewal.

The takeover is timed by the processes' own clocks: the last ``renewTime`` the killed
leader stamped on the Lease and the ``acquireTime`` the standby stamped when it took
it (MicroTime, both processes on this host's wall clock), every version of the Lease
collected from the emulator's store. Times taken by this test's loop (a proxy's
arrival stamps) move with how busy that loop is, and a renewal still in flight at
the kill is stamped after the kill.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import Any

from support.proxy import RecordingProxy

from hpactl.emulator.emulator import Emulator
from hpactl.kube.leader import JITTER_FACTOR
from hpactl.model.times import parse_micro_time

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
#: The standby's longest wait between two polls of the Lease.
POLL = RETRY * (1 + JITTER_FACTOR)
#: Beyond the mechanism: the renewal's and the polls' round trips and the processes'
#: loop latency on a busy 2-vCPU host. A takeover that waited the lease plus the renew
#: deadline (5 s, then a poll) or two leases is later than the bound still.
SLACK = 0.6


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
        # Every version of the Lease from now on, as stored (in commit order).
        leases = emu.store.subscribe(("coordination.k8s.io", "leases"), "kube-system")
        await asyncio.sleep(1.0)  # A renews a few times more

        a.proc.send_signal(signal.SIGKILL)
        killed, killed_mono = time.time(), time.monotonic()
        # The load rises as A dies: B must scale once it leads.
        emu.metrics.set_pod_metrics(pod_metrics(names, "200m", _now()))
        await wait_until(lambda: b.logged("hpactl.leading") is not None, 30, b, "takeover")
        await wait_until(lambda: _replicas(emu) == 4, 30, b, "B scales to 4")
        b_other = via_b.writes()
        assert b_other
        id_a = str((a.logged("hpactl.leading") or {}).get("identity"))
        id_b = str((b.logged("hpactl.leading") or {}).get("identity"))
        assert _holder(emu, "hpactl-kill") == id_b
        specs = []
        while not leases.queue.empty():
            ev = leases.queue.get_nowait()
            if ev is not None and ev.name == "hpactl-kill":
                specs.append(ev.entry.obj.get("spec") or {})
        emu.store.unsubscribe(leases)
        renewals = [parse_micro_time(s["renewTime"]) for s in specs if s["holderIdentity"] == id_a]
        taken = [parse_micro_time(s["acquireTime"]) for s in specs if s["holderIdentity"] == id_b]
        assert renewals and taken, specs
        since_renewal = (taken[0] - max(renewals)).total_seconds()
        lease_taken = taken[0].timestamp() - killed
        first_write = b_other[0].at - killed_mono
        print(
            f"\n[leader SIGKILL] lease {LEASE:g}s, retry {RETRY:g}s: B took the lease "
            f"{lease_taken:.2f}s after the kill ({since_renewal:.2f}s after A's last "
            f"renewal); B's first write (scale/status/Event) {first_write:.2f}s after "
            f"the kill ({b_other[0].method} {b_other[0].path})"
        )
        # B saw A's last renewal up to a poll late, held it valid a whole lease from
        # then, and took it at its first poll after that (A stamped every renewal
        # before the kill, so the time from the kill is shorter still).
        assert since_renewal <= LEASE + 2 * POLL + SLACK, since_renewal
        assert lease_taken <= LEASE + 2 * POLL + SLACK, lease_taken
