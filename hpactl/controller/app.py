"""``ControllerApp``: the controller's parts, assembled for one ``ControllerConfig``.

``async with ControllerApp(config, clock=clock) as app:`` opens a ``KubeSession``
(from ``config.client``: kubeconfig / master / qps / burst; every request is timed
out and counted in ``app.metrics``), creates the shared informers (HPAs, Pods,
Deployments / ReplicaSets / StatefulSets / ReplicationControllers, and Nodes but in
shadow mode), the REST mapper,
scale, status and event writers, the shared metrics fetcher, and the
:class:`~hpactl.controller.horizontal.HorizontalController` (``app.controller``),
(``hpactl.kube`` restmapper, scaling, status and the aggregating ``EventRecorder``,
whose writer runs as a background task), the ``hpactl.metrics`` shared fetcher, and
registers its informer handlers, starts the informers and (by default) waits for
their first list. Nothing is synced until someone asks:

* ``hpactl run`` calls ``app.controller.start_scheduling()`` when it leads
  (:mod:`hpactl.controller.run`);
* ``hpactl simulate`` drives it step by step, with leader election off and no
  supervisor::

      clock = VirtualClock(start)
      async with ControllerApp(config, clock=clock, env={}) as app:
          ...                       # write objects to the API, advance the clock
          await app.wait_for_rv(rv) # the caches reflect every write up to rv
          records = await app.controller.sync_all()

  ``clock`` drives every decision timestamp (``now``), the metrics-sharing window
  and the controller's schedule; the informers always run on a real clock (their
  backoff and timeouts are network time). ``sync_all`` empties the metrics cache
  first, so each step asks the metrics APIs afresh, and returns once the step's
  events are written. ``wait_for_rv`` waits on every informer, so an informer whose
  resource did not change moves forward only through watch bookmarks: run the
  emulator with a short ``bookmark_interval`` (e.g. 0.05 s) when stepping.

With ``config.shadow`` the controller gets a
:class:`~hpactl.controller.shadow.ShadowComparer` (``controller.shadow``): it decides and
compares with the writing controller, and never writes.

Keyword arguments: ``env`` (the ``OTEL_*`` variables; tracing is set up only when
``tracer`` is not given — ``{}`` turns it off), ``metrics`` (a ``ControllerMetrics``
to fill; one is made otherwise), ``tracer``, ``wait_for_sync`` (default True),
``sync_timeout`` (seconds to wait for the caches, default 60), ``call_timeout``
(each API / metrics call, default 10 s), ``master`` (overrides the API URL).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from types import TracebackType
from typing import Self

import structlog
from opentelemetry import trace
from yarl import URL

from hpactl.cache.factory import CRD_HPAS, HPAS, PODS, SharedInformers
from hpactl.cache.hpa_sources import HPASources
from hpactl.cache.projections import WORKLOAD_KINDS
from hpactl.clock import Clock, RealClock
from hpactl.config import ControllerConfig
from hpactl.controller.gather import Gatherer, MetricsSource
from hpactl.controller.horizontal import HorizontalController
from hpactl.controller.shadow import ShadowComparer, comparison_window
from hpactl.core.decide import CoreConfig
from hpactl.kube.events import EventRecorder
from hpactl.kube.restmapper import RestMapper
from hpactl.kube.session import KubeSession
from hpactl.metrics.client import RestMetricsClient
from hpactl.metrics.providers import ProviderSessions, RoutedMetricsSource
from hpactl.metrics.shared import SharedMetricsFetcher
from hpactl.model import featuregates as fg
from hpactl.model.hpa import CR_KEY_PREFIX
from hpactl.obs.metrics import ControllerMetrics
from hpactl.obs.tracing import Tracing, setup_tracing

__all__ = ["ControllerApp", "core_config"]

log = structlog.get_logger("hpactl.app")


def core_config(config: ControllerConfig) -> CoreConfig:
    """The decision core's settings from the flags and feature gates."""
    h = config.hpa
    gates = config.feature_gates
    return CoreConfig(
        tolerance=h.tolerance,
        downscale_stabilization=h.downscale_stabilization_window,
        cpu_initialization_period=h.cpu_initialization_period,
        initial_readiness_delay=h.initial_readiness_delay,
        scale_to_zero=gates.enabled(fg.HPA_SCALE_TO_ZERO),
        configurable_tolerance=gates.enabled(fg.HPA_CONFIGURABLE_TOLERANCE),
        pod_level_resources=gates.enabled(fg.POD_LEVEL_RESOURCES),
        hpa_generation=gates.enabled(fg.HPA_GENERATION),
        selection_strategy=gates.enabled(fg.HPA_SELECTION_STRATEGY),
        metric_source=gates.enabled(fg.HPA_METRIC_SOURCE),
        metric_fallback=gates.enabled(fg.HPA_EXTERNAL_METRIC_FALLBACK),
        configurable_sync_period=gates.enabled(fg.HPA_CONFIGURABLE_SYNC_PERIOD),
        suspend=gates.enabled(fg.HPA_SUSPEND),
    )


