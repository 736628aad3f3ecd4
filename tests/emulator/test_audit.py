"""The emulator's write audit (/emulator/audit) and the shard-ownership check over it."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from hpactl.emulator import Emulator
from hpactl.emulator.audit import AuditLog, check_shard_writes, identity_of

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
NAMESPACES = ("team-a", "team-b")
SHARD = {"team-a": 0, "team-b": 1}  # the test's own shard function


def _hpa(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"namespace": ns, "name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
        },
    }


def _deployment(ns: str) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"namespace": ns, "name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


class Replica:
    """Raw HTTP as one controller replica: its identity in the User-Agent."""

    def __init__(self, emu: Emulator, identity: str) -> None:
        self.base = emu.url
        self.identity = identity
        self.http = aiohttp.ClientSession(
            headers={"User-Agent": f"hpactl/0.0.0 ({identity})", "Content-Type": "application/json"}
        )

    async def close(self) -> None:
        await self.http.close()

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body)
        async with self.http.request(method, self.base + path, data=data) as r:
            return r.status, await r.json()

    async def take(self, shard: int) -> int:
        """Create or overwrite the shard's lease with this replica as holder."""
        name = f"hpactl-shard-{shard}"
        status, cur = await self.call("GET", f"{LEASES}/{name}")
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"namespace": "kube-system", "name": name},
            "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": 15},
        }
        if status == 404:
            status, _ = await self.call("POST", LEASES, lease)
            return status
        lease["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        status, _ = await self.call("PUT", f"{LEASES}/{name}", lease)
        return status

    async def write_status(self, ns: str) -> int:
        path = f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web"
        _, cur = await self.call("GET", path)
        cur["status"] = {"currentReplicas": 1, "desiredReplicas": 2}
        status, _ = await self.call("PUT", path + "/status", cur)
        return status

    async def scale(self, ns: str, replicas: int) -> int:
        path = f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale"
        _, cur = await self.call("GET", path)
        cur["spec"]["replicas"] = replicas
        status, _ = await self.call("PUT", path, cur)
        return status

    async def event(self, ns: str, kind: str) -> int:
        ev = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": ns, "generateName": "web."},
            "involvedObject": {"kind": kind, "namespace": ns, "name": "web"},
            "reason": "SuccessfulRescale",
            "message": "New size: 2",
            "type": "Normal",
        }
        status, _ = await self.call("POST", f"/api/v1/namespaces/{ns}/events", ev)
        return status


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(audit=True, namespaces=["default", "kube-system", *NAMESPACES]) as emu:
        for ns in NAMESPACES:
            emu.store.create(_deployment(ns))
            emu.store.create(_hpa(ns))
        yield emu


async def _audit(emu: Emulator, since: int = 0) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{emu.url}/emulator/audit", params={"since": str(since)}) as r,
    ):
        assert r.status == 200
        body: dict[str, Any] = await r.json()
        return body


def _check(audit: dict[str, Any]) -> Any:
    return check_shard_writes(
        audit["items"],
        lease_name="hpactl",
        lease_namespace="kube-system",
        shard_for=SHARD.__getitem__,
        dropped=audit["dropped"],
    )


async def test_records_each_mutating_request_with_its_commits(emu: Emulator) -> None:
    a = Replica(emu, "node-1_aaaa")
    try:
        assert await a.take(0) == 201
        assert await a.write_status("team-a") == 200
        before = (await _audit(emu))["last"]
        # a rejected write: stale resourceVersion
        path = "/apis/autoscaling/v2/namespaces/team-a/horizontalpodautoscalers/web/status"
        stale = {**_hpa("team-a"), "status": {"desiredReplicas": 3}}
        stale["metadata"] = {**stale["metadata"], "resourceVersion": "1"}
        assert (await a.call("PUT", path, stale))[0] == 409
    finally:
        await a.close()
    audit = await _audit(emu)
    items = audit["items"]
    # reads (the GETs before each write) are not recorded
    assert [(r["method"], r["status"]) for r in items] == [
        ("POST", 201),
        ("PUT", 200),
        ("PUT", 409),
    ]
    lease, status, rejected = items
    assert lease["commits"][0]["holder"] == "node-1_aaaa"
    assert lease["commits"][0]["name"] == "hpactl-shard-0"
    assert status["path"].endswith("/horizontalpodautoscalers/web/status")
    assert status["user_agent"] == "hpactl/0.0.0 (node-1_aaaa)"
    assert status["commits"][0]["rv"] > lease["commits"][0]["rv"]
    assert rejected["commits"] == []
    for r in items:
        assert r["received"] <= r["answered"] and r["received_wall"] <= r["answered_wall"]
    assert [r["seq"] for r in (await _audit(emu, since=before))["items"]] == [before + 1]


