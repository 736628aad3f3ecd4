"""``hpactl run``: the controller process.

``run_controller(config) -> int`` sets up logging and tracing, serves ``/metrics``,
``/healthz`` and ``/readyz``, opens a :class:`ControllerApp`, waits for the caches,
then syncs — directly, or only while holding the leader Lease when
``--leader-elect`` is on:

* becoming leader starts the per-HPA schedule with empty histories (as a new
  kube-controller-manager leader does);
* every write (scale, status, Events) is fenced by ``LeaderElector.holds_lease``:
  once this replica cannot prove the lease is still its own (a renewal older than
  the renew deadline, e.g. after the process was paused, or the lease seen held by
  another), nothing more is sent, even before leadership is formally lost;
* losing the lease stops every sync at once (no grace) and relists every cache;
  leading again waits for that relist, so no decision rests on state cached before
  the loss;
* SIGTERM / SIGINT: stop scheduling, letting syncs in flight finish for at most
  ``SHUTDOWN_GRACE`` seconds, release the lease, flush traces, exit 0.

With the ``HPAHistoryPersistence`` gate (:mod:`hpactl.controller.persistence`), a new
leader reads the histories the previous one persisted before its first sync, writes
them back once per sync period while it leads, and once more before it releases the
lease on shutdown.

With ``--shards N`` > 1 (:class:`~hpactl.kube.shards.ShardManager`) there is no single
leader: the replicas share N shards, each held through its own Lease; a replica syncs
the HPAs of the shards it holds (each sync and its writes fenced by that shard's
lease), loads a shard's persisted history when it wins it, and flushes it when it
hands the shard off. ``/readyz?verbose`` and ``hpactl_shard_held`` say which shards it
holds. Losing a shard without grace stops its syncs at once; when none is left, the
caches are relisted before the next shard is taken, as after a lost leader lease.

With ``--shadow`` (:mod:`hpactl.controller.shadow`) there is no leader election
whatever ``--leader-elect`` says, the session refuses every mutating request, and the
per-HPA schedule starts once the caches are synced: the controller decides and
compares, and writes nothing.

``/readyz`` is ready when the API server answers, every informer is synced and
connected, and leader election has settled: leader, or standby (not while starting,
after losing the lease until the caches are relisted, nor while a new leader waits
for that relist); see ``hpactl.controller.serving.readiness``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from hpactl.clock import RealClock
from hpactl.config import ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.controller.persistence import HeldShard, HistoryKeeper
from hpactl.controller.preflight import preflight
from hpactl.controller.serving import debug_endpoints, readiness, secure_serving
from hpactl.kube.leader import LeaderElector, default_identity
from hpactl.kube.session import check_server_certificate, default_user_agent
from hpactl.kube.shards import ShardManager, shard_lease_name
from hpactl.model import featuregates as fg
from hpactl.obs.logging import configure_logging
from hpactl.obs.metrics import ControllerMetrics
from hpactl.obs.server import ObservabilityServer
from hpactl.obs.tracing import setup_tracing

__all__ = [
    "GC_THRESHOLDS",
    "SHUTDOWN_GRACE",
    "YOUNG_PASS_EVERY",
    "collect_young",
    "run_controller",
    "tune_gc",
]

SHUTDOWN_GRACE = 10.0

# Collector thresholds, set before the informers start. With CPython's defaults
# (700, 10, 10) a process caching 10,000 HPAs and 30,000 pods runs a full collection
# several times per sync period, each blocking the loop for 0.3-0.9 s; the initial
# sync of 30,000 pods ran ~10 of them over the growing heap (up to 1.7 s). A young
# generation of 10,000 objects and a middle one of 10 young passes: a middle pass
# walks the survivors of at most 10 young passes (with 50 it walked up to 500,000
# objects, ~200 ms at 10,000 HPAs). Reference cycles are still collected.
GC_THRESHOLDS = (10_000, 10, 100)

log = structlog.get_logger("hpactl.run")


def tune_gc() -> None:
    """Once the caches have synced: move what is alive now out of the collector's reach.

    What is alive once the caches hold the cluster (the cached projections, the
    informers, the modules) lives as long as the process; ``gc.freeze()`` moves it to
    the permanent generation, which no collection walks, so a full pass walks only
    what was allocated since: at 10,000 HPAs ~0.7 million fewer objects, a full pass
    of ~0.5 s CPU becoming ~0.1 s. Only the young generations are collected first: a
    full collection here would itself block the loop for ~0.5 s. Frozen objects are
    still freed by reference counting (a cached projection that is replaced is); only
    a reference cycle among them that became garbage later would never be reclaimed,
    and the caches make none. Never frozen again: what a later freeze caught in flight
    (tasks, responses, exceptions: often cycles) would leak for good.
    """
    gc.collect(1)
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


# Seconds between young-generation passes run on the clock (every tenth one a
# middle-generation pass too); see `collect_young`.
YOUNG_PASS_EVERY = 0.5


async def collect_young(every: float = YOUNG_PASS_EVERY) -> None:
    """Collect the young generations on a clock, not only on allocation counts.

    CPython counts a young generation as allocations minus deallocations, and a
    deallocation of an old object counts too: in steady state each sync frees the
    previous sync's records as it makes new ones, so the count stays low while the
    young generation grows to hundreds of thousands of objects, and the pass that
    finally comes blocks the loop for 100-200 ms at 10,000 HPAs. A pass every
    `every` seconds walks only what that time allocated (and every tenth one, the
    middle generation: what survived the last ten). Runs until cancelled.
    """
    n = 0
    while True:
        await asyncio.sleep(every)
        n += 1
        gc.collect(1 if n % 10 == 0 else 0)


def run_controller(config: ControllerConfig) -> int:
    """Run until SIGTERM/SIGINT; the process exit code (0 after a clean shutdown)."""
    problem = preflight(config, os.environ)
    if problem is not None:  # a kubeconfig or port mistake: one line, nothing started
        print(f"hpactl run: error: {problem.message}", file=sys.stderr)
        return problem.exit_code
    configure_logging(config.log_format, config.verbosity, vmodule=config.vmodule)
    try:
        return asyncio.run(_main(config))
    except KeyboardInterrupt:
        return 0


def _shards_check(
    config: ControllerConfig,
    clock: RealClock,
    state: dict[str, str],
    managers: list[ShardManager],
) -> Callable[[], tuple[bool, str]]:
    """/readyz's ``shards`` check: the lease set was listed within a lease duration.

    A replica that cannot list the Leases (an RBAC mistake, an outage) can take no
    shard: it must not look ready next to replicas that do the work.
    """
    bound = config.leader_election.lease_duration.total_seconds()

    def check() -> tuple[bool, str]:
        listed = managers[0].listed_at if managers else None
        if listed is None or clock.monotonic() - listed > bound:
            return False, f"the shard Leases were not listed within {bound:g}s ({state['shards']})"
        return True, state["shards"]

    return check


async def _main(config: ControllerConfig) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    tracing = setup_tracing(os.environ)
    metrics = ControllerMetrics()
    clock = RealClock()
    state = {"leader": "starting", "shards": ""}
    identity = default_identity()
    managers: list[ShardManager] = []  # the shard manager, once _serve starts it
    server: ObservabilityServer | None = None
    try:
        # A certificate that does not verify is a configuration error, not an outage:
        # fail at once (one line, exit 1) rather than retry for ever.
        await check_server_certificate(
            kubeconfig=config.client.kubeconfig, master=config.client.master
        )
        gc.set_threshold(*GC_THRESHOLDS)  # for the initial sync as well (see above)
        async with ControllerApp(
            config,
            clock=clock,
            metrics=metrics,
            tracer=tracing.tracer,
            wait_for_sync=False,
            # The replica's identity in the API server's audit log (and the emulator's).
            user_agent=f"{default_user_agent()} ({identity})",
        ) as app:
            shards = _shards_check(config, clock, state, managers) if config.shards > 1 else None
            server = ObservabilityServer(
                metrics,
                readiness(app, lambda: state["leader"], shards=shards),
                config.metrics_bind_address,
                config.health_probe_bind_address,
                secure=secure_serving(config, app.session),
                debug=debug_endpoints(config, app),
            )
            await server.start()
            log.info(
                "hpactl.serving",
                metrics_scheme=server.metrics_scheme,
                **{f"{k}_port": v for k, v in server.ports.items()},
            )
            return await _serve(config, app, metrics, clock, state, stop, identity, managers)
    except Exception as exc:  # other startup failures: one line, before hpactl.stopped
        log.error("hpactl.failed", error=f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        if server is not None:
            await server.stop()
        tracing.shutdown()
        if server is not None:  # it started: say it stopped
            log.info("hpactl.stopped")


async def _serve(
    config: ControllerConfig,
    app: ControllerApp,
    metrics: ControllerMetrics,
    clock: RealClock,
    state: dict[str, str],
    stop: asyncio.Event,
    identity: str,
    managers: list[ShardManager],
) -> int:
    stopper = asyncio.ensure_future(stop.wait())
    synced = asyncio.ensure_future(app.wait_for_cache_sync(None))
    await asyncio.wait({stopper, synced}, return_when=asyncio.FIRST_COMPLETED)
    if stop.is_set():
        synced.cancel()
        log.info("hpactl.shutdown", phase="before-sync")
        return 0
    tune_gc()
    controller = app.controller
    le = config.leader_election
    elector: LeaderElector | None = None
    elector_task: asyncio.Task[None] | None = None
    pending_stops: set[asyncio.Task[None]] = set()
    background: set[asyncio.Task[None]] = set()
    background.add(asyncio.ensure_future(collect_young()))  # cancelled at shutdown

    lost_once = False
    keeper: HistoryKeeper | None = None
    if config.feature_gates.enabled(fg.HPA_HISTORY_PERSISTENCE) and not config.shadow:
        assert app.session is not None  # open inside `async with ControllerApp`
        keeper = HistoryKeeper(
            controller,
            app.session,
            namespace=le.resource_namespace,
            lock_name=le.resource_name,
            writer=identity,
            clock=clock,
            period=controller.sync_period,
            metrics=metrics,
        )

    def epoch() -> int:
        return elector.transitions if elector is not None else 0

    async def lead_with_history(resynced: bool) -> None:
        # Read what the previous leader persisted before the first sync, then keep
        # writing it back once per period for as long as this replica leads.
        assert keeper is not None
        at = epoch()
        histories = await keeper.load(None, at)
        if state["leader"] != "leader":
            return  # lost while reading
        controller.start_scheduling(histories)
        log.info(
            "hpactl.leading",
            identity=identity,
            histories=len(histories),
            **({"resynced": True} if resynced else {}),
        )
        await keeper.run(lambda: {None: HeldShard(None, at, None)})

    async def lead_after_resync() -> None:
        # The caches were relisted when leadership was lost; decide on nothing
        # older than that relist.
        await app.informers.wait_for_resync(None)
        if state["leader"] == "resyncing":
            state["leader"] = "leader"
            if keeper is not None:
                await lead_with_history(resynced=True)
                return
            controller.start_scheduling()
            log.info("hpactl.leading", identity=identity, resynced=True)

    def started() -> Awaitable[None] | None:
        metrics.leader.set(1)
        if elector is not None:
            metrics.leader_lease(le.resource_name, True)
        if lost_once:
            state["leader"] = "resyncing"
            return lead_after_resync()
        state["leader"] = "leader"
        if keeper is not None:
            return lead_with_history(resynced=False)
        controller.start_scheduling()
        log.info("hpactl.leading", identity=identity)
        return None

    async def stand_by() -> None:
        await controller.stop_scheduling(None)
        await app.informers.wait_for_resync(None)
        if state["leader"] == "lost":
            state["leader"] = "standby"

    def stopped() -> None:
        nonlocal lost_once
        lost_once = True
        metrics.leader.set(0)
        metrics.leader_lease(le.resource_name, False)
        # Writes are already refused (the session's fence); stop syncing at once.
        state["leader"] = "lost"
        # What was cached while leading (or while paused) is not trusted again:
        # every cache is relisted before this replica may lead once more.
        app.informers.relist()
        t = asyncio.ensure_future(stand_by())
        pending_stops.add(t)
        t.add_done_callback(pending_stops.discard)
        log.warning("hpactl.stopped_leading", identity=identity)

    def new_leader(who: str) -> None:
        if who == identity:
            return
        if state["leader"] in ("leader", "resyncing"):
            state["leader"] = "lost"  # stopped() follows as soon as run() returns
        elif state["leader"] == "starting":
            state["leader"] = "standby"
        log.info("hpactl.standby", leader=who)

    async def elect(elector: LeaderElector) -> None:
        # run() returns when leadership is lost; then stand by and try again.
        while True:
            await elector.run()

    # -- shards (--shards > 1) -----------------------------------------------------------
    held: dict[int | None, HeldShard] = {}
    relist_pending = False
    manager: ShardManager | None = None

    def shards_changed() -> None:
        names = ",".join(str(i) for i in sorted(k for k in held if k is not None))
        state["shards"] = f"holding {names or 'none'} of {config.shards}"
        state["leader"] = "leader" if held else "standby"
        metrics.leader.set(1 if held else 0)
        metrics.shards_held.set(len(held))

    async def shard_acquired(shard: int) -> None:
        assert manager is not None
        if relist_pending:
            # Every shard was lost without grace (a pause, an outage): decide on
            # nothing cached before the relist that followed.
            await app.informers.wait_for_resync(None)
        at = manager.epoch(shard)
        histories = await keeper.load(shard, at) if keeper is not None else {}
        if not manager.holds(shard):
            return  # lost while reading
        fence = functools.partial(manager.holds, shard)
        controller.start_shard(shard, fence, histories)
        held[shard] = HeldShard(shard, at, fence)
        metrics.shard_held.labels(shard=str(shard)).set(1)
        metrics.leader_lease(shard_lease_name(le.resource_name, shard), True)
        shards_changed()
        log.info(
            "hpactl.shard_acquired",
            shard=shard,
            epoch=at,
            hpas=len(controller.shard_keys(shard)),
            histories=len(histories),
            **{"held": sorted(k for k in held if k is not None)},
        )

    async def shard_releasing(shard: int) -> None:
        # A hand-off: finish the syncs in flight, write the history, then let go.
        await controller.drain_shard(shard, SHUTDOWN_GRACE)
        h = held.get(shard)
        if keeper is not None and h is not None:
            await keeper.flush(h)
            keeper.forget(shard)
        _drop_shard(shard)
        log.info(
            "hpactl.shard_released",
            shard=shard,
            **{"held": sorted(k for k in held if k is not None)},
        )

    def shard_lost(shard: int) -> None:
        nonlocal relist_pending
        _drop_shard(shard)
        if keeper is not None:
            keeper.forget(shard)
        if not held and not relist_pending:
            relist_pending = True
            app.informers.relist()
            t = asyncio.ensure_future(_relisted())
            background.add(t)
            t.add_done_callback(background.discard)
        log.warning(
            "hpactl.shard_lost", shard=shard, **{"held": sorted(k for k in held if k is not None)}
        )

    async def _relisted() -> None:
        nonlocal relist_pending
        await app.informers.wait_for_resync(None)
        relist_pending = False

    def _drop_shard(shard: int) -> None:
        held.pop(shard, None)
        controller.forget_shard(shard)
        with contextlib.suppress(KeyError):
            metrics.shard_held.remove(str(shard))
        metrics.leader_lease(shard_lease_name(le.resource_name, shard), False)
        shards_changed()

    manager_task: asyncio.Task[None] | None = None
    keeper_task: asyncio.Task[None] | None = None

    if config.shadow:
        assert app.session is not None  # open inside `async with ControllerApp`
        # Shadow mode writes nothing. The controller never sends a write; as a
        # guarantee, the session refuses every mutating request (NotLeader) too. No
        # Lease either: leader election is off, whatever --leader-elect says.
        app.session.write_fence = lambda: False
        state["leader"] = "leader"  # nothing to elect: ready once the caches are
        controller.start_scheduling()
        log.info(
            "hpactl.shadow",
            writes="none",
            leader_election="off",
            leader_elect_flag_ignored=le.leader_elect,
            comparison_window=controller.shadow.window if controller.shadow else None,
        )
    elif config.shards > 1:
        assert app.session is not None  # open inside `async with ControllerApp`
        controller.shards = config.shards
        manager = ShardManager(
            app.session,
            namespace=le.resource_namespace,
            name=le.resource_name,
            shards=config.shards,
            identity=identity,
            lease_duration=le.lease_duration.total_seconds(),
            renew_deadline=le.renew_deadline.total_seconds(),
            retry_period=le.retry_period.total_seconds(),
            clock=clock,
            on_acquired=shard_acquired,
            on_releasing=shard_releasing,
            on_lost=shard_lost,
        )
        # Per retry period: one LIST, the member Lease and every held shard's Lease; a
        # replica may come to hold all N. Their client must never make a renewal late.
        lease_qps = 2.0 * (config.shards + 2) / le.retry_period.total_seconds()
        app.session.raise_client_limit(
            "coordination.k8s.io", lease_qps, config.shards + 2 + config.client.burst
        )
        shards_changed()
        for shard in range(config.shards):  # one elector per shard Lease: backup until won
            metrics.leader_lease(shard_lease_name(le.resource_name, shard), False)
        managers.append(manager)
        manager_task = asyncio.create_task(manager.run(), name="shard-manager")
        if keeper is not None:
            keeper_task = asyncio.create_task(keeper.run(lambda: held), name="history-keeper")
        log.info(
            "hpactl.sharding",
            shards=config.shards,
            lease_prefix=f"{le.resource_namespace}/{le.resource_name}-shard-",
            identity=identity,
            history=keeper is not None,
        )
        if keeper is None:
            log.warning(
                "hpactl.sharding_without_history",
                effect="a shard that moves between replicas starts with empty histories",
                fix="--feature-gates=HPAHistoryPersistence=true",
            )
    elif le.leader_elect:
        assert app.session is not None  # open inside `async with ControllerApp`
        elector = LeaderElector(
            app.session,
            namespace=le.resource_namespace,
            name=le.resource_name,
            identity=identity,
            lease_duration=le.lease_duration.total_seconds(),
            renew_deadline=le.renew_deadline.total_seconds(),
            retry_period=le.retry_period.total_seconds(),
            clock=clock,
            on_started_leading=started,
            on_stopped_leading=stopped,
            on_new_leader=new_leader,
        )
        # Every write checks, just before it is sent, that the lease is provably ours.
        app.session.write_fence = elector.holds_lease
        metrics.leader_lease(le.resource_name, False)  # backup until it wins
        elector_task = asyncio.create_task(elect(elector), name="leader-election")
        log.info(
            "hpactl.electing",
            lease=f"{le.resource_namespace}/{le.resource_name}",
            identity=identity,
        )
    else:
        work = started()
        if work is not None:
            t = asyncio.ensure_future(work)
            background.add(t)
            t.add_done_callback(background.discard)

    waits: set[asyncio.Future[Any]] = {stopper}
    for task in (elector_task, manager_task):
        if task is not None:
            waits.add(task)
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    code = 0
    for task in (elector_task, manager_task):
        if task is not None and task.done() and not stop.is_set():
            exc = task.exception() if not task.cancelled() else None
            log.error("hpactl.leader_election_crashed", error=repr(exc))
            code = 1
    log.info("hpactl.shutdown", grace=SHUTDOWN_GRACE)
    if manager_task is not None:
        # Every held shard is handed off (syncs finish, history written), its lease
        # released, and this replica's member lease deleted.
        manager_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            async with asyncio.timeout(SHUTDOWN_GRACE * 2):
                await manager_task
    # In-flight syncs finish (bounded); then leadership ends and the lease is freed.
    await controller.stop_scheduling(SHUTDOWN_GRACE)
    if keeper is not None and manager_task is None and (elector is None or elector.holds_lease()):
        # The last period's entries, before the lease goes to the next leader.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SHUTDOWN_GRACE):
                await keeper.flush(HeldShard(None, epoch(), None))
    ending = [t for t in (keeper_task, *background) if t is not None]
    for task in ending:
        task.cancel()
    await asyncio.gather(*ending, return_exceptions=True)
    if elector_task is not None:
        # Cancelling the elector while it leads releases the lease (ReleaseOnCancel).
        elector_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await elector_task
        if elector is not None and elector.leader_identity == "":
            log.info("hpactl.lease_released", identity=identity)
    if pending_stops:
        # A stand-by after a lost lease waits for a relist that an unreachable API
        # server may never give: shutting down must not wait for it.
        for t in pending_stops:
            t.cancel()
        await asyncio.gather(*pending_stops, return_exceptions=True)
    metrics.leader.set(0)
    if elector is not None:
        metrics.leader_lease(le.resource_name, False)
    stopper.cancel()
    return code