def _hpa_sources(cfg: ControllerConfig, informers: SharedInformers) -> HPASources:
    """The HPAs ``--hpa-sources`` serves. With ``crd``, built-in HPAs are listed and
    watched even when not served (read-only): they name the conflicting targets.
    Without ``crd``, no request ever goes to autoscaling.hpactl.dev."""
    crd = informers.crd_hpas() if "crd" in cfg.hpa_sources else None
    return HPASources(builtin=informers.hpas(), crd=crd, serve_builtin="builtin" in cfg.hpa_sources)


def _add_hpa_handlers(hpas: HPASources, controller: HorizontalController) -> None:
    """The controller's handlers on each served informer, with the controller's keys
    (``namespace/hhpa:name`` for hpactl's own HPAs), and the conflict watch."""
    builtin, crd = hpas.builtin, hpas.crd
    served = hpas.informers
    if builtin is not None and builtin in served:
        builtin.add_handler(controller.on_add, controller.on_update, controller.on_delete)
    if crd is not None:

        def cr_key(key: str) -> str:
            ns, _, name = key.partition("/")
            return f"{ns}/{CR_KEY_PREFIX}{name}"

        crd.add_handler(
            lambda k, o: controller.on_add(cr_key(k), o),
            lambda k, old, new: controller.on_update(cr_key(k), old, new),
            lambda k, o: controller.on_delete(cr_key(k), o),
        )
        if builtin is not None:
            # A built-in HPA coming or going starts or ends a conflict at once.
            builtin.add_handler(
                controller.on_builtin_change,
                controller.on_builtin_change,
                controller.on_builtin_change,
            )


