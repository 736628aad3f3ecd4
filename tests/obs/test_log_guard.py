"""``v_enabled``: a hot path may skip an entry only when the installed filter would drop it."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
import structlog

from hpactl.obs.logging import configure_logging, v_enabled


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def test_v4_is_dropped_at_the_default_level_and_kept_when_raised() -> None:
    configure_logging("json", 0, io.StringIO())
    assert not v_enabled(4, "hpactl.controller")
    assert v_enabled(0, "hpactl.controller")
    configure_logging("json", 4, io.StringIO())
    assert v_enabled(4, "hpactl.controller")


def test_vmodule_decides_per_logger() -> None:
    configure_logging("json", 0, io.StringIO(), vmodule=[("hpactl.controller", 4)])
    assert v_enabled(4, "hpactl.controller")
    assert not v_enabled(4, "hpactl.cache")


def test_entries_are_built_whenever_someone_else_configured_structlog() -> None:
    """Tests capturing logs (or any other configuration) see every entry."""
    configure_logging("json", 0, io.StringIO())
    with structlog.testing.capture_logs() as captured:
        assert v_enabled(4, "hpactl.controller")
        structlog.get_logger("hpactl.controller").info("hpa.synced", rescaled=False)
    assert [e["event"] for e in captured] == ["hpa.synced"]
    assert not v_enabled(4, "hpactl.controller")  # ours again once restored


def test_the_dropped_entry_is_exactly_what_the_filter_drops() -> None:
    out = io.StringIO()
    configure_logging("json", 0, out)
    log = structlog.get_logger("hpactl.controller")
    log.info("hpa.synced", rescaled=False, error=None)
    assert out.getvalue() == ""  # what v_enabled(4, ...) False predicts
    log.info("hpa.synced", rescaled=True, error=None)
    assert '"hpa.synced"' in out.getvalue()
