"""`hpactl run --shards N`: replicas as processes share the shards of one emulator.

Each replica talks through its own recording proxy, so the test sees, from the
server's side, which replica wrote what and when.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.proxy import RecordingProxy

from hpactl.core.sharding import shard_of
from hpactl.emulator.emulator import Emulator

from .builders import hpa, pod_metrics, workload
from .test_run_process import Proc, _args, _fast_lease, _now, spawn, wait_until

__all__ = ["spawn"]  # the fixture, shared with test_run_process

SHARDS = 4
NAMESPACES = [f"team-{i}" for i in range(8)]


def _shard_holders(emu: Emulator, name: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for i in range(SHARDS):
        lease = emu.store.get("coordination.k8s.io", "leases", "kube-system", f"{name}-shard-{i}")
        holder = str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
        if holder:
            out[i] = holder
    return out


async def test_two_replicas_share_the_shards_and_scale_every_namespace(
    spawn: Callable[..., Any],
) -> None:
    le = [*_fast_lease("hpactl-sh"), f"--shards={SHARDS}"]
    async with (
        Emulator() as emu,
        RecordingProxy(emu.url) as via_a,
        RecordingProxy(emu.url) as via_b,
    ):
        pods: dict[str, list[str]] = {}
        for ns in NAMESPACES:
            emu.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            pods[ns] = workload(emu, "web", 2, _now(), ns=ns)
            emu.store.create(hpa("web", "web", max_replicas=4, ns=ns))

        def load(cpu: str) -> None:  # one call sets every pod's metrics
            emu.metrics.set_pod_metrics(
                [m for ns in NAMESPACES for m in pod_metrics(pods[ns], cpu, _now(), ns=ns)]
            )

        load("50m")
        a: Proc = await spawn([f"--master={via_a.url}", *_args(emu, *le)[1:]])
        await wait_until(
            lambda: len(_shard_holders(emu, "hpactl-sh")) == SHARDS, 30, a, "A holds all"
        )
        b: Proc = await spawn([f"--master={via_b.url}", *_args(emu, *le)[1:]])

        def split() -> bool:
            holders = _shard_holders(emu, "hpactl-sh")
            return len(holders) == SHARDS and sorted(
                list(holders.values()).count(h) for h in set(holders.values())
            ) == [2, 2]

        await wait_until(split, 30, b, "the shards split 2/2")
        # Load rises everywhere: every namespace's HPA is scaled by the replica holding
        # its shard, and by no other.
        load("200m")

        def scaled() -> bool:
            for ns in NAMESPACES:
                d = emu.store.get("apps", "deployments", ns, "web") or {}
                if (d.get("spec") or {}).get("replicas") != 4:
                    return False
            return True

        await wait_until(scaled, 30, b, "every namespace scaled to 4")
        holders = _shard_holders(emu, "hpactl-sh")
        ident_a = str((a.logged("hpactl.sharding") or {}).get("identity"))
        ident_b = str((b.logged("hpactl.sharding") or {}).get("identity"))
        for via, ident in ((via_a, ident_a), (via_b, ident_b)):
            for w in via.writes():
                if "/deployments/web/scale" not in w.path:
                    continue
                ns = w.path.split("/namespaces/")[1].split("/")[0]
                assert holders[shard_of(ns, SHARDS)] == ident, (w.path, ident)
        assert await a.readyz() == 200 and await b.readyz() == 200
        assert await a.stop() == 0
        assert await b.stop() == 0
