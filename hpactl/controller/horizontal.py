"""The HorizontalPodAutoscaler controller: informer handlers, one sync, every sync.

``HorizontalController`` mirrors ``horizontal.go``:

* Informer handlers (``enqueueHPA`` / ``updateHPA`` / ``deleteHPA``): an added HPA is
  registered in the selector store with a match-nothing selector, then scheduled at
  once; an update wakes the HPA early only when ``metadata.generation`` changed and
  the HPAGeneration gate is on; a delete cancels it and forgets its history,
  selector, last explanation and decision records (:mod:`hpactl.controller.records`).
* :meth:`HorizontalController.sync_one` is ``reconcileKey`` + ``reconcileAutoscaler``:
  gather (:mod:`hpactl.controller.gather`) → ``decide`` → scale write when the plan
  rescales (retried on conflict) → ``finalize`` → status write only when it changed
  (``FailedUpdateStatus`` on failure) → events → history. It returns a
  :class:`SyncRecord` and emits the ``hpa.sync`` span, the ``hpa.synced`` log event
  and the Prometheus observations.
* Writes that cannot be trusted are not repeated blindly: a scale write that
  conflicts because the target's replicas changed since the decision
  (``StaleScale``: the cache was behind) is decided again once from a live read; a
  scale write whose answer was lost (timeout, connection reset, 504) is reported as
  upstream reports a failure, and the next sync reads the target live and, if the
  write landed, stores the scale event it made, so rate limits count it.
* With a write fence (``session.write_fence``, set by ``hpactl run`` to the leader
  lease), a sync starts only while the fence is open; a write refused by it
  (``NotLeader``) ends the sync with nothing more written (``skipped="not-leader"``).
* Shadow mode (``shadow`` set to a :class:`~hpactl.controller.shadow.ShadowComparer`,
  ``hpactl run --shadow``): every sync decides as usual and writes nothing (no scale,
  status or Event; a rescale is finalized as if written, history excepted); the fence
  is not consulted (it refuses everything), and the comparer follows the writing
  controller's scale events and compares each decision with what that controller
  recorded.
* Topology skew: after a rescale of a target whose pod template has
  ``topologySpreadConstraints``, the first sync that finds its pods numbering its
  replicas measures their skew per topology key (``Gatherer.topology_skew``) and
  reports it (gauge ``hpactl_target_topology_skew``, span attribute
  ``hpactl.topology.skew``); with the ``HPATopologySkewEvents`` gate a Warning
  ``TopologySkewExceeded`` follows upstream's events for each constraint whose
  ``maxSkew`` is exceeded. Without the gate the events are exactly upstream's.
* :meth:`HorizontalController.sync_all` syncs every cached HPA once (sorted keys,
  bounded concurrency): the deterministic entry point of ``hpactl simulate``. Syncs
  start in key order and each records its selector before its first wait on I/O
  (for targets read from the caches), so the selector store — and with it the
  ambiguity check — evolves as if the HPAs were synced one after the other.
* ``start_scheduling`` / ``stop_scheduling`` run a :class:`SyncSupervisor` (the leader
  only). Starting afresh drops every history: a new leader starts empty, as upstream,
  unless it is handed the histories persisted by the previous one
  (``HPAHistoryPersistence``, :mod:`hpactl.controller.persistence`).
* Shards (``--shards N`` > 1, a stable hash of the namespace): the controller syncs
  only the HPAs of the shards it holds (``start_shard`` / ``stop_shard``, driven by the shard manager), each sync
  fenced by that shard's lease (``fence_for``): no write for a shard once its lease
  cannot be proven ours, even while other shards are still held.
* Two sources (``--hpa-sources``, :class:`~hpactl.cache.hpa_sources.HPASources`):
  autoscaling/v2 HPAs and hpactl's own (autoscaling.hpactl.dev), the latter keyed
  ``namespace/hhpa:name`` (the namespace first: shards, selectors and metrics group by
  it) and written back to their own status subresource, Events about themselves. An
  hpactl HPA whose target a built-in HPA also names is not scaled
  (``ScalingActive=False``, ``ConflictingAutoscaler``; :mod:`hpactl.core.conflict`),
  and is woken when that built-in HPA comes or goes (``on_builtin_change``).
* Per-HPA sync periods (gate ``HPAConfigurableSyncPeriod``, KEP-6003, annotation
  ``hpactl.dev/sync-period-seconds``): the supervisor schedules each HPA at
  :meth:`HorizontalController.sync_period_of`, a changed annotation reschedules the
  waiting tick, the metrics fetched for a sync are no older than the HPA's own
  period (``ASKER_PERIOD``), and ``sync_all`` syncs only the HPAs whose period has
  passed since their last sync (every HPA at the first call).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import structlog
from opentelemetry import trace

from hpactl.cache.hpa_sources import HPASources
from hpactl.cache.listers import HPALister
from hpactl.cache.store import ProjectionError
from hpactl.clock import Clock
from hpactl.controller.gather import FetchedMetric, Gatherer, ScaleRead, SkewRead
from hpactl.controller.records import DecisionRecords
from hpactl.controller.scheduling import SyncSupervisor, reacquire_slot, release_slot
from hpactl.controller.selector_memo import SelectorMemo
from hpactl.controller.selector_store import SelectorStore
from hpactl.controller.shadow import ShadowComparer
from hpactl.core.conflict import conflict_message
from hpactl.core.decide import (
    CoreConfig,
    Explanation,
    MetricRequest,
    Outcome,
    ReplicaMemo,
    ScaleWriteResult,
    SyncInputs,
    decide,
    finalize,
    metrics_to_fetch,
    needs_metrics,
    record_rescale,
    with_metrics,
    with_selector,
)
from hpactl.core.history import History
from hpactl.core.metric_sources import metric_sources, with_sources
from hpactl.core.metrics_eval import WARNING, Event
from hpactl.core.pod_selection import wants_owned_pods
from hpactl.core.sharding import shard_of
from hpactl.core.sync_period import effective_sync_period
from hpactl.kube.errors import ApiError, KubeError, NotLeader, TransportError
from hpactl.kube.events import EventRecorder, Involved, ObjectRef
from hpactl.kube.scaling import StaleScale, update_scale
from hpactl.kube.session import KubeSession, fenced_by, task_fence
from hpactl.kube.status import update_hpa_status
from hpactl.metrics.shared import ASKER_PERIOD
from hpactl.model.crd import API_VERSION as CR_API_VERSION
from hpactl.model.hpa import HPA, split_key
from hpactl.model.selectors import Selector
from hpactl.model.topology import skew_by_key
from hpactl.obs.logging import EVENT_VERBOSITY, v_enabled
from hpactl.obs.metrics import ControllerMetrics
from hpactl.obs.tracing import SPAN_SCALE_UPDATE, SPAN_STATUS_UPDATE, SPAN_SYNC, start_span

__all__ = ["TARGET_ATTRIBUTES", "TOPOLOGY_SKEW_EXCEEDED", "HorizontalController", "SyncRecord"]

log = structlog.get_logger("hpactl.controller")
_SYNCED_V = EVENT_VERBOSITY["hpa.synced"]

#: OTel semantic-convention attribute for the target's name, per kind.
TARGET_ATTRIBUTES = {
    "Deployment": "k8s.deployment.name",
    "ReplicaSet": "k8s.replicaset.name",
    "StatefulSet": "k8s.statefulset.name",
    "ReplicationController": "k8s.replicationcontroller.name",
    "DaemonSet": "k8s.daemonset.name",
}

#: Reason of the Warning event for a skew above maxSkew (HPATopologySkewEvents gate).
TOPOLOGY_SKEW_EXCEEDED = "TopologySkewExceeded"


class PeriodicFetcher(Protocol):
    def new_period(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SyncRecord:
    """What one sync of one HPA did (logs, ``simulate`` output, ``hpactl explain``).

    ``current``: the target's spec.replicas (None when the scale could not be read);
    ``desired``: status.desiredReplicas after the sync; ``reason``: the rescale
    reason, else the limiting condition's reason; ``errors``: what upstream's
    reconcile would return, plus failed writes.
    """

    key: str
    current: int | None
    desired: int | None
    rescaled: bool
    reason: str
    explanation: Explanation | None
    errors: tuple[str, ...] = ()
    action: str = "none"
    error_label: str = "none"
    status_written: bool = False
    events: tuple[Event, ...] = field(default=())
    skipped: str = ""


@dataclass(frozen=True, slots=True)
class _UncertainRescale:
    """A scale write whose answer was lost: it may have been applied."""

    previous: int
    desired: int
    at: datetime


class _StaleInput(Exception):
    """The scale write found the target changed since the decision (StaleScale)."""


# Errors after which a write may or may not have been applied.
_UNKNOWN_OUTCOME_CODES = frozenset({504})


def _outcome_unknown(exc: BaseException) -> bool:
    if isinstance(exc, TransportError | TimeoutError):
        return True
    return isinstance(exc, ApiError) and exc.code in _UNKNOWN_OUTCOME_CODES


def _refuse() -> bool:
    """The fence of a shard this replica does not hold."""
    return False


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name


def _metric_spec_error(fm: FetchedMetric, failure_reason: str | None) -> bool:
    return fm.request.kind == "none" or failure_reason == "InvalidMetricSourceType"


class _Explanations(Mapping[str, Explanation]):
    """The explanations held by the sync records (records of skipped syncs have none)."""

    __slots__ = ("_records",)

    def __init__(self, records: Mapping[str, SyncRecord]) -> None:
        self._records = records

    def __getitem__(self, key: str) -> Explanation:
        exp = self._records[key].explanation
        if exp is None:
            raise KeyError(key)
        return exp

    def __iter__(self) -> Iterator[str]:
        return (k for k, r in self._records.items() if r.explanation is not None)

    def __len__(self) -> int:
        return sum(r.explanation is not None for r in self._records.values())


class HorizontalController:
    def __init__(
        self,
        *,
        hpas: HPALister | HPASources,
        gatherer: Gatherer,
        session: KubeSession,
        recorder: EventRecorder,
        clock: Clock,
        config: CoreConfig,
        sync_period: float,
        concurrency: int = 5,
        tracer: trace.Tracer | None = None,
        metrics: ControllerMetrics | None = None,
        fetcher: PeriodicFetcher | None = None,
        hpa_generation: bool = False,
        stale_consistency: bool = False,
        call_timeout: float = 10.0,
        decision_records: int = 0,
        topology_skew_events: bool = False,
    ) -> None:
        self.hpas = hpas
        self.gatherer = gatherer
        self._session = session
        self.recorder = recorder
        self.clock = clock
        self.config = config
        self.sync_period = sync_period
        self.concurrency = concurrency
        self.tracer = tracer or trace.NoOpTracer()
        self.metrics = metrics
        # Prometheus children by label values (labels() hashes and locks each time):
        # (action, error) and (action, error, type) sets are never removed; an HPA's
        # desired-replicas child goes with the HPA (forget).
        self._recon_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._metric_children: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        self._desired_children: dict[str, Any] = {}
        self._fetcher = fetcher
        self.hpa_generation = hpa_generation
        self.stale_consistency = stale_consistency
        self.call_timeout = call_timeout
        # HPATopologySkewEvents: a Warning when the observed skew exceeds maxSkew.
        self.topology_skew_events = topology_skew_events
        # HPAs whose target was rescaled and whose skew is still to be reported, and
        # the skew series each HPA's target has (to drop them with the HPA).
        self._skew_pending: set[str] = set()
        self._skew_series: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        self.selectors = SelectorStore()
        self.history: dict[str, History] = {}
        # Each HPA's last replica calculation, reused while provably unchanged (decide).
        self._replica_memos: dict[str, ReplicaMemo] = {}
        # Each HPA's last selector validation, reused while its inputs stand.
        self._selector_memos: dict[str, SelectorMemo] = {}
        self.last_records: dict[str, SyncRecord] = {}
        # The latest syncs of each HPA (--decision-records), for explain / debug.
        self.records = DecisionRecords(decision_records)
        self._written_rv: dict[str, int] = {}
        # The HPA informer's list count when each status was written: a consistent
        # list started after the write has it (or the server forgot it, as after an
        # etcd restore, where the old resourceVersion means nothing any more).
        self._written_list: dict[str, int] = {}
        self._uncertain: dict[str, _UncertainRescale] = {}
        self._invalid_reported: dict[str, str] = {}
        # HPAConfigurableSyncPeriod: when sync_all last synced each HPA (monotonic).
        self._last_synced: dict[str, float] = {}
        self.supervisor: SyncSupervisor | None = None
        # --shards: how many, and the shards this replica holds with their lease fences.
        self.shards = 1
        self._held: dict[int, Callable[[], bool]] = {}
        self.on_record: Callable[[SyncRecord], None] | None = None
        # Shadow mode: decide, write nothing, compare with the writing controller.
        self.shadow: ShadowComparer | None = None
        # Given the target's kind: None when the caches a decision reads (the HPA's,
        # the pods', the target kind's) are connected, else why not. A sync skips
        # while one is not: no decision from a cache that may be older than its last
        # list/watch failure (an API server outage, until the relist after it).
        self.cache_check: Callable[[str], str | None] | None = None

    @property
    def explanations(self) -> Mapping[str, Explanation]:
        """Each HPA's last ``Explanation``: a live view of ``last_records`` (one copy kept)."""
        return _Explanations(self.last_records)

    # -- informer handlers ------------------------------------------------------------

    def on_add(self, key: str, _obj: object) -> None:
        if self.shadow is not None and isinstance(_obj, HPA):
            self.shadow.observe_writer(key, None, _obj)
        self.selectors.register(key)
        if self.supervisor is not None and self.owns(key):
            self.supervisor.add(key)
        self._count_hpas()

    def on_update(self, key: str, old: object, new: object) -> None:
        if self.shadow is not None and isinstance(old, HPA) and isinstance(new, HPA):
            self.shadow.observe_writer(key, old, new)
        if key not in self.selectors:
            self.on_add(key, new)
            return
        if (
            self.hpa_generation
            and isinstance(old, HPA)
            and isinstance(new, HPA)
            and old.generation != new.generation
            and self.supervisor is not None
        ):
            self.supervisor.wake(key)
        if (
            self.config.configurable_sync_period
            and self.supervisor is not None
            and isinstance(old, HPA)
            and isinstance(new, HPA)
            and old.annotations != new.annotations
        ):
            self.supervisor.reperiod(key)

    def on_builtin_change(self, _key: str, *objs: object) -> None:
        """A built-in HPA came, changed or went: the hpactl HPAs targeting the same
        object (before or after) sync now, to stop or resume at once."""
        for obj in objs:
            if not isinstance(obj, HPA):
                continue
            ref = obj.spec.scale_target_ref
            for cr_key in self.hpas.crd_targeting(ref.kind, obj.namespace, ref.name):
                self.selectors.set(cr_key, Selector.nothing())
                if self.supervisor is not None and self.owns(cr_key):
                    self.supervisor.wake(cr_key)

    def on_delete(self, key: str, _obj: object) -> None:
        if self.supervisor is not None:
            self.supervisor.remove(key)  # calls forget
        else:
            self.forget(key)
        self._count_hpas()

    def forget(self, key: str) -> None:
        """Drop everything the controller remembers about ``key``."""
        self.selectors.remove(key)
        self.history.pop(key, None)
        self._replica_memos.pop(key, None)
        self._selector_memos.pop(key, None)
        self.last_records.pop(key, None)
        self.records.forget(key)
        self._written_rv.pop(key, None)
        self._written_list.pop(key, None)
        self._uncertain.pop(key, None)
        self._invalid_reported.pop(key, None)
        self._last_synced.pop(key, None)
        self._skew_pending.discard(key)
        series = self._skew_series.pop(key, None)
        if self.shadow is not None:
            self.shadow.forget(key)
        ns, name = _split(key)
        self._desired_children.pop(key, None)
        if self.metrics is not None:
            self.metrics.forget_hpa(ns, name)
            if series is not None:
                self.metrics.forget_topology_skew(*series)

    def _count_hpas(self) -> None:
        if self.metrics is not None:
            self.metrics.num_hpas.set(len(self.selectors))

    # -- scheduling (leader only) -----------------------------------------------------

    def start_scheduling(self, histories: Mapping[str, History] | None = None) -> SyncSupervisor:
        """Start periodic syncs of every HPA this replica owns.

        Histories start empty (a new leader, as upstream) or as ``histories`` (read
        back from the cluster by a leader that persists them).
        """
        self.history.clear()
        self.last_records.clear()
        self._written_rv.clear()
        self._uncertain.clear()
        if histories:
            self.history.update(histories)
        on_lag = self.metrics.schedule_lag.observe if self.metrics is not None else None
        queue = self.metrics.workqueue if self.metrics is not None else None
        sup = SyncSupervisor(
            self.clock,
            self.sync_period,
            self.concurrency,
            self._scheduled_sync,
            forget=self.forget,
            on_lag=on_lag,
            period_of=self.sync_period_of if self.config.configurable_sync_period else None,
            observer=queue,
        )
        if queue is not None:
            queue.gauges.source = sup.queue_state
        self.supervisor = sup
        keys = self.hpas.keys()
        sup.start(k for k in keys if self.owns(k))
        return sup

    # -- shards (--shards > 1) ---------------------------------------------------------

    def shard_of(self, key: str) -> int:
        """``key``'s shard: a stable hash of its namespace.

        A namespace is the unit: the AmbiguousSelector check needs the selectors of
        every HPA of the namespace, and the metrics of a namespace are fetched once
        per period for all its HPAs; both stay within one replica.
        """
        return shard_of(key.partition("/")[0], self.shards)

    def owns(self, key: str) -> bool:
        """Whether this replica syncs ``key``: always without shards, else if its shard is held."""
        return self.shards <= 1 or self.shard_of(key) in self._held

    def fence_for(self, key: str) -> Callable[[], bool] | None:
        """The write fence of ``key``'s shard (None without shards)."""
        if self.shards <= 1:
            return None
        return self._held.get(self.shard_of(key), _refuse)

    def shard_keys(self, shard: int) -> list[str]:
        """The cached HPAs of ``shard``."""
        keys = self.hpas.keys()
        return [k for k in keys if self.shard_of(k) == shard]

    def start_shard(
        self, shard: int, fence: Callable[[], bool], histories: Mapping[str, History] | None = None
    ) -> None:
        """Sync ``shard``'s HPAs from now on (first syncs spread over one period)."""
        self._held[shard] = fence
        for key, h in (histories or {}).items():
            if self.shard_of(key) == shard:
                self.history[key] = h
        sup = self.supervisor
        if sup is None:
            sup = self.start_scheduling(dict(self.history))
        sup.add_spread(self.shard_keys(shard))

    async def drain_shard(self, shard: int, grace: float | None) -> None:
        """Stop scheduling ``shard``'s HPAs; syncs in flight get ``grace`` to finish.

        The shard's fence stays (a graceful hand-off still writes its history), and
        what is remembered stays until ``forget_shard``.
        """
        if self.supervisor is not None:
            await self.supervisor.drain(self.shard_keys(shard), grace)

    def forget_shard(self, shard: int) -> None:
        """Drop ``shard``: its writes are refused from now on and its state forgotten."""
        self._held.pop(shard, None)
        for key in [k for k in self.history if self.shard_of(k) == shard]:
            self.history.pop(key, None)
        for key in self.shard_keys(shard):
            self.forget(key)
            self.selectors.register(key)  # still known, only not ours to sync

    async def stop_scheduling(self, grace: float | None = None) -> None:
        sup, self.supervisor = self.supervisor, None
        if sup is not None:
            await sup.stop(grace)

    async def _scheduled_sync(self, key: str) -> None:
        if self.shards <= 1:
            await self.sync_one(key)
            return
        with fenced_by(self.fence_for(key)):
            await self.sync_one(key)

    def sync_period_of(self, key: str) -> float:
        """Seconds between two syncs of ``key``: its KEP-6003 period, else the flag's."""
        if not self.config.configurable_sync_period:
            return self.sync_period
        hpa = self.hpas.get(*_split(key))
        if hpa is None:
            return self.sync_period
        return effective_sync_period(hpa, True, self.sync_period)

    def _due(self, keys: Sequence[str]) -> list[str]:
        """The keys whose own period has passed since ``sync_all`` last synced them."""
        now = self.clock.monotonic()
        due = []
        for key in keys:
            last = self._last_synced.get(key)
            # A hair of slack: steps land on the period exactly, in floating point.
            if last is None or now - last >= self.sync_period_of(key) - 1e-6:
                due.append(key)
                self._last_synced[key] = now
        return due

    # -- syncs ------------------------------------------------------------------------

    async def sync_all(self) -> list[SyncRecord]:
        """One sync of every cached HPA, in key order, ``concurrency`` at a time."""
        if self._fetcher is not None:
            self._fetcher.new_period()
        keys = self.hpas.keys()
        for key in keys:
            self.selectors.register(key)
        if self.config.configurable_sync_period:
            keys = self._due(keys)
        sem = asyncio.Semaphore(self.concurrency)

        async def one(key: str) -> SyncRecord | None:
            async with sem:
                return await self.sync_one(key)

        results = await asyncio.gather(*(one(k) for k in keys))
        # Events are written in the background; a step ends once they are stored.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.call_timeout * 3):
                await self.recorder.flush()
        return [r for r in results if r is not None]

    async def sync_one(self, key: str) -> SyncRecord | None:
        """Reconcile one HPA; None when it no longer exists (its state is forgotten)."""
        ns, name = _split(key)
        fence = self._session.write_fence
        own = task_fence.get()
        if self.shadow is None and (
            (fence is not None and not fence()) or (own is not None and not own())
        ):
            log.info("hpa.skipped", hpa=key, reason="not-leader")
            return SyncRecord(key, None, None, False, "", None, skipped="not-leader")
        hpa = self.hpas.get(ns, name)
        if hpa is None:
            bad = self.hpas.get_error(ns, name)
            if bad is not None:
                return await self._invalid(key, bad)
            self.forget(key)
            return None
        check = self.cache_check
        why = None if check is None else check(hpa.spec.scale_target_ref.kind)
        if why is not None:
            log.debug("hpa.skipped", hpa=key, reason="disconnected-cache", error=why)
            return SyncRecord(
                key,
                None,
                hpa.status.desired_replicas,
                False,
                "",
                None,
                (f"informer cache not connected: {why}",),
                error_label="internal",
                skipped="disconnected-cache",
            )
        if self.stale_consistency:
            written = self._written_rv.get(key)
            seen = _int_rv(hpa.resource_version)
            reflector = self.hpas.informer_for(key).reflector
            relisted = reflector.completed_list > self._written_list.get(key, 1 << 62)
            if written is not None and seen is not None and seen < written and not relisted:
                # StaleControllerConsistencyHPA: our last status write is not in the
                # cache yet; deciding on the old status would undo it.
                rec = SyncRecord(
                    key,
                    None,
                    hpa.status.desired_replicas,
                    False,
                    "",
                    None,
                    (f"HPA {key} cache is stale (resourceVersion {seen} < {written})",),
                    error_label="internal",
                    skipped="stale-cache",
                )
                log.info("hpa.skipped", hpa=key, reason="stale-cache")
                return rec
        started = time.perf_counter()
        structlog.contextvars.bind_contextvars(hpa=key)
        if self.metrics is not None:
            self.metrics.syncs_in_flight.inc()
        try:
            with start_span(self.tracer, SPAN_SYNC) as span:
                if span.is_recording():
                    _base_attributes(span, hpa)
                try:
                    rec = await self._reconcile(hpa, span)
                except NotLeader as exc:
                    # The lease is no longer provably ours: nothing more is written.
                    log.warning("hpa.sync_aborted", hpa=key, reason=str(exc))
                    span.set_attribute("hpactl.skipped", "not-leader")
                    rec = SyncRecord(key, None, None, False, "", None, skipped="not-leader")
                except Exception as exc:  # a bug must not kill the task: record and go on
                    log.exception("hpa.sync_failed", hpa=key)
                    span.record_exception(exc)
                    span.set_status(trace.Status(trace.StatusCode.ERROR, repr(exc)))
                    rec = SyncRecord(
                        key, None, None, False, "", None, (repr(exc),), error_label="internal"
                    )
        finally:
            structlog.contextvars.unbind_contextvars("hpa")
            if self.metrics is not None:
                self.metrics.syncs_in_flight.dec()
        elapsed = time.perf_counter() - started
        if self.metrics is not None:
            labels = (rec.action, rec.error_label)
            children = self._recon_children.get(labels)
            if children is None:
                children = (
                    self.metrics.reconciliations.labels(*labels),
                    self.metrics.reconciliation_duration.labels(*labels),
                )
                self._recon_children[labels] = children
            children[0].inc()
            children[1].observe(elapsed)
        self.last_records[key] = rec
        self.records.add(rec, self.clock.now())
        if self.on_record is not None:
            self.on_record(rec)
        return rec

    async def _invalid(self, key: str, bad: ProjectionError) -> SyncRecord:
        """A malformed HPA: one Warning event per distinct problem, then skip it."""
        msg = f"invalid HorizontalPodAutoscaler: {bad.message}"
        if self._invalid_reported.get(key) != msg:
            self._invalid_reported[key] = msg
            log.warning("hpa.invalid", hpa=key, error=bad.message)
            ns, name, is_cr = split_key(key)
            ref = ObjectRef(
                "HorizontalPodAutoscaler",
                ns,
                name,
                api_version=CR_API_VERSION if is_cr else "autoscaling/v2",
                resource_version=bad.resource_version,
            )
            self._emit(ref, (Event(WARNING, "InvalidHPA", msg),))
        return SyncRecord(key, None, None, False, "InvalidHPA", None, (msg,), skipped="invalid")

    async def _reconcile(self, hpa: HPA, span: trace.Span) -> SyncRecord:
        try:
            return await self._reconcile_once(hpa, span)
        except _StaleInput:
            # The cache was behind the target: decide again, once, from a live read.
            span.add_event("hpactl.scale.stale_input")
            await reacquire_slot()  # deciding again: within the concurrent-syncs bound
            return await self._reconcile_once(hpa, span, retried=True)

    def _requests(self, hpa: HPA) -> tuple[MetricRequest, ...]:
        """What to fetch, each Pods/Object/External metric with the API group its HPA
        names for it (KEP-6382, gate HPAMetricSource)."""
        return with_sources(metrics_to_fetch(hpa), metric_sources(hpa, self.config.metric_source))

    def _settle_uncertain(self, hpa: HPA, read: ScaleRead, history: History) -> History:
        """A lost scale-write answer: if the live read shows it landed, count it."""
        if read.scale is None:
            return history  # keep what is pending until the target can be read
        pending = self._uncertain.pop(hpa.key, None)
        if pending is None or read.scale.spec_replicas != pending.desired:
            return history
        log.info(
            "hpa.rescale_landed",
            hpa=hpa.key,
            previous=pending.previous,
            desired=pending.desired,
        )
        return record_rescale(history, hpa, pending.previous, pending.desired, pending.at)

    async def _reconcile_once(
        self, hpa: HPA, span: trace.Span, *, retried: bool = False
    ) -> SyncRecord:
        key = hpa.key
        now = self.clock.now()
        history = self.history.get(key, History())
        # An hpactl HPA whose target a built-in HPA also names: not scaled (hpactl.core.conflict).
        conflict = conflict_message(hpa, self.hpas.conflicting(hpa))
        if conflict:
            # Out of the ambiguity check: the built-in HPA, if served here, scales alone.
            self.selectors.set(key, Selector.nothing())
        read: ScaleRead = await self.gatherer.scale(hpa)
        history = self._settle_uncertain(hpa, read, history)
        prior = history
        if self.shadow is not None:
            spec = read.scale.spec_replicas if read.scale is not None else None
            history = self.shadow.follow(hpa, spec, history)
        pods = self.gatherer.pods(hpa.namespace, read.scale.selector) if read.scale else ()
        owners: frozenset[str] | None = None
        if read.scale is not None and wants_owned_pods(hpa, self.config.selection_strategy):
            owners = self.gatherer.pod_owners(hpa, read)  # KEP-5325 OwnerReference
        skew_events: tuple[Event, ...] = ()
        skew_reported = False
        if key in self._skew_pending and read.scale is not None:
            skew = self.gatherer.topology_skew(hpa, pods, read.scale.spec_replicas)
            if skew.ready:
                skew_reported = True
                skew_events = self._report_skew(hpa, skew, span)
        selector_text = read.scale.selector if read.scale is not None else ""
        version = self.selectors.version(hpa.namespace)
        memo = self._selector_memos.get(key)
        if memo is not None and memo.fits(selector_text, pods, version):
            hpa_selectors, known = memo.hpa_selectors, memo.result
        else:
            label_sets = {frozenset(p.labels.items()) for p in pods}
            hpa_selectors, known = self.selectors.relevant(key, label_sets), None
        inputs = SyncInputs(
            hpa=hpa,
            scale=read.scale,
            pods=pods,
            metrics=(),
            history=history,
            config=self.config,
            now=now,
            hpa_selectors=hpa_selectors,
            scale_error=read.error,
            selector_result=known,
            pod_owners=owners,
            conflict=conflict,
            replica_memo=self._replica_memos.get(key),
        )
        # The selector is validated once here (or its last validation reused, see
        # selector_memo); needs_metrics and decide reuse it.
        inputs = with_selector(inputs)
        if known is None and inputs.selector_result is not None:
            self._selector_memos[key] = SelectorMemo(
                selector_text, tuple(pods), version, hpa_selectors, inputs.selector_result
            )
        fetched: list[FetchedMetric] = []
        if needs_metrics(inputs):
            assert read.scale is not None and inputs.selector_result is not None
            assert inputs.selector_result.selector is not None
            # validateAndParseSelector records the selector before any metric is
            # fetched; doing the same here (before the first await) also makes
            # concurrent syncs in sync_all see each other in key order.
            self.selectors.set(key, inputs.selector_result.selector)
            token = (
                ASKER_PERIOD.set(effective_sync_period(hpa, True, self.sync_period))
                if self.config.configurable_sync_period
                else None
            )
            try:
                fetched = await self.gatherer.metrics(self._requests(hpa), read.scale.selector)
            finally:
                if token is not None:
                    ASKER_PERIOD.reset(token)
            inputs = with_metrics(inputs, tuple(f.value for f in fetched))
        plan = decide(inputs)
        if plan.selector is not None:
            self.selectors.set(key, plan.selector)
        if plan.replica_memo is not None:
            self._replica_memos[key] = plan.replica_memo
        else:
            self._replica_memos.pop(key, None)

        result: ScaleWriteResult | None = None
        if plan.rescale:
            if self.shadow is not None:
                result = ScaleWriteResult.succeeded()  # decided, never written
            else:
                release_slot()  # only writes are left: the token wait holds no worker
                result = await self._write_scale(hpa, read, plan.desired_replicas, retried=retried)
        outcome = finalize(plan, result)
        # The shadow stores no scale event of its own: follow() stores the writer's.
        self.history[key] = outcome.history if self.shadow is None else plan.history
        if skew_reported:
            self._skew_pending.discard(key)
        if outcome.rescaled and self.shadow is None:
            # Measured at a later sync, once the pods have followed the new scale.
            self._skew_pending.add(key)

        errors: list[str] = [outcome.error] if outcome.error else []
        events = list(outcome.events)
        written = False
        if outcome.status_changed and self.shadow is None:
            release_slot()
            err = await self._write_status(hpa, outcome)
            if err is None:
                written = True
            else:
                events.append(Event(WARNING, "FailedUpdateStatus", err))
                errors.append(f"failed to update status for {hpa.name}: {err}")
        events.extend(skew_events)
        self._emit(hpa, events)
        if self.shadow is not None:
            self.shadow.compare(inputs, plan, outcome, prior, span)

        self._observe_metrics(hpa, fetched, outcome)
        expl = outcome.explanation
        reason = expl.rescale_reason or plan.rescale_reason
        if not reason and expl.limit_reason:
            reason = expl.limit_reason
        rec = SyncRecord(
            key=key,
            current=plan.current_replicas,
            desired=outcome.desired_replicas,
            rescaled=outcome.rescaled,
            reason=reason,
            explanation=expl,
            errors=tuple(errors),
            action=outcome.action,
            error_label=outcome.error_label,
            status_written=written,
            events=tuple(events),
        )
        if span.is_recording():
            _decision_attributes(span, rec, expl)
            if errors:
                span.set_status(trace.Status(trace.StatusCode.ERROR, errors[0]))
        # V(4) unless it rescaled or failed (obs.logging.verbosity_of): not built when dropped.
        if rec.rescaled or errors or v_enabled(_SYNCED_V, "hpactl.controller"):
            self._log_synced(rec, expl)
        return rec

    @staticmethod
    def _log_synced(rec: SyncRecord, expl: Explanation) -> None:
        errors = rec.errors
        written = rec.status_written
        key = rec.key
        log.info(
            "hpa.synced",
            hpa=key,
            current=rec.current,
            desired=rec.desired,
            rescaled=rec.rescaled,
            reason=rec.reason,
            limited_by=list(expl.limited_by),
            path=expl.path,
            action=rec.action,
            status_written=written,
            error=errors[0] if errors else None,
        )

    def _report_skew(self, hpa: HPA, read: SkewRead, span: trace.Span) -> tuple[Event, ...]:
        """The gauge and span attribute of the observed skew; with the
        HPATopologySkewEvents gate, a Warning per constraint whose maxSkew it exceeds."""
        if not read.skews:
            return ()
        ref = hpa.spec.scale_target_ref
        by_key = skew_by_key(read.skews)
        if self.metrics is not None:
            old = self._skew_series.get(hpa.key)
            if old is not None:
                self.metrics.forget_topology_skew(*old)
            for topology_key, skew in by_key.items():
                self.metrics.target_topology_skew.labels(hpa.namespace, ref.name, topology_key).set(
                    skew
                )
        self._skew_series[hpa.key] = (hpa.namespace, ref.name, tuple(by_key))
        span.set_attribute("hpactl.topology.skew", [f"{k}={v}" for k, v in by_key.items()])
        exceeded = [s for s in read.skews if s.exceeded]
        span.set_attribute("hpactl.topology.max_skew_exceeded", bool(exceeded))
        log.info(
            "hpa.topology_skew",
            hpa=hpa.key,
            target=f"{ref.kind}/{ref.name}",
            skew=by_key,
            exceeded=[s.constraint.topology_key for s in exceeded],
        )
        if not self.topology_skew_events:
            return ()
        return tuple(
            Event(
                WARNING,
                TOPOLOGY_SKEW_EXCEEDED,
                f"pods of {ref.kind}/{ref.name} are spread over {s.constraint.topology_key} "
                f"with skew {s.skew}, more than maxSkew {s.constraint.max_skew} "
                f"({s.constraint.when_unsatisfiable}): "
                + ", ".join(f"{d}={n}" for d, n in s.counts),
            )
            for s in exceeded
        )

    async def _write_scale(
        self, hpa: HPA, read: ScaleRead, desired: int, *, retried: bool = False
    ) -> ScaleWriteResult:
        ref = hpa.spec.scale_target_ref
        assert read.scale is not None and read.mapping is not None
        current = read.scale.spec_replicas
        with start_span(self.tracer, SPAN_SCALE_UPDATE) as span:
            span.set_attribute("hpactl.replicas.desired", desired)
            span.set_attribute("hpactl.target.kind", ref.kind)
            span.set_attribute("hpactl.target.name", ref.name)
            try:
                async with asyncio.timeout(self.call_timeout * 3):
                    await update_scale(
                        self._session,
                        read.mapping,
                        hpa.namespace,
                        ref.name,
                        desired,
                        resource_version=read.resource_version,
                        expected_replicas=current,
                        timeout=self.call_timeout,
                    )
            except NotLeader:
                raise
            except StaleScale as exc:
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
                self.gatherer.distrust(hpa)
                if not retried:
                    raise _StaleInput() from exc
                return ScaleWriteResult.failed(str(exc))
            except (KubeError, TimeoutError) as exc:
                text = str(exc) if isinstance(exc, KubeError) else "context deadline exceeded"
                span.set_status(trace.Status(trace.StatusCode.ERROR, text))
                if _outcome_unknown(exc):
                    # The write may have landed: read the target live next time.
                    self._uncertain[hpa.key] = _UncertainRescale(current, desired, self.clock.now())
                    self.gatherer.distrust(hpa)
                    span.set_attribute("hpactl.scale.outcome", "unknown")
                return ScaleWriteResult.failed(text)
            return ScaleWriteResult.succeeded()

    async def _write_status(self, hpa: HPA, outcome: Outcome) -> str | None:
        with start_span(self.tracer, SPAN_STATUS_UPDATE) as span:
            try:
                async with asyncio.timeout(self.call_timeout):
                    stored = await update_hpa_status(
                        self._session, hpa, outcome.status_raw, timeout=self.call_timeout
                    )
            except NotLeader:
                raise
            except KubeError as exc:
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
                return str(exc)
            except TimeoutError:
                span.set_status(trace.Status(trace.StatusCode.ERROR, "timeout"))
                return "context deadline exceeded"
            parsed = _int_rv(str((stored.get("metadata") or {}).get("resourceVersion") or ""))
            if parsed is not None:
                self._written_rv[hpa.key] = parsed
                informer = self.hpas.informer_for(hpa.key)
                self._written_list[hpa.key] = informer.reflector.lists_started
            return None

    def _emit(self, obj: Involved, events: Sequence[Event]) -> None:
        # Queued: the recorder writes (and aggregates) in the background, as
        # client-go's broadcaster does; a full queue drops, never blocks a sync.
        if self.shadow is not None:
            return  # shadow mode records no Events
        for ev in events:
            self.recorder.emit(obj, ev)

    def _observe_metrics(self, hpa: HPA, fetched: list[FetchedMetric], outcome: Outcome) -> None:
        m = self.metrics
        if m is None:
            return
        gauge = self._desired_children.get(hpa.key)
        if gauge is None:
            gauge = self._desired_children[hpa.key] = m.desired_replicas.labels(
                hpa.namespace, hpa.key_name
            )
        gauge.set(outcome.desired_replicas)
        by_index = {me.index: me for me in outcome.explanation.metrics}
        current_status = hpa.status.current_replicas
        for fm in fetched:
            if fm.request.kind == "none" and fm.request.index not in by_index:
                continue
            spec = hpa.spec.metrics[fm.request.index]
            me = by_index.get(fm.request.index)
            action, error = "none", "none"
            if me is not None and (me.error or me.failure_reason):
                error = "spec" if _metric_spec_error(fm, me.failure_reason) else "internal"
            elif me is not None and me.proposal is not None:
                if me.proposal > current_status:
                    action = "scale_up"
                elif me.proposal < current_status:
                    action = "scale_down"
            labels = (action, error, spec.type)
            children = self._metric_children.get(labels)
            if children is None:
                children = self._metric_children[labels] = (
                    m.metric_computations.labels(*labels),
                    m.metric_computation_duration.labels(*labels),
                )
            children[0].inc()
            children[1].observe(fm.seconds)


