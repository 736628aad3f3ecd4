"""Each HPA's history kept in the cluster across failovers (gate ``HPAHistoryPersistence``).

Upstream keeps the stabilization recommendations and scale events in memory, so a new
kube-controller-manager leader starts empty and an HPA held up by its scale-down
window may drop at once. With the gate on, :class:`HistoryKeeper` keeps them in
ConfigMaps in hpactl's namespace (:class:`~hpactl.kube.history_store.HistoryStore`),
one set per shard:

* ``load(shard, epoch)`` runs after the lease is won and before the shard's first
  sync. It returns the histories of the HPAs that still exist with the same uid; a
  record that is corrupt, oversized, of another HPA or written by a newer owner is
  dropped with a log line, and that HPA starts empty, as upstream.
* ``flush(shard, epoch, fence)`` writes what the shard's HPAs' future decisions can
  still use (:func:`~hpactl.core.history_codec.compact_history` with each HPA's own
  windows and policy periods), only the parts that changed. ``run`` flushes every held
  shard once per sync period; a graceful hand-off or shutdown flushes once more before
  the lease is released, so a rolling update loses nothing and a crash loses at most
  one period of entries.
* Every write is fenced by the shard's lease and is a compare-and-swap stamped with
  the lease's transitions (the epoch): a replica that lost the lease cannot overwrite
  what the next owner wrote (``HistoryFenced``).

``shard`` is None without ``--shards``: one set of ConfigMaps named ``<lock>-history``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import structlog

from hpactl.clock import Clock
from hpactl.controller.horizontal import HorizontalController
from hpactl.core.behavior import get_longest_policy_period
from hpactl.core.decide import CoreConfig
from hpactl.core.history import History
from hpactl.core.history_codec import HistoryRecord, compact_history
from hpactl.kube.errors import KubeError
from hpactl.kube.history_store import HistoryFenced, HistoryStore
from hpactl.kube.session import KubeSession, fenced_by
from hpactl.model.hpa import HPA
from hpactl.obs.metrics import ControllerMetrics

__all__ = ["HeldShard", "HistoryKeeper", "history_horizons"]

log = structlog.get_logger("hpactl.history")


def history_horizons(hpa: HPA, config: CoreConfig) -> tuple[float, float, float]:
    """(longest stabilization window, longest scale-up period, longest scale-down period).

    What ``compact_history`` may keep for ``hpa``: an HPA without ``behavior`` uses the
    downscale-stabilization flag and records no scale events.
    """
    flag_window = config.downscale_stabilization.total_seconds()
    b = hpa.spec.behavior
    if b is None:
        return flag_window, 0.0, 0.0
    up_window = float(b.scale_up.stabilization_window_seconds or 0)
    down = b.scale_down.stabilization_window_seconds
    down_window = flag_window if down is None else float(down)
    return (
        max(up_window, down_window),
        float(get_longest_policy_period(b.scale_up)),
        float(get_longest_policy_period(b.scale_down)),
    )


@dataclass(frozen=True, slots=True)
class HeldShard:
    """A shard (None: all HPAs, one leader) as held now: its lease epoch and fence."""

    shard: int | None
    epoch: int
    fence: Callable[[], bool] | None


class HistoryKeeper:
    """See the module docstring."""

    def __init__(
        self,
        controller: HorizontalController,
        session: KubeSession,
        *,
        namespace: str,
        lock_name: str,
        writer: str,
        clock: Clock,
        period: float,
        max_object_bytes: int = 900 * 1024,
        on_fenced: Callable[[int | None], None] | None = None,
        metrics: ControllerMetrics | None = None,
    ) -> None:
        self._c = controller
        self._s = session
        self.namespace = namespace
        self.lock_name = lock_name
        self.writer = writer
        self._clock = clock
        self.period = period
        self._max_bytes = max_object_bytes
        self._stores: dict[int | None, HistoryStore] = {}
        self._on_fenced = on_fenced
        self._metrics = metrics

    def store_name(self, shard: int | None) -> str:
        base = f"{self.lock_name}-history"
        return base if shard is None else f"{base}-{shard}"

    def _store(self, shard: int | None) -> HistoryStore:
        store = self._stores.get(shard)
        if store is None:
            store = self._stores[shard] = HistoryStore(
                self._s,
                namespace=self.namespace,
                name=self.store_name(shard),
                writer=self.writer,
                max_object_bytes=self._max_bytes,
            )
        return store

    def _mine(self, key: str, shard: int | None) -> bool:
        return shard is None or self._c.shard_of(key) == shard

    async def load(self, shard: int | None, epoch: int) -> dict[str, History]:
        """The persisted histories of ``shard``'s HPAs that may be trusted (never raises)."""
        store = self._store(shard)
        try:
            # Loaded only while holding the lease at ``epoch`` (see HistoryStore.load).
            result = await store.load(epoch=epoch, adopt_newer=True)
        except (KubeError, TimeoutError) as exc:
            log.warning(
                "hpactl.history_unreadable",
                history=self.store_name(shard),
                error=str(exc),
                effect="every HPA of the shard starts with an empty history",
            )
            return {}
        for problem in result.problems:
            log.warning("hpactl.history_dropped", history=self.store_name(shard), problem=problem)
        out: dict[str, History] = {}
        stale = 0
        for key, rec in result.records.items():
            ns, _, name = key.partition("/")
            hpa = self._c.hpas.get(ns, name)
            if hpa is None or not self._mine(key, shard) or (rec.uid and rec.uid != hpa.uid):
                stale += 1  # deleted, recreated, or moved to another shard since
                continue
            out[key] = rec.history
        log.info(
            "hpactl.history_loaded",
            history=self.store_name(shard),
            hpas=len(out),
            stale=stale,
            objects=result.objects,
            bytes=result.bytes,
        )
        return out

    def records(self, shard: int | None) -> dict[str, HistoryRecord]:
        """What ``flush`` would write for ``shard`` now: each live HPA's compacted history."""
        now = self._clock.now()
        config = self._c.config
        out: dict[str, HistoryRecord] = {}
        for key, history in list(self._c.history.items()):
            if not self._mine(key, shard):
                continue
            ns, _, name = key.partition("/")
            hpa = self._c.hpas.get(ns, name)
            if hpa is None:
                continue
            window, up, down = history_horizons(hpa, config)
            kept = compact_history(history, now, window=window, up_period=up, down_period=down)
            if kept != History():
                out[key] = HistoryRecord(hpa.uid, kept)
        return out

    async def flush(self, held: HeldShard) -> int:
        """Write ``held``'s histories (changed parts only); the number of objects written.

        Errors are logged, not raised (the next period tries again), except that a
        newer owner's history (``HistoryFenced``) is reported through ``on_fenced``.
        """
        store = self._store(held.shard)
        try:
            with fenced_by(held.fence):
                n = await store.save(
                    self.records(held.shard), epoch=held.epoch, now=self._clock.now()
                )
        except HistoryFenced as exc:
            self._count("fenced")
            log.warning(
                "hpactl.history_fenced", history=self.store_name(held.shard), error=str(exc)
            )
            if self._on_fenced is not None:
                self._on_fenced(held.shard)
            return 0
        except (KubeError, TimeoutError) as exc:
            self._count("error")
            log.warning(
                "hpactl.history_write_failed", history=self.store_name(held.shard), error=str(exc)
            )
            return 0
        self._count("written", n)
        if n:
            log.debug("hpactl.history_written", history=self.store_name(held.shard), objects=n)
        return n

    async def run(self, held: Callable[[], Mapping[int | None, HeldShard]]) -> None:
        """Flush every held shard once per period, until cancelled."""
        while True:
            await self._clock.sleep(self.period)
            for h in list(held().values()):
                await self.flush(h)

    def _count(self, result: str, n: int = 1) -> None:
        if self._metrics is not None and n:
            self._metrics.history_writes.labels(result=result).inc(n)

    def forget(self, shard: int | None) -> None:
        """Drop what is known of ``shard``'s objects (reloaded when it is held again)."""
        self._stores.pop(shard, None)
