"""Leader election on a coordination.k8s.io/v1 Lease (client-go ``leaderelection``).

``LeaseElector.run()`` loops: try to acquire the Lease every ``retry_period``; once
held, renew it every ``retry_period``; if renewing keeps failing for
``renew_deadline`` the lease is lost. ``on_started_leading`` / ``on_stopped_leading``
are called synchronously at the transitions (the controller starts its supervisor,
or stops it at once). ``release()`` gives the lease up on a clean shutdown
(``ReleaseOnCancel``: empty holder, 1 s duration), so a standby takes over without
waiting for expiry.

Expiry is judged as client-go does: by the local clock since this process last saw
the record change, never by comparing another host's ``renewTime`` with ours.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from hpactl.clock import Clock
from hpactl.kube import requests as kreq
from hpactl.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from hpactl.kube.paths import resource_path
from hpactl.kube.session import KubeSession
from hpactl.model.times import format_micro_time

__all__ = ["LeaseElector"]

log = structlog.get_logger("hpactl.leader")


class LeaseElector:
    def __init__(
        self,
        session: KubeSession,
        clock: Clock,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        timeout: float = 10.0,
    ) -> None:
        self._s = session
        self._clock = clock
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._duration = lease_duration
        self._renew_deadline = renew_deadline
        self._retry = retry_period
        self._started = on_started_leading
        self._stopped = on_stopped_leading
        self._timeout = min(timeout, renew_deadline)
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._raw: dict[str, Any] | None = None
        self.is_leader = False
        self.state = "starting"  # "leader" / "standby" once the first attempt finished

    @property
    def _path(self) -> str:
        return resource_path("coordination.k8s.io", "v1", "leases", namespace=self.namespace)

    def _obj_path(self) -> str:
        return resource_path(
            "coordination.k8s.io", "v1", "leases", namespace=self.namespace, name=self.name
        )

    def _spec(self, acquire: bool, transitions: int) -> dict[str, Any]:
        now = format_micro_time(self._clock.now())
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self._duration)),
            "renewTime": now,
            "leaseTransitions": transitions,
        }
        if acquire:
            spec["acquireTime"] = now
        elif self._raw is not None:
            old = self._raw.get("spec") or {}
            if old.get("acquireTime"):
                spec["acquireTime"] = old["acquireTime"]
        return spec

    async def try_acquire_or_renew(self) -> bool:
        """One ``tryAcquireOrRenew``: True when this process holds the lease afterwards."""
        try:
            raw = await kreq.get_json(self._s, self._obj_path(), timeout=self._timeout)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(True, 0),
            }
            try:
                self._raw = await kreq.create_json(self._s, self._path, body, timeout=self._timeout)
            except (AlreadyExists, Conflict):
                return False
            self._observe(self._raw)
            return True
        spec = raw.get("spec") or {}
        self._observe(raw)
        holder = spec.get("holderIdentity") or ""
        now = self._clock.monotonic()
        duration = float(spec.get("leaseDurationSeconds") or self._duration)
        if holder and holder != self.identity and self._observed_at + duration > now:
            return False  # held by another, not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        acquire = holder != self.identity
        if acquire:
            transitions += 1
        body = dict(raw)
        body["spec"] = self._spec(acquire, transitions)
        try:
            self._raw = await kreq.put_json(self._s, self._obj_path(), body, timeout=self._timeout)
        except Conflict:
            return False
        self._observe(self._raw)
        return True

    def _observe(self, raw: dict[str, Any]) -> None:
        spec = raw.get("spec") or {}
        record = (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("leaseTransitions"),
            spec.get("leaseDurationSeconds"),
        )
        if record != self._observed:
            self._observed = record
            self._observed_at = self._clock.monotonic()
        self._raw = raw

    async def _attempt(self) -> bool:
        try:
            return await self.try_acquire_or_renew()
        except KubeError as exc:
            log.warning("leader.error", lease=f"{self.namespace}/{self.name}", error=str(exc))
            return False

    async def run(self) -> None:
        """Acquire, lead, and re-acquire after a loss; until cancelled."""
        while True:
            while not await self._attempt():
                self.state = "standby"
                await self._clock.sleep(self._retry)
            self.is_leader = True
            self.state = "leader"
            log.info(
                "leader.acquired", lease=f"{self.namespace}/{self.name}", identity=self.identity
            )
            self._started()
            try:
                await self._renew_loop()
            finally:
                if self.is_leader:
                    self.is_leader = False
                    self._stopped()
            self.state = "standby"
            log.warning(
                "leader.lost", lease=f"{self.namespace}/{self.name}", identity=self.identity
            )

    async def _renew_loop(self) -> None:
        last_ok = self._clock.monotonic()
        while True:
            await self._clock.sleep(self._retry)
            try:
                async with asyncio.timeout(self._renew_deadline):
                    ok = await self._attempt()
            except TimeoutError:
                ok = False
            now = self._clock.monotonic()
            if ok:
                last_ok = now
            elif now - last_ok >= self._renew_deadline or self._held_by_other():
                self.is_leader = False
                self._stopped()
                return

    def _held_by_other(self) -> bool:
        if self._raw is None:
            return False
        holder = (self._raw.get("spec") or {}).get("holderIdentity") or ""
        return bool(holder) and holder != self.identity

    async def release(self) -> None:
        """Give the lease up if held (clean shutdown)."""
        if self._raw is None or self._held_by_other():
            return
        try:
            raw = await kreq.get_json(self._s, self._obj_path(), timeout=self._timeout)
            spec = raw.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            body = dict(raw)
            body["spec"] = {
                **spec,
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": format_micro_time(self._clock.now()),
            }
            body["spec"].pop("acquireTime", None)
            await kreq.put_json(self._s, self._obj_path(), body, timeout=self._timeout)
            log.info("leader.released", lease=f"{self.namespace}/{self.name}")
        except KubeError as exc:
            log.warning("leader.release_failed", error=str(exc))
        finally:
            self.is_leader = False