class ControllerApp:
    """See the module docstring."""

    def __init__(
        self,
        config: ControllerConfig,
        *,
        clock: Clock | None = None,
        env: Mapping[str, str] | None = None,
        metrics: ControllerMetrics | None = None,
        tracer: trace.Tracer | None = None,
        wait_for_sync: bool = True,
        sync_timeout: float = 60.0,
        call_timeout: float = 10.0,
        master: str | None = None,
        user_agent: str | None = None,
    ) -> None:
        self.config = config
        self._user_agent = user_agent
        self.clock: Clock = clock or RealClock()
        self._env = dict(env or {})
        self.metrics = metrics or ControllerMetrics()
        self._tracer = tracer
        self._tracing: Tracing | None = None
        self._wait = wait_for_sync
        self._sync_timeout = sync_timeout
        self.call_timeout = call_timeout
        self._master = master
        self.session: KubeSession | None = None
        self._api_host = "none"
        self._informers: SharedInformers | None = None
        self._controller: HorizontalController | None = None
        self.fetcher: SharedMetricsFetcher | None = None
        self._providers: ProviderSessions | None = None
        self.recorder: EventRecorder | None = None
        self._recorder_task: asyncio.Task[None] | None = None

    # -- accessors --------------------------------------------------------------------

    @property
    def controller(self) -> HorizontalController:
        if self._controller is None:
            raise RuntimeError("ControllerApp is not open (use `async with`)")
        return self._controller

    @property
    def informers(self) -> SharedInformers:
        if self._informers is None:
            raise RuntimeError("ControllerApp is not open (use `async with`)")
        return self._informers

    @property
    def caches_synced(self) -> bool:
        return self._informers is not None and self._informers.has_synced

    # -- lifecycle --------------------------------------------------------------------

    def _on_request(self, verb: str, _resource: str, code: str, seconds: float) -> None:
        self.metrics.api_requests.labels(verb=verb, code=code).inc()
        self.metrics.api_request_duration.labels(verb=verb).observe(seconds)
        self.metrics.observe_rest_request(verb, self._api_host, code, seconds)

    def _on_throttle(self, verb: str, seconds: float) -> None:
        self.metrics.observe_rate_limiter(verb, self._api_host, seconds)

    async def __aenter__(self) -> Self:
        try:
            await self._open()
        except BaseException:
            await self.close()
            raise
        return self

    async def _open(self) -> None:
        cfg = self.config
        if self._tracer is None:
            self._tracing = setup_tracing(self._env)
            self._tracer = self._tracing.tracer
        tracer = self._tracer
        session = KubeSession(
            kubeconfig=cfg.client.kubeconfig,
            master=self._master or cfg.client.master,
            qps=cfg.client.qps,
            burst=cfg.client.burst,
            request_timeout=self.call_timeout,
            on_request=self._on_request,
            user_agent=self._user_agent,
        )
        await session.open()
        self.session = session
        # client-go's ``host`` label: the API server's host:port.
        self._api_host = URL(session.host).raw_authority.rpartition("@")[2] or "none"
        session.on_throttle = self._on_throttle
        period = cfg.hpa.sync_period.total_seconds()
        # Real clock: informer timing is network time. Lists are streamed (watch-list,
        # falling back to LIST on servers without it): at 30,000 pods the first list is
        # never one body to decode (docs/performance.md, goal 2 of issue 17).
        informers = SharedInformers(session, watch_list=True)
        self._informers = informers
        hpas = _hpa_sources(cfg, informers)
        pods = informers.pod_lister()
        workloads = informers.workload_lister(tuple(WORKLOAD_KINDS))
        # Node labels, for the topology skew reported after a rescale (shadow mode
        # rescales nothing, and its read-only role does not grant nodes).
        nodes = None if cfg.shadow else informers.node_lister()
        mapper = RestMapper(session, monotonic=self.clock.monotonic, timeout=self.call_timeout)

        def pod_labels(namespace: str, name: str) -> Mapping[str, str] | None:
            p = pods.get(namespace, name)
            return None if p is None else p.labels

        client = RestMetricsClient(session, mapper=mapper, timeout=self.call_timeout)
        self.fetcher = SharedMetricsFetcher(
            client, clock=self.clock, period=period, pod_labels=pod_labels
        )
        metrics_source: MetricsSource = self.fetcher
        if cfg.feature_gates.enabled(fg.HPA_METRIC_SOURCE):
            # KEP-6382 / KEP-4261: some metrics from other API groups or providers.
            self._providers = ProviderSessions(
                cfg.metric_providers,
                mapper=mapper,
                qps=cfg.client.qps,
                burst=cfg.client.burst,
                timeout=self.call_timeout,
            )
            await self._providers.open()
            metrics_source = RoutedMetricsSource(
                self.fetcher,
                cfg.metric_providers,
                self._providers.clients,
                session,
                mapper=mapper,
                timeout=self.call_timeout,
            )
        recorder = EventRecorder(session, clock=self.clock, timeout=self.call_timeout)
        self.recorder = recorder
        self._recorder_task = asyncio.create_task(recorder.run(), name="event-recorder")
        gatherer = Gatherer(
            session=session,
            pods=pods,
            workloads=workloads,
            mapper=mapper,
            metrics=metrics_source,
            tracer=tracer,
            call_timeout=self.call_timeout,
            nodes=nodes,
        )
        gates = cfg.feature_gates
        controller = HorizontalController(
            hpas=hpas,
            gatherer=gatherer,
            session=session,
            recorder=recorder,
            clock=self.clock,
            config=core_config(cfg),
            sync_period=period,
            concurrency=cfg.hpa.concurrent_syncs,
            tracer=tracer,
            metrics=self.metrics,
            fetcher=self.fetcher,
            hpa_generation=gates.enabled(fg.HPA_GENERATION),
            stale_consistency=gates.enabled(fg.STALE_CONTROLLER_CONSISTENCY_HPA),
            call_timeout=self.call_timeout,
            decision_records=cfg.decision_records,
            topology_skew_events=gates.enabled(fg.HPA_TOPOLOGY_SKEW_EVENTS),
        )
        if cfg.shadow:
            # Decide beside the writing controller and compare; never write.
            controller.shadow = ShadowComparer(
                clock=self.clock,
                config=controller.config,
                window=comparison_window(period),
                metrics=self.metrics,
            )
            controller.records.shadow = True  # records say nothing was written
        self._controller = controller

        def cache_check(kind: str) -> str | None:
            for name in (HPAS, CRD_HPAS, PODS, kind):
                inf = informers.informer_for_kind(name)
                ok, why = (True, "") if inf is None else inf.connected(0.0)
                if not ok and inf is not None and inf.has_synced:
                    return f"{name}: {why}"
            return None

        controller.cache_check = cache_check
        _add_hpa_handlers(hpas, controller)
        informers.start()
        if self._wait and not await self.wait_for_cache_sync(self._sync_timeout):
            raise TimeoutError(f"informer caches did not sync within {self._sync_timeout:g}s")

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        ok = await self.informers.wait_for_cache_sync(timeout)
        self.metrics.caches_synced.set(1 if ok else 0)
        return ok

    async def wait_for_rv(self, rv: int | str, timeout: float | None = 30.0) -> None:
        """Wait until every informer reflects resourceVersion >= ``rv``."""
        await self.informers.wait_for_rv(rv, timeout)

    async def close(self) -> None:
        if self._controller is not None:
            await self._controller.stop_scheduling()
        if self._informers is not None:
            await self._informers.stop()
        if self._recorder_task is not None and self.recorder is not None:
            # Write what is queued (bounded), then stop the writer.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.call_timeout):
                    await self.recorder.flush()
            self._recorder_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recorder_task
            self._recorder_task = None
        if self._providers is not None:
            await self._providers.close()
            self._providers = None
        if self.session is not None:
            await self.session.close()
            self.session = None
        if self._tracing is not None:
            self._tracing.shutdown()
            self._tracing = None

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