def _int_rv(rv: str) -> int | None:
    try:
        return int(rv)
    except (TypeError, ValueError):
        return None


def _base_attributes(span: trace.Span, hpa: HPA) -> None:
    ref = hpa.spec.scale_target_ref
    span.set_attribute("k8s.namespace.name", hpa.namespace)
    span.set_attribute("k8s.hpa.name", hpa.name)
    span.set_attribute("k8s.hpa.uid", hpa.uid)
    if not hpa.is_builtin:  # an hpactl HorizontalPodAutoscaler (--hpa-sources=crd)
        span.set_attribute("hpactl.hpa.api_version", hpa.api_version)
    span.set_attribute("k8s.hpa.scaletargetref.kind", ref.kind)
    span.set_attribute("k8s.hpa.scaletargetref.name", ref.name)
    if ref.api_version:
        span.set_attribute("k8s.hpa.scaletargetref.api_version", ref.api_version)
    attr = TARGET_ATTRIBUTES.get(ref.kind)
    if attr is not None:
        span.set_attribute(attr, ref.name)
    span.set_attribute("hpactl.hpa.generation", hpa.generation)
    if hpa.spec.min_replicas is not None:
        span.set_attribute("hpactl.replicas.min", hpa.spec.min_replicas)
    span.set_attribute("hpactl.replicas.max", hpa.spec.max_replicas)


