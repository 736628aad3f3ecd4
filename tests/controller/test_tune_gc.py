"""``tune_gc``: what ``hpactl run`` does to the garbage collector once its caches have
synced. Behaviour only (the pauses it shortens are measured by bench/bench_scale.py)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from hpactl.controller.run import GC_THRESHOLDS, collect_young, tune_gc


@pytest.fixture
def gc_restored() -> Iterator[None]:
    """Give the test process its collector back as it was."""
    thresholds = gc.get_threshold()
    callbacks = list(gc.callbacks)
    yield
    gc.unfreeze()
    gc.callbacks[:] = callbacks
    gc.set_threshold(*thresholds)


class Cached:
    """Stands for a cached projection: alive when the caches have synced."""

    __slots__ = ("peer",)

    def __init__(self) -> None:
        self.peer: object = None


def test_what_is_alive_once_synced_leaves_the_collectors_generations(gc_restored: None) -> None:
    cached = [Cached() for _ in range(1000)]
    tune_gc()
    assert gc.get_threshold() == GC_THRESHOLDS
    # Frozen: no collection walks these any more (gc.get_objects lists generations 0-2).
    assert gc.get_freeze_count() >= len(cached)
    alive = {id(o) for o in gc.get_objects()}
    assert not any(id(o) in alive for o in cached)
    # Still freed by reference counting once dropped.
    before = gc.get_freeze_count()
    del cached
    assert gc.get_freeze_count() <= before - 1000


class Fresh(Cached):
    """An object made after the caches synced (weakly referenceable, to see it go)."""

    __slots__ = ("__weakref__",)


def test_new_objects_are_collected_as_before(gc_restored: None) -> None:
    tune_gc()
    a, b = Fresh(), Fresh()
    a.peer, b.peer = b, a  # a reference cycle made after the caches synced
    refs = [weakref.ref(a), weakref.ref(b)]
    del a, b
    assert all(r() is not None for r in refs)  # the cycle alone keeps them alive ...
    assert gc.collect() >= 2
    # ... until a collection. (Weak references, not ids: a freed object's id may be
    # reused by any object allocated since, which made this check flaky.)
    assert all(r() is None for r in refs)


def test_middle_generation_is_small() -> None:
    # A middle-generation pass walks the survivors of at most this many young passes:
    # 10 (not 50) keeps it under ~100 ms at 10,000 HPAs (docs/performance.md).
    young, middle, _old = GC_THRESHOLDS
    assert young >= 10_000 and middle <= 10


async def test_young_generations_are_collected_on_a_clock(gc_restored: None) -> None:
    """Young passes come on time even when the allocation count never reaches the
    threshold (in steady state, freeing old objects keeps that count low)."""
    gc.set_threshold(10**9, 10, 100)  # the counts alone would never trigger a pass
    passes: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            passes.append(info["generation"])

    gc.callbacks.append(seen)
    task = asyncio.ensure_future(collect_young(every=0.01))
    try:
        async with asyncio.timeout(30):
            while len(passes) < 10:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert set(passes[:10]) <= {0, 1} and 1 in passes[:10]  # young only; every tenth: middle
    assert 2 not in passes