async def test_in_process_writes_and_reads_are_not_recorded(emu: Emulator) -> None:
    emu.store.create(_hpa("default"))
    async with aiohttp.ClientSession() as http, http.get(f"{emu.url}/api/v1/pods") as r:
        assert r.status == 200
    assert (await _audit(emu))["items"] == []


async def test_the_audit_path_is_read_only(emu: Emulator) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.delete(f"{emu.url}/emulator/audit") as r,
    ):
        assert r.status == 405


async def test_without_audit_the_path_is_not_served() -> None:
    async with (
        Emulator() as emu,
        aiohttp.ClientSession() as http,
        http.get(f"{emu.url}/emulator/audit") as r,
    ):
        assert r.status == 404
        assert emu.audit is None


def test_the_log_is_bounded_and_counts_what_it_dropped() -> None:
    log = AuditLog(size=2)
    for _ in range(5):
        log._append({"seq": 0, "commits": []})
    body = log.as_json()
    assert body["dropped"] == 3 and [r["seq"] for r in body["items"]] == [4, 5]
    result = check_shard_writes(
        body["items"],
        lease_name="hpactl",
        lease_namespace="kube-system",
        shard_for=lambda ns: 0,
        dropped=body["dropped"],
    )
    assert not result.proven


def test_identity_comes_from_the_user_agent() -> None:
    assert identity_of("hpactl/1.2.3 (node-1_a1b2)") == "node-1_a1b2"
    assert identity_of("kubectl/v1.32.0 (linux/amd64) kubernetes/abc") == ""


async def test_writes_by_each_shards_holder_pass(emu: Emulator) -> None:
    a, b = Replica(emu, "a"), Replica(emu, "b")
    try:
        assert await a.take(0) == 201
        assert await b.take(1) == 201
        assert await a.write_status("team-a") == 200
        assert await a.scale("team-a", 2) == 200
        assert await a.event("team-a", "HorizontalPodAutoscaler") == 201
        assert await b.write_status("team-b") == 200
        # handover of shard 0 to b: b's writes from then on are its own
        assert await b.take(0) == 200
        assert await b.scale("team-a", 3) == 200
    finally:
        await a.close()
        await b.close()
    result = _check(await _audit(emu))
    assert result.violations == []
    assert result.proven
    assert result.checked == 5 and result.by_writer == {"a": 3, "b": 2}
    assert result.transitions == 3


async def test_a_write_after_the_lease_moved_is_a_violation(emu: Emulator) -> None:
    a, b = Replica(emu, "a"), Replica(emu, "b")
    try:
        assert await a.take(0) == 201
        assert await a.write_status("team-a") == 200
        assert await b.take(0) == 200
        # a, paused past its lease, wakes up and writes for the shard it lost
        assert await a.scale("team-a", 4) == 200
        # b writes for a shard nobody holds
        assert await b.write_status("team-b") == 200
        # an Event about something other than an HPA is not a shard write
        assert await a.event("team-b", "Lease") == 201
    finally:
        await a.close()
        await b.close()
    result = _check(await _audit(emu))
    assert not result.proven
    got = [(v.shard, v.writer, v.holder) for v in result.violations]
    assert got == [(0, "a", "b"), (1, "b", "")]
    assert result.violations[0].what == "PUT /apis/apps/v1/namespaces/team-a/deployments/web/scale"


async def test_history_configmaps_count_for_their_shard(emu: Emulator) -> None:
    a, b = Replica(emu, "a"), Replica(emu, "b")
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "kube-system", "name": "hpactl-history-1"},
        "data": {"h": "{}"},
    }
    try:
        assert await a.take(1) == 201
        assert (await a.call("POST", "/api/v1/namespaces/kube-system/configmaps", cm))[0] == 201
        assert await b.take(1) == 200
        # a, after losing the shard, overwrites the new holder's history
        path = "/api/v1/namespaces/kube-system/configmaps/hpactl-history-1"
        _, cur = await a.call("GET", path)
        cur["data"] = {"h": '{"stale": true}'}
        assert (await a.call("PUT", path, cur))[0] == 200
    finally:
        await a.close()
        await b.close()
    result = _check(await _audit(emu))
    assert [(v.shard, v.writer, v.holder) for v in result.violations] == [(1, "a", "b")]
    assert result.checked == 2


async def test_standalone_emulator_with_audit_serves_the_log() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hpactl",
        "emulator",
        "--audit",
        "10",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        first = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        url = first.split()[3]
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{url}/api/v1/namespaces", json=ns) as r:
                assert r.status == 201
            async with http.get(f"{url}/emulator/audit") as r:
                body = await r.json()
        assert body["size"] == 10
        assert [(i["method"], i["path"], i["status"]) for i in body["items"]] == [
            ("POST", "/api/v1/namespaces", 201)
        ]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
