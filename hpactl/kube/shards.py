"""Active-active shards: replicas share N shards, each owned through its own Lease.

``ShardManager(session, *, namespace, name, shards, identity, lease_duration,
renew_deadline, retry_period, clock=None, on_acquired, on_releasing, on_lost,
member_gc_after=None)``

Membership. Every replica keeps a member Lease ``<name>-member-<10 hex of
sha256(identity)>`` (holderIdentity = identity), renewed every ``retry_period``. Every
``retry_period`` the manager does one LIST of the leases labelled
``hpactl.dev/lease-set=<name>`` (members and shards) and notes, for each, the local
monotonic time its content last changed. A lease is valid until that time plus its
``leaseDurationSeconds`` (as client-go and ``LeaderElector`` judge it, never by the
remote renewTime, so clock skew between nodes does not matter). Live members are the
holders of valid member leases, plus this replica.

Ownership. ``assign_shards(N, live members)`` says who should own each shard; for every
shard assigned to this replica a ``LeaderElector`` on ``<name>-shard-<i>`` acquires it,
seeded with what the LIST saw, so a dead owner's lease is taken as soon as it expires
(not a second lease duration later). Winning calls ``on_acquired(i)`` as the elector's
work task. A held shard now assigned to another live member is handed off:
``await on_releasing(i)`` while the lease is still held, then the lease is released
(holder "", so the new owner takes it on its next retry). A shard lost without grace
(renewal failed for ``renew_deadline``, lease taken, or ``on_acquired`` raised) gets
``on_lost(i)``: stop at once.

Never two owners: ``holds(i)`` is the shard elector's ``holds_lease()``, True only
within ``renew_deadline`` (< lease duration) of the last renewal *sent*, so a replica
paused past its lease finds it False the moment it runs again, before anyone else
could have taken the lease. Every write for shard ``i`` must be fenced by ``holds(i)``;
``epoch(i)`` is the lease's ``leaseTransitions`` when it was acquired (incremented on
every change of holder), a fencing token for what the shard persists.

Fallback. Replicas can briefly disagree on who is live (a member lease expiring between
two LISTs). A shard that nobody validly holds for more than 2 x lease_duration while
assigned to someone else may be taken by any replica; it keeps such a shard until the
set of live members changes, then hands it off as usual (handing it back at once would
leave it unowned again for another 2 x lease_duration).

One N. Shard i of 4 and shard i of 8 hold different HPAs, so replicas must agree on
the count: each member lease carries its N (annotation ``hpactl.dev/shards``), the N of
the oldest live member (creationTimestamp of its member lease, then identity) wins, and
a replica running with another N takes no shard (``assignment`` empty, ``members``
those sharing the winning N) until those members are gone, as in a rolling update
that changes ``--shards``.

Clean-up. When ``run`` is cancelled, every held shard is handed off (``on_releasing``,
then release) and the member lease deleted. Member leases unchanged for
``member_gc_after`` (default 10 x lease_duration) are deleted by whoever sees them
(one DELETE with a resourceVersion precondition, best effort), so names of restarted
pods do not pile up.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol

from hpactl.core.sharding import assign_shards
from hpactl.kube.errors import AlreadyExists, KubeError, NotFound
from hpactl.kube.leader import JITTER_FACTOR, LeaderElector
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import create_json, delete_json, list_json, put_json
from hpactl.kube.session import KubeSession
from hpactl.model.times import format_micro_time

__all__ = [
    "ANNOTATION_SHARDS",
    "LABEL_LEASE_SET",
    "LABEL_MEMBER_OF",
    "LABEL_SHARD",
    "LABEL_SHARD_OF",
    "ShardManager",
    "member_lease_name",
    "shard_lease_name",
]

log = logging.getLogger(__name__)

LABEL_LEASE_SET = "hpactl.dev/lease-set"
LABEL_MEMBER_OF = "hpactl.dev/member-of"
LABEL_SHARD_OF = "hpactl.dev/shard-of"
LABEL_SHARD = "hpactl.dev/shard"
ANNOTATION_SHARDS = "hpactl.dev/shards"  # on a member lease: the N it runs with


class _ClockLike(Protocol):
    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


def _default_clock() -> _ClockLike:
    from hpactl.clock import RealClock

    return RealClock()


def _created(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("creationTimestamp") or "")


def _int_or_none(value: object) -> int | None:
    try:
        n = int(str(value))
    except ValueError:
        return None
    return n if n >= 1 else None


def member_lease_name(name: str, identity: str) -> str:
    return f"{name}-member-{hashlib.sha256(identity.encode('utf-8')).hexdigest()[:10]}"


def shard_lease_name(name: str, shard: int) -> str:
    return f"{name}-shard-{shard}"


@dataclass(eq=False, slots=True)
class _Seen:
    """A lease from the last LIST and the local time its content last changed."""

    obj: dict[str, Any]
    spec: dict[str, Any]
    changed_at: float

    @property
    def holder(self) -> str:
        return str(self.spec.get("holderIdentity") or "")

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = (self.obj.get("metadata") or {}).get("labels") or {}
        return labels

    @property
    def annotations(self) -> Mapping[str, str]:
        ann: Mapping[str, str] = (self.obj.get("metadata") or {}).get("annotations") or {}
        return ann

    @property
    def rv(self) -> str:
        return str((self.obj.get("metadata") or {}).get("resourceVersion") or "")

    def valid(self, now: float) -> bool:
        duration = float(self.spec.get("leaseDurationSeconds") or 0)
        return bool(self.holder) and self.changed_at + duration > now


@dataclass(eq=False, slots=True)
class _Tenure:
    """One elector trying to hold, or holding, one shard."""

    elector: LeaderElector
    fallback_view: frozenset[str] | None = None  # live members when taken as fallback
    task: asyncio.Task[None] | None = None
    handoff: asyncio.Task[None] | None = None
    acquired: bool = False
    graceful: bool = False  # on_releasing ran: the end of this tenure is no loss
    stopping: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


class ShardManager:
    """See the module docstring."""

    def __init__(
        self,
        session: KubeSession,
        *,
        namespace: str,
        name: str,
        shards: int,
        identity: str,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        clock: _ClockLike | None = None,
        on_acquired: Callable[[int], Awaitable[None]],
        on_releasing: Callable[[int], Awaitable[None]],
        on_lost: Callable[[int], None],
        member_gc_after: float | None = None,
    ) -> None:
        if shards < 1:
            raise ValueError(f"shards must be at least 1, got {shards}")
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if not identity:
            raise ValueError("identity must not be empty")
        self._s = session
        self.namespace = namespace
        self.name = name
        self.shards = shards
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.member_gc_after = 10 * lease_duration if member_gc_after is None else member_gc_after
        self._clock = clock or _default_clock()
        self._on_acquired = on_acquired
        self._on_releasing = on_releasing
        self._on_lost = on_lost
        self.member_lease = member_lease_name(name, identity)
        self._leases_path = resource_path(
            "coordination.k8s.io", "v1", "leases", namespace=namespace
        )
        self._seen: dict[str, _Seen] = {}
        self._tenures: dict[int, _Tenure] = {}
        self._epochs: dict[int, int] = {}
        self._members: tuple[str, ...] = (identity,)
        self._assignment: dict[int, str] = {}
        self._unowned_since: dict[int, float] = {}
        self._member_acquired = ""
        #: Monotonic time of the last successful LIST of the lease set (None: never):
        #: a replica that cannot list cannot take any shard (its /readyz says so).
        self.listed_at: float | None = None
        self._other_count = 0  # the shard count of the oldest member, when not ours

    # -- state -------------------------------------------------------------------------
    def holds(self, shard: int) -> bool:
        """May this replica write for ``shard`` right now (see the module docstring)?"""
        t = self._tenures.get(shard)
        return t is not None and t.elector.holds_lease()

    def epoch(self, shard: int) -> int:
        """leaseTransitions of ``shard``'s lease when last acquired here; -1 if never."""
        return self._epochs.get(shard, -1)

    @property
    def held(self) -> frozenset[int]:
        return frozenset(s for s, t in self._tenures.items() if t.elector.holds_lease())

    @property
    def members(self) -> tuple[str, ...]:
        return self._members

    @property
    def assignment(self) -> Mapping[int, str]:
        return MappingProxyType(self._assignment)

    # -- the loop ----------------------------------------------------------------------
    async def run(self) -> None:
        """Until cancelled; then hand off every held shard and delete the member lease."""
        log.info(
            "shard manager %s/%s: %d shards, identity %s",
            self.namespace,
            self.name,
            self.shards,
            self.identity,
        )
        try:
            while True:
                await self.tick()
                await self._clock.sleep(self.retry_period)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._shutdown())

    async def tick(self) -> None:
        """One round: LIST, renew the member lease, collect garbage, (re)assign."""
        try:
            res = await list_json(
                self._s,
                self._leases_path,
                label_selector=f"{LABEL_LEASE_SET}={self.name}",
                timeout=self.renew_deadline,
            )
        except KubeError as exc:
            log.warning("shards %s: listing leases failed (%s): %s", self.name, self.identity, exc)
            await self._renew_member()
            return
        now = self._clock.monotonic()
        self.listed_at = now
        self._observe(res.items, now)
        await self._renew_member()
        await self._collect_garbage(now)
        self._reconcile(now)
        await self._release_strays(now)

    def _observe(self, items: list[dict[str, Any]], now: float) -> None:
        seen: dict[str, _Seen] = {}
        for obj in items:
            lease_name = str((obj.get("metadata") or {}).get("name") or "")
            spec = dict(obj.get("spec") or {})
            prev = self._seen.get(lease_name)
            changed_at = prev.changed_at if prev is not None and prev.spec == spec else now
            seen[lease_name] = _Seen(obj, spec, changed_at)
        self._seen = seen

    def _live_members(self, now: float) -> tuple[tuple[str, ...], int]:
        """Live members sharing the shards, and the shard count they share.

        Replicas must agree on N (shard i of 4 and shard i of 8 hold different HPAs):
        the count of the oldest live member (creationTimestamp of its member lease, then
        identity) wins; members running with another count take no shard until it is
        gone, as in a rolling update that changes ``--shards``.
        """
        mine = self._seen.get(self.member_lease)
        # not listed yet: the newest of all ("~" sorts after any timestamp)
        candidates = [(_created(mine.obj) if mine else "~", self.identity, self.shards)]
        for seen in self._seen.values():
            if (
                seen.labels.get(LABEL_MEMBER_OF) != self.name
                or seen.holder == self.identity
                or not seen.valid(now)
            ):
                continue
            shards = _int_or_none(seen.annotations.get(ANNOTATION_SHARDS))
            if shards is not None:
                candidates.append((_created(seen.obj), seen.holder, shards))
        ref = min(candidates)[2]
        return tuple(sorted({ident for _, ident, n in candidates if n == ref})), ref

    async def _renew_member(self) -> None:
        now = format_micro_time(self._clock.now())
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "acquireTime": self._member_acquired or now,
            "renewTime": now,
        }
        mine = self._seen.get(self.member_lease)
        try:
            if mine is not None:
                body = dict(mine.obj)
                meta = dict(body.get("metadata") or {})
                meta["annotations"] = {
                    **(meta.get("annotations") or {}),
                    ANNOTATION_SHARDS: str(self.shards),
                }
                body["metadata"] = meta
                body["spec"] = spec
                await put_json(
                    self._s, self._path(self.member_lease), body, timeout=self.renew_deadline
                )
            else:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": self.member_lease,
                        "namespace": self.namespace,
                        "labels": {LABEL_LEASE_SET: self.name, LABEL_MEMBER_OF: self.name},
                        "annotations": {ANNOTATION_SHARDS: str(self.shards)},
                    },
                    "spec": spec,
                }
                await create_json(self._s, self._leases_path, body, timeout=self.renew_deadline)
                log.info(
                    "shards %s: %s joined (member lease %s)",
                    self.name,
                    self.identity,
                    self.member_lease,
                )
        except AlreadyExists:
            pass  # created by an earlier attempt whose answer was lost: the next LIST has it
        except KubeError as exc:
            log.warning(
                "shards %s: renewing member lease of %s failed: %s", self.name, self.identity, exc
            )
        else:
            self._member_acquired = str(spec["acquireTime"])

    async def _collect_garbage(self, now: float) -> None:
        for lease_name, seen in list(self._seen.items()):
            if (
                seen.labels.get(LABEL_MEMBER_OF) != self.name
                or lease_name == self.member_lease
                or now - seen.changed_at <= self.member_gc_after
            ):
                continue
            log.info(
                "shards %s: %s deletes member lease %s of %s, unchanged for %.0f s",
                self.name,
                self.identity,
                lease_name,
                seen.holder or "nobody",
                now - seen.changed_at,
            )
            # Forgotten either way: if the DELETE failed, the next LIST sees it anew and
            # it waits member_gc_after again before another attempt.
            del self._seen[lease_name]
            body = {
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": seen.rv},
            }
            try:
                await delete_json(
                    self._s, self._path(lease_name), body=body, timeout=self.renew_deadline
                )
            except KubeError as exc:
                log.info(
                    "shards %s: deleting member lease %s failed: %s", self.name, lease_name, exc
                )

    def _reconcile(self, now: float) -> None:
        live, shards = self._live_members(now)
        if live != self._members:
            log.info(
                "shards %s: live members %s (seen by %s)", self.name, ", ".join(live), self.identity
            )
        self._members = live
        if shards != self.shards:
            if self._other_count != shards:
                self._other_count = shards
                log.warning(
                    "shards %s: %s takes no shard: live members %s run with %d shards, "
                    "this replica with %d",
                    self.name,
                    self.identity,
                    ", ".join(live),
                    shards,
                    self.shards,
                )
            self._assignment = {}
            self._unowned_since.clear()
            for shard, tenure in list(self._tenures.items()):
                self._let_go(shard, tenure, "")
            return
        self._other_count = 0
        assignment = assign_shards(self.shards, live)
        self._assignment = assignment
        view = frozenset(live)
        for shard in range(self.shards):
            owner = assignment[shard]
            seen = self._seen.get(shard_lease_name(self.name, shard))
            owned = seen is not None and seen.valid(now)
            if owned:
                self._unowned_since.pop(shard, None)
            else:
                self._unowned_since.setdefault(shard, now)
            t = self._tenures.get(shard)
            if owner == self.identity:
                if t is None:
                    self._start(shard, None)
                elif t.fallback_view is not None:
                    t.fallback_view = None  # now ours by assignment
                continue
            if t is None:
                since = self._unowned_since.get(shard)
                if since is not None and now - since > 2 * self.lease_duration:
                    log.warning(
                        "shards %s: shard %d assigned to %s but unowned for %.1f s: %s takes it",
                        self.name,
                        shard,
                        owner,
                        now - since,
                        self.identity,
                    )
                    self._start(shard, view)
                continue
            if t.fallback_view == view:  # a fallback tenure, nothing changed since
                if (
                    not t.acquired
                    and seen is not None
                    and seen.valid(now)
                    and seen.holder != self.identity
                ):
                    self._stop_now(t)  # someone else took it after all
                continue
            self._let_go(shard, t, owner)

    async def _release_strays(self, now: float) -> None:
        """Release shard leases the API says are ours but no elector here holds: an
        acquisition cancelled in flight that landed after all. Nobody writes under
        them (holds() is False), but the next owner would wait out the lease."""
        for shard in range(self.shards):
            lease_name = shard_lease_name(self.name, shard)
            seen = self._seen.get(lease_name)
            if (
                seen is None
                or shard in self._tenures
                or seen.holder != self.identity
                or not seen.valid(now)
                or self._assignment.get(shard) == self.identity
            ):
                continue
            spec = dict(seen.spec)
            stamp = format_micro_time(self._clock.now())
            spec.update(
                holderIdentity="", leaseDurationSeconds=1, acquireTime=stamp, renewTime=stamp
            )
            body = dict(seen.obj)
            body["spec"] = spec
            log.info(
                "shards %s: %s releases stray lease of shard %d", self.name, self.identity, shard
            )
            try:  # the LIST's resourceVersion: a conflict means it changed, leave it
                await put_json(self._s, self._path(lease_name), body, timeout=self.renew_deadline)
            except KubeError as exc:
                log.info("shards %s: releasing stray shard %d failed: %s", self.name, shard, exc)

    def _let_go(self, shard: int, t: _Tenure, owner: str) -> None:
        """Hand off a held shard; stop trying to acquire one not held yet."""
        if t.stopping or t.handoff is not None:
            return
        if t.acquired:
            log.info(
                "shards %s: shard %d moves from %s to %s",
                self.name,
                shard,
                self.identity,
                owner or "nobody",
            )
            t.handoff = asyncio.create_task(self._hand_off(shard, t), name=f"shard-{shard}-handoff")
        else:
            self._stop_now(t)

    # -- tenures -----------------------------------------------------------------------
    def _start(self, shard: int, fallback_view: frozenset[str] | None) -> None:
        lease_name = shard_lease_name(self.name, shard)
        t: _Tenure

        def started() -> Awaitable[None]:
            t.acquired = True
            self._epochs[shard] = t.elector.transitions
            log.info(
                "shards %s: shard %d acquired by %s (epoch %d)",
                self.name,
                shard,
                self.identity,
                self._epochs[shard],
            )
            return self._on_acquired(shard)

        elector = LeaderElector(
            self._s,
            namespace=self.namespace,
            name=lease_name,
            identity=self.identity,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            clock=self._clock,
            on_started_leading=started,
            release_on_cancel=True,
            labels={
                LABEL_LEASE_SET: self.name,
                LABEL_SHARD_OF: self.name,
                LABEL_SHARD: str(shard),
            },
        )
        seen = self._seen.get(lease_name)
        if seen is not None:
            elector.observe(seen.obj, seen.changed_at)
        t = _Tenure(elector, fallback_view=fallback_view)
        self._tenures[shard] = t
        t.task = asyncio.create_task(self._run_tenure(shard, t), name=f"shard-{shard}")

    async def _run_tenure(self, shard: int, t: _Tenure) -> None:
        try:
            await t.elector.run()
        except asyncio.CancelledError:
            if not t.stopping:
                raise
        except Exception:
            log.exception(
                "shards %s: shard %d of %s failed (its work or its elector)",
                self.name,
                shard,
                self.identity,
            )
        finally:
            if self._tenures.get(shard) is t:
                del self._tenures[shard]
            t.done.set()
            if t.acquired and not t.graceful:
                log.warning("shards %s: shard %d lost by %s", self.name, shard, self.identity)
                try:
                    self._on_lost(shard)
                except Exception:
                    log.exception("shards %s: on_lost(%d) failed", self.name, shard)
            elif t.acquired:
                log.info("shards %s: shard %d released by %s", self.name, shard, self.identity)

    def _stop_now(self, t: _Tenure) -> None:
        t.stopping = True
        if t.task is not None:
            t.task.cancel()

    async def _hand_off(self, shard: int, t: _Tenure) -> None:
        """on_releasing while the lease is still held, then release it."""
        try:
            if t.elector.leading.is_set():
                log.info("shards %s: shard %d: %s hands it off", self.name, shard, self.identity)
                await self._on_releasing(shard)
                t.graceful = True
        except Exception:
            log.exception("shards %s: on_releasing(%d) failed", self.name, shard)
        finally:
            self._stop_now(t)  # the elector releases the lease as it is cancelled
            await t.done.wait()

    async def _shutdown(self) -> None:
        jobs: list[Awaitable[object]] = []
        for shard, t in list(self._tenures.items()):
            if t.handoff is not None:
                jobs.append(t.handoff)
            elif t.acquired and not t.stopping:
                t.handoff = asyncio.create_task(self._hand_off(shard, t))
                jobs.append(t.handoff)
            else:
                self._stop_now(t)
                jobs.append(t.done.wait())
        await asyncio.gather(*jobs, return_exceptions=True)
        try:
            await delete_json(self._s, self._path(self.member_lease), timeout=self.renew_deadline)
        except NotFound:
            pass
        except KubeError as exc:
            log.warning(
                "shards %s: deleting member lease of %s failed: %s", self.name, self.identity, exc
            )
        log.info("shards %s: %s left", self.name, self.identity)

    def _path(self, lease_name: str) -> str:
        return resource_path(
            "coordination.k8s.io", "v1", "leases", namespace=self.namespace, name=lease_name
        )