def _decision_attributes(span: trace.Span, rec: SyncRecord, expl: Explanation) -> None:
    if rec.current is not None:
        span.set_attribute("hpactl.replicas.current", rec.current)
    if rec.desired is not None:
        span.set_attribute("hpactl.replicas.desired", rec.desired)
    span.set_attribute("hpactl.rescaled", rec.rescaled)
    span.set_attribute("hpactl.action", rec.action)
    span.set_attribute("hpactl.decision.path", expl.path)
    if rec.reason:
        span.set_attribute("hpactl.reason", rec.reason)
    span.set_attribute("hpactl.limited_by", ",".join(expl.limited_by) or "none")
    if expl.policy:
        span.set_attribute("hpactl.policy", expl.policy)
    if expl.metric_proposal is not None:
        span.set_attribute("hpactl.metric_proposal", expl.metric_proposal)
    if expl.stabilized is not None:
        span.set_attribute("hpactl.stabilized", expl.stabilized)
    span.set_attribute("hpactl.status.written", rec.status_written)
    for me in expl.metrics:
        p = f"hpactl.metric.{me.index}"
        span.set_attribute(f"{p}.type", me.type)
        span.set_attribute(f"{p}.name", me.name)
        if me.proposal is not None:
            span.set_attribute(f"{p}.proposal", me.proposal)
        if me.error:
            span.set_attribute(f"{p}.error", me.error)
