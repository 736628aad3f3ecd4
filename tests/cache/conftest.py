"""Fixtures shared by the cache tests: a virtual clock, and the emulator with fault
injection and a session that records what the informers asked it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultInjector
from hpactl.kube.session import KubeSession

#: Bookmarks this often (real seconds): informers whose kind did not change still move
#: forward quickly (tests/cache/test_regression.py asks for a shorter interval).
BOOKMARK_INTERVAL = 0.1


class Requests:
    """KubeSession.on_request hook: what the informers asked the server."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def __call__(self, verb: str, resource: str, code: str, seconds: float) -> None:
        self.calls.append((verb, resource, code))

    def count(self, verb: str, resource: str = "pods") -> int:
        return sum(1 for v, r, _ in self.calls if v == verb and r == resource)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def faults() -> FaultInjector:
    return FaultInjector(seed=1)


@pytest.fixture
def bookmark_interval() -> float:
    return BOOKMARK_INTERVAL


@pytest.fixture
async def emu(faults: FaultInjector, bookmark_interval: float) -> AsyncIterator[Emulator]:
    async with Emulator(bookmark_interval=bookmark_interval, faults=faults) as e:
        yield e


@pytest.fixture
async def session(emu: Emulator) -> AsyncIterator[tuple[KubeSession, Requests]]:
    reqs = Requests()
    async with KubeSession(master=emu.url, qps=0, on_request=reqs) as s:
        yield s, reqs
