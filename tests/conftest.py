"""Shared fixtures: an in-process emulator (function-scoped) and its kubeconfig."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from hpactl.emulator import Emulator

# The property tests assert equivalence, never speed: one GC or scheduling pause on a
# loaded CI host must not fail them as "unreliable test timings" or "too slow".
settings.register_profile("hpactl", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hpactl")


@pytest.fixture
async def emulator() -> AsyncIterator[Emulator]:
    """A fresh API emulator on 127.0.0.1 (ephemeral port), stopped after the test."""
    async with Emulator(bookmark_interval=0.2) as emu:
        yield emu


@pytest.fixture
def kubeconfig(emulator: Emulator, tmp_path: Path) -> Path:
    """A kubeconfig file pointing at the `emulator` fixture (for kubectl / kubernetes_asyncio)."""
    return emulator.write_kubeconfig(tmp_path / "kubeconfig")
