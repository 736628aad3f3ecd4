"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's LeaderElector does it.

Own implementation over raw requests: kubernetes_asyncio's elector times with the wall
clock, never releases, and does not notice a crash of the leader's work.

``LeaderElector(session, *, namespace, name, identity=None, lease_duration=15.0,
renew_deadline=10.0, retry_period=2.0, clock=RealClock(), on_started_leading=None,
on_stopped_leading=None, on_new_leader=None, release_on_cancel=True,
request_timeout=None, labels=None)``

``await elector.run()``
    Acquire (retrying every ``retry_period`` plus up to 1.2x jitter), then call
    ``on_started_leading()``; if it returns an awaitable it runs as a task (the leader's
    work), cancelled at once when leadership ends. Renew every ``retry_period``; when no
    renew succeeded for ``renew_deadline`` leadership is lost: the work task is
    cancelled, ``on_stopped_leading()`` is called and ``run`` returns. If the work task
    raises, leadership is released and ``run`` re-raises. If ``run`` is cancelled
    while leading, the lease is released first (client-go ``ReleaseOnCancel``).
    ``on_stopped_leading`` is called only if this elector was leading (client-go calls
    it unconditionally when Run ends).
``await elector.release() -> bool``
    If holding the lease: write holderIdentity "", leaseDurationSeconds 1,
    acquireTime = renewTime = now, leaseTransitions kept. On a conflict (a renewal
    cancelled in flight that landed) it reads the Lease and retries once if still ours.
``elector.is_leader`` / ``elector.leader_identity`` / ``elector.identity``
``elector.leading``: an ``asyncio.Event`` set while leading.
``elector.transitions``: the observed Lease's ``leaseTransitions`` (while leading: the
    fencing epoch of this tenure; every change of holder increments it).
``elector.observe(lease, observed_at)``
    Seed the observation with a Lease read elsewhere (a LIST) and the local monotonic
    time its content was last seen to change, so an elector started late does not wait
    a whole ``leaseDurationSeconds`` again for a lease already seen expiring.
``elector.holds_lease() -> bool``
    True only while leading and less than ``renew_deadline`` has passed since the
    last successful acquire or renew *was sent*. Other candidates wait
    ``leaseDurationSeconds`` (> renew_deadline) from when they saw that renewal, so
    while this is True no other replica can have taken over. A process that was
    paused (SIGSTOP, a long GC, a starved node) finds it False the moment it runs
    again: ``hpactl run`` fences every write with it.

Unlike client-go, a renew attempt that finds the lease held by another identity
ends leadership at once instead of retrying until ``renew_deadline``: that lease was
taken over, and nothing this replica does from then on may reach the API server.

A lease held by another identity counts as valid until ``leaseDurationSeconds`` after
this elector last *observed it change* (local monotonic time, not the lease's
renewTime), exactly as client-go judges it. ``default_identity()`` is
``<hostname>_<uuid4>``. ``labels`` go on the Lease when this elector creates it.
``leaseDurationSeconds`` is ``lease_duration`` rounded up: rounding down would let
others take the lease before ``renew_deadline`` has passed on the holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from hpactl.kube.errors import Conflict, KubeError, NotFound
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import create_json, get_json, put_json
from hpactl.kube.session import KubeSession
from hpactl.model.times import format_micro_time

__all__ = ["JITTER_FACTOR", "LeaderElector", "default_identity"]

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2


class _ClockLike(Protocol):
    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _default_clock() -> _ClockLike:
    from hpactl.clock import RealClock

    return RealClock()


