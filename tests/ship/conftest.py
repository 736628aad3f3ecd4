"""The ``cluster`` fixture of the manifest tests that apply them to the emulator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hpactl.emulator import Emulator

from .support import Cluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with Emulator(auth=True, tls=True, bookmark_interval=0.5) as emu:
        yield Cluster(emu, emu.write_kubeconfig(tmp_path / "admin.kubeconfig"), tmp_path)
