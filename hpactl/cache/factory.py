"""Shared informers: one list+watch per resource type, for every consumer.

``SharedInformers`` is client-go's ``SharedInformerFactory`` for the types the HPA
controller reads: asking for a lister creates its informer once; `start()` runs
every informer created so far; `wait_for_cache_sync()` gates the workers.
`relist()` + `wait_for_resync()` refresh every cache from a consistent list (after
re-acquiring the lease); `connected()` tells whether every informer's list and watch
get through (for ``/readyz``).

=========================  ===========================  ============================
informer (name = kind)      API                          store value, indexes
=========================  ===========================  ============================
HorizontalPodAutoscaler    autoscaling/v2 (all ns)      `HPA`; namespace, target
HorizontalPodAutoscaler.   autoscaling.hpactl.dev/      `HPA` (``cr_to_v2``); namespace,
autoscaling.hpactl.dev     v1alpha1 (all ns)            target
Pod                        v1 pods (all ns)             `PodView`; namespace, label
Deployment, ReplicaSet,    apps/v1; v1 for RCs          `WorkloadScale`; namespace
StatefulSet,
ReplicationController
Node                       v1 nodes                     `NodeLabels` (name, labels)
=========================  ===========================  ============================

The informer of hpactl's own HorizontalPodAutoscalers (``crd_hpas()``) exists only
with ``--hpa-sources`` naming ``crd``: each object is projected through
:func:`hpactl.model.crd.cr_to_v2` then the usual ``hpa_from_raw``, so the controller
reads it as an autoscaling/v2 HPA whose ``api_version`` says where it lives.

The Node informer exists only when asked for (``nodes()``): ``ControllerApp`` creates
it for the topology skew report, except in shadow mode. It keeps a node's name and
labels only, some hundred bytes per node. It is *optional*: no decision needs it, so
it never holds back ``wait_for_cache_sync``, ``has_synced``, ``wait_for_resync`` or
``connected`` (readiness). Where nodes cannot be listed (RBAC without the rule) the
reflector logs the 403 and retries, and the skew is simply not reported.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from hpactl.cache.informer import Informer
from hpactl.cache.listers import (
    HPA_TARGET_INDEX,
    POD_LABEL_INDEX,
    HPALister,
    NodeLister,
    PodLister,
    WorkloadLister,
    hpa_target_index,
    pod_label_index,
)
from hpactl.cache.listwatch import ResourceListerWatcher
from hpactl.cache.projections import (
    WORKLOAD_KINDS,
    WorkloadScale,
    intern_strings,
    node_labels_from_raw,
    workload_projection,
)
from hpactl.cache.reflector import Backoff, ListerWatcher
from hpactl.clock import Clock, RealClock

if TYPE_CHECKING:
    from hpactl.kube.session import KubeSession
    from hpactl.model.hpa import HPA
    from hpactl.model.pod import PodView
    from hpactl.model.topology import NodeLabels

__all__ = ["CRD_HPAS", "HPAS", "NODES", "PODS", "ListerWatcherFactory", "SharedInformers"]

T = TypeVar("T")

# Informers are named by the kind they cache.
HPAS = "HorizontalPodAutoscaler"
CRD_HPAS = "HorizontalPodAutoscaler.autoscaling.hpactl.dev"
PODS = "Pod"
NODES = "Node"

ListerWatcherFactory = Callable[[str, str, str], ListerWatcher]
"""(group, version, resource) -> ListerWatcher."""

_log = structlog.get_logger("hpactl.cache")


def _interned(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """`raw` with its namespace and spec strings interned (shared by every cached HPA)."""
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        return raw
    ns = meta.get("namespace")
    return {
        **raw,
        "metadata": {**meta, "namespace": sys.intern(ns)} if isinstance(ns, str) else meta,
        "spec": intern_strings(raw.get("spec")),
    }


def _project_hpa(raw: Mapping[str, Any]) -> HPA:
    from hpactl.model.hpa import hpa_from_raw

    return hpa_from_raw(_interned(raw))


def _project_cr_hpa(raw: Mapping[str, Any]) -> HPA:
    from dataclasses import replace

    from hpactl.model.crd import API_VERSION, cr_to_v2
    from hpactl.model.hpa import hpa_from_raw

    return replace(hpa_from_raw(_interned(cr_to_v2(raw))), api_version=API_VERSION)


def _project_pod(raw: Mapping[str, Any]) -> PodView:
    from hpactl.model.pod import pod_view_from_raw

    return pod_view_from_raw(raw)


class SharedInformers:
    """The controller's informers, created on first use and shared.

    Either give an open `session` (real API) or a `lister_watcher_factory` (tests).
    `clock` drives backoff and resync; `hpa_resync_period` (seconds) redelivers every
    HPA to update handlers periodically (upstream: the sync period).
    """

    def __init__(
        self,
        session: KubeSession | None = None,
        *,
        lister_watcher_factory: ListerWatcherFactory | None = None,
        clock: Clock | None = None,
        hpa_resync_period: float | None = None,
        page_size: int = 500,
        watch_read_timeout: float = 90.0,
        min_watch_timeout: int = 300,
        backoff_factory: Callable[[], Backoff] | None = None,
        yield_every: int = 256,
        initial_list_resource_version: str = "0",
        watch_list: bool = False,
    ) -> None:
        if lister_watcher_factory is None:
            if session is None:
                raise ValueError("SharedInformers needs a session or a lister_watcher_factory")
            sess = session

            def lw_factory(group: str, version: str, resource: str) -> ListerWatcher:
                return ResourceListerWatcher(
                    sess,
                    group,
                    version,
                    resource,
                    page_size=page_size,
                    read_timeout=watch_read_timeout,
                    min_watch_timeout=min_watch_timeout,
                    watch_list=watch_list,
                )

            lister_watcher_factory = lw_factory
        self._lw_factory = lister_watcher_factory
        self._clock: Clock = clock or RealClock()
        self._hpa_resync = hpa_resync_period
        self._backoff_factory = backoff_factory or Backoff
        self._yield_every = yield_every
        self._initial_list_rv = initial_list_resource_version
        self._informers: dict[str, Informer[Any]] = {}
        # Informers no decision needs (nodes: only the topology skew report). They
        # never hold back cache sync, a resync or readiness: a cluster whose RBAC
        # lacks them still autoscales, and the reflector logs their errors.
        self._optional: set[str] = set()
        self._started = False

    # -- informers ------------------------------------------------------------------

    def _informer(
        self,
        name: str,
        gvr: tuple[str, str, str],
        projection: Callable[[Mapping[str, Any]], T],
        indexers: Mapping[str, Callable[[T], Iterable[str]]] | None = None,
        resync: float | None = None,
        *,
        optional: bool = False,
    ) -> Informer[T]:
        existing = self._informers.get(name)
        if existing is not None:
            return existing
        if optional:
            self._optional.add(name)
        inf: Informer[T] = Informer(
            name,
            self._lw_factory(*gvr),
            projection,
            indexers=indexers,
            clock=self._clock,
            backoff=self._backoff_factory(),
            resync_period=resync,
            yield_every=self._yield_every,
            initial_list_resource_version=self._initial_list_rv,
        )
        self._informers[name] = inf
        if self._started:
            inf.start()  # created after start(): run it at once, like client-go's Start()
        return inf

    def hpas(self) -> Informer[HPA]:
        return self._informer(
            HPAS,
            ("autoscaling", "v2", "horizontalpodautoscalers"),
            _project_hpa,
            {HPA_TARGET_INDEX: hpa_target_index},
            self._hpa_resync,
        )

    def crd_hpas(self) -> Informer[HPA]:
        """hpactl's own HorizontalPodAutoscalers (``--hpa-sources=crd``)."""
        from hpactl.model.crd import GROUP, PLURAL, VERSION

        return self._informer(
            CRD_HPAS,
            (GROUP, VERSION, PLURAL),
            _project_cr_hpa,
            {HPA_TARGET_INDEX: hpa_target_index},
            self._hpa_resync,
        )

    def pods(self) -> Informer[PodView]:
        return self._informer(
            PODS, ("", "v1", "pods"), _project_pod, {POD_LABEL_INDEX: pod_label_index}
        )

    def nodes(self) -> Informer[NodeLabels]:
        return self._informer(NODES, ("", "v1", "nodes"), node_labels_from_raw, optional=True)

    def workloads(self, kind: str) -> Informer[WorkloadScale]:
        wk = WORKLOAD_KINDS.get(kind)
        if wk is None:
            raise ValueError(f"no informer for kind {kind!r}")
        return self._informer(kind, (wk.group, wk.version, wk.resource), workload_projection(kind))

    # -- listers --------------------------------------------------------------------

    def hpa_lister(self) -> HPALister:
        return HPALister(self.hpas())

    def pod_lister(self) -> PodLister:
        return PodLister(self.pods())

    def node_lister(self) -> NodeLister:
        return NodeLister(self.nodes())

    def workload_lister(self, kinds: Iterable[str] = tuple(WORKLOAD_KINDS)) -> WorkloadLister:
        return WorkloadLister({k: self.workloads(k) for k in kinds})

    # -- lifecycle ------------------------------------------------------------------

    @property
    def informers(self) -> Mapping[str, Informer[Any]]:
        return dict(self._informers)

    def start(self) -> None:
        """Start every informer created so far (and any created later)."""
        self._started = True
        for inf in self._informers.values():
            inf.start()

    def _required(self) -> dict[str, Informer[Any]]:
        return {n: i for n, i in self._informers.items() if n not in self._optional}

    @property
    def has_synced(self) -> bool:
        return all(inf.has_synced for inf in self._required().values())

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """True once every required informer has listed (optional ones, e.g. nodes,
        are not waited for); False on `timeout` (real seconds)."""
        try:
            async with asyncio.timeout(timeout):
                for inf in list(self._required().values()):
                    await inf.wait_synced()
        except TimeoutError:
            pending = [n for n, i in self._required().items() if not i.has_synced]
            _log.warning("cache.sync_timeout", pending=pending)
            return False
        return True

    def informer_for_kind(self, kind: str) -> Informer[Any] | None:
        """The informer caching `kind` (``Pod``, ``Deployment``...), if one was created."""
        return self._informers.get(kind)

    async def wait_for_rv(
        self, rv: int | str, timeout: float | None = None, names: Iterable[str] | None = None
    ) -> None:
        """Wait until the informers (all, or the kinds in `names`) reflect resourceVersion >= `rv`.

        An informer whose kind did not change moves forward only through bookmarks, so
        waiting on all of them costs up to one bookmark interval. A caller that knows
        what it wrote can wait instead on each written kind for the resourceVersion of
        its last write to that kind (`wait_for_writes`): events of one kind arrive in
        order, so that is exact and needs no bookmark.
        """
        if names is not None:
            chosen = [self._informers[n] for n in names]
        else:
            # An optional informer that cannot list (RBAC) would hold everyone back.
            chosen = [
                i for n, i in self._informers.items() if n not in self._optional or i.has_synced
            ]
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(inf.wait_for_rv(rv) for inf in chosen))

    async def wait_for_writes(
        self, writes: Mapping[str, int | str], timeout: float | None = None
    ) -> None:
        """Wait until each kind's informer reflects the resourceVersion given for it.

        `writes` maps a kind to the resourceVersion of the last write to that kind;
        kinds without an informer are ignored (nothing caches them).
        """
        chosen = [
            (self._informers[kind], rv) for kind, rv in writes.items() if kind in self._informers
        ]
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(inf.wait_for_rv(rv) for inf, rv in chosen))

    def relist(self) -> None:
        """Force a consistent relist of every informer (their watches end); see
        `wait_for_resync` (which waits for the required ones)."""
        for inf in self._informers.values():
            inf.relist()

    async def wait_for_resync(self, timeout: float | None = None) -> bool:
        """True once every informer has completed a list started after the last
        `relist()` (at once if none was asked for); False on `timeout` (real seconds)."""
        try:
            async with asyncio.timeout(timeout):
                for inf in list(self._required().values()):
                    await inf.wait_for_resync()
        except TimeoutError:
            pending = [n for n, i in self._required().items() if i.resync_pending]
            _log.warning("cache.resync_timeout", pending=pending)
            return False
        return True

    def connected(self, grace: float = 30.0) -> tuple[bool, str]:
        """(True, "") when every informer has synced and has had no list or watch
        error since its last completed list or watch event, or for less than `grace`
        seconds (one dropped stream does not flap readiness); else (False,
        "<informer>: <last error>") for the first one that is not."""
        required = self._required()
        if not required:
            return False, "no informers"
        for name in sorted(required):
            ok, why = required[name].connected(grace)
            if not ok:
                return False, f"{name}: {why}"
        return True, ""

    async def stop(self) -> None:
        self._started = False
        await asyncio.gather(*(inf.stop() for inf in self._informers.values()))