class LeaderElector:
    """See the module docstring."""

    def __init__(
        self,
        session: KubeSession,
        *,
        namespace: str,
        name: str,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: _ClockLike | None = None,
        on_started_leading: Callable[[], Awaitable[None] | None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        release_on_cancel: bool = True,
        request_timeout: float | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if retry_period < 1e-9:
            raise ValueError("retryPeriod must be greater than zero")
        self._s = session
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock or _default_clock()
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._release_on_cancel = release_on_cancel
        self._timeout = request_timeout
        self._labels = dict(labels or {})
        self._observed: dict[str, Any] | None = None
        self._observed_rv = ""
        self._lease: dict[str, Any] | None = None  # the last Lease read or written
        self._observed_time = 0.0
        self._reported_leader = ""
        self._renewed_at: float | None = None  # monotonic send time of the last success
        self.leading = asyncio.Event()

    # -- state ---------------------------------------------------------------------
    @property
    def path(self) -> str:
        return resource_path(
            "coordination.k8s.io", "v1", "leases", namespace=self.namespace, name=self.name
        )

    @property
    def leader_identity(self) -> str:
        return str((self._observed or {}).get("holderIdentity") or "")

    @property
    def is_leader(self) -> bool:
        return self.leader_identity == self.identity

    @property
    def transitions(self) -> int:
        return int((self._observed or {}).get("leaseTransitions") or 0)

    def observe(self, lease: Mapping[str, Any], observed_at: float) -> None:
        """See the module docstring: seed from a Lease seen at ``observed_at``."""
        self._lease = dict(lease)
        self._observed = dict(lease.get("spec") or {})
        self._observed_rv = _rv(lease)
        self._observed_time = observed_at

    def holds_lease(self) -> bool:
        """See the module docstring: may this replica write right now?"""
        renewed = self._renewed_at
        return (
            self.leading.is_set()
            and self.is_leader
            and renewed is not None
            and self._clock.monotonic() < renewed + self.renew_deadline
        )

    def _held_by_another(self) -> bool:
        holder = self.leader_identity
        return bool(holder) and holder != self.identity and self._lease_valid()

    def _req_timeout(self) -> float:
        t = (
            self.renew_deadline
            if self._timeout is None
            else min(self._timeout, self.renew_deadline)
        )
        return max(0.001, t)

    def _observe(self, spec: Mapping[str, Any], rv: str) -> None:
        spec_d = dict(spec)
        if spec_d != self._observed:
            self._observed = spec_d
            self._observed_time = self._clock.monotonic()
        self._observed_rv = rv
        leader = str(spec_d.get("holderIdentity") or "")
        if leader != self._reported_leader:
            self._reported_leader = leader
            if self._on_new_leader is not None and leader:
                with contextlib.suppress(Exception):
                    self._on_new_leader(leader)

    # -- one attempt (client-go tryAcquireOrRenew) -----------------------------------------
    async def try_acquire_or_renew(self) -> bool:
        sent = self._clock.monotonic()
        if await self._try_acquire_or_renew():
            self._renewed_at = sent
            return True
        return False

    async def _try_acquire_or_renew(self) -> bool:
        now = format_micro_time(self._clock.now())
        desired: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        t = self._req_timeout()
        # 1. Fast path: the leader updates optimistically from the Lease it last saw.
        if self._lease is not None and self.is_leader and self._lease_valid():
            old = self._observed or {}
            fast = dict(desired)
            fast["acquireTime"] = old.get("acquireTime") or now
            fast["leaseTransitions"] = int(old.get("leaseTransitions") or 0)
            body = dict(self._lease)
            body["spec"] = fast
            try:
                updated = await put_json(self._s, self.path, body, timeout=t)
            except KubeError as exc:
                log.info("failed to update lock optimistically: %s, falling back to slow path", exc)
            else:
                self._lease = updated
                self._observe(updated.get("spec") or fast, _rv(updated))
                return True
        # 2. Slow path: read the Lease, then acquire or renew.
        try:
            lease = await get_json(self._s, self.path, timeout=t)
        except NotFound:
            meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
            if self._labels:
                meta["labels"] = dict(self._labels)
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": meta,
                "spec": desired,
            }
            try:
                created = await create_json(
                    self._s,
                    resource_path("coordination.k8s.io", "v1", "leases", namespace=self.namespace),
                    body,
                    timeout=t,
                )
            except KubeError as exc:
                log.error("error initially creating lease lock: %s", exc)
                return False
            self._lease = created
            self._observe(created.get("spec") or desired, _rv(created))
            return True
        except KubeError as exc:
            log.error("error retrieving resource lock %s/%s: %s", self.namespace, self.name, exc)
            return False

        old = lease.get("spec") or {}
        self._lease = lease
        self._observe(old, _rv(lease))
        holder = str(old.get("holderIdentity") or "")
        duration = float(old.get("leaseDurationSeconds") or 0)
        if (
            holder
            and holder != self.identity
            and self._observed_time + duration > self._clock.monotonic()
        ):
            return False  # someone else holds a valid lease
        if holder == self.identity:
            desired["acquireTime"] = old.get("acquireTime") or now
            desired["leaseTransitions"] = int(old.get("leaseTransitions") or 0)
        else:
            desired["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        body = dict(lease)
        body["spec"] = desired
        try:
            updated = await put_json(self._s, self.path, body, timeout=t)
        except KubeError as exc:
            log.info("failed to update lock: %s", exc)
            return False
        self._lease = updated
        self._observe(updated.get("spec") or desired, _rv(updated))
        return True

    def _lease_valid(self) -> bool:
        duration = float((self._observed or {}).get("leaseDurationSeconds") or 0)
        return self._observed_time + duration > self._clock.monotonic()

    # -- loops -----------------------------------------------------------------------
    async def _acquire(self) -> None:
        while True:
            if await self.try_acquire_or_renew():
                return
            await self._clock.sleep(self.retry_period * (1.0 + random.random() * JITTER_FACTOR))

    async def _renew_until_lost(self, work: asyncio.Task[None] | None) -> None:
        """Renew until a renewal fails for renewDeadline, or the work task fails.

        Work that simply returns does not end leadership (as upstream, where
        OnStartedLeading is just a goroutine).
        """
        while True:
            if work is not None and work.done():
                if _failed(work):
                    return
                work = None
            deadline = self._clock.monotonic() + self.renew_deadline
            ok = False
            while True:
                if work is not None and _failed(work):
                    return
                if await self.try_acquire_or_renew():
                    ok = True
                    break
                if self._held_by_another():
                    log.info(
                        "lease %s/%s is held by %s: stopped leading",
                        self.namespace,
                        self.name,
                        self.leader_identity,
                    )
                    return
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    break
                await self._clock.sleep(min(self.retry_period, remaining))
                if self._clock.monotonic() >= deadline:
                    break
            if not ok:
                log.info("failed to renew lease %s/%s", self.namespace, self.name)
                return
            await self._sleep_or_work_done(self.retry_period, work)

    async def _sleep_or_work_done(self, seconds: float, work: asyncio.Task[None] | None) -> None:
        if work is None:
            await self._clock.sleep(seconds)
            return
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        try:
            await asyncio.wait({sleeper, work}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()

    async def run(self) -> None:
        work: asyncio.Task[None] | None = None
        leading = False
        cancelled = False
        try:
            await self._acquire()
            leading = True
            self.leading.set()
            log.info("successfully acquired lease %s/%s", self.namespace, self.name)
            if self._on_started is not None:
                res = self._on_started()
                if inspect.isawaitable(res):
                    work = asyncio.ensure_future(res)
            await self._renew_until_lost(work)
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            self.leading.clear()
            if work is not None and not work.done():
                work.cancel()
                with contextlib.suppress(BaseException):
                    await work
            failed = work is not None and _failed(work)
            if leading and ((cancelled and self._release_on_cancel) or failed):
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.release())
            if leading and self._on_stopped is not None:
                with contextlib.suppress(Exception):
                    self._on_stopped()
        if work is not None and work.done() and not work.cancelled():
            exc = work.exception()
            if exc is not None:
                raise exc

    async def release(self) -> bool:
        if not self.is_leader:
            return True
        now = format_micro_time(self._clock.now())
        spec = {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": int((self._observed or {}).get("leaseTransitions") or 0),
        }
        if self._lease is not None:
            body = dict(self._lease)
        else:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": self.name,
                    "namespace": self.namespace,
                    "resourceVersion": self._observed_rv,
                },
            }
        body["spec"] = spec
        try:
            updated = await put_json(self._s, self.path, body, timeout=self._req_timeout())
        except Conflict:
            # A renewal cancelled in flight may have landed after all: read the Lease
            # and release it if it is still ours (client-go gives up here, and the
            # next holder waits out the whole lease).
            try:
                lease = await get_json(self._s, self.path, timeout=self._req_timeout())
                current = lease.get("spec") or {}
                if str(current.get("holderIdentity") or "") != self.identity:
                    self._lease = lease
                    self._observe(current, _rv(lease))
                    return True
                spec["leaseTransitions"] = int(current.get("leaseTransitions") or 0)
                body = dict(lease)
                body["spec"] = spec
                updated = await put_json(self._s, self.path, body, timeout=self._req_timeout())
            except KubeError as exc:
                log.warning("failed to release lock: %s", exc)
                return False
        except KubeError as exc:
            log.warning("failed to release lock: %s", exc)
            return False
        self._lease = updated
        self._observe(updated.get("spec") or spec, _rv(updated))
        return True


def _failed(task: asyncio.Task[None]) -> bool:
    return task.done() and not task.cancelled() and task.exception() is not None


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
