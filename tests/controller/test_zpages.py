"""/statusz and /flagz in component-base's plain-text format."""

from __future__ import annotations

import platform
from datetime import UTC, datetime, timedelta

from hpactl import __version__
from hpactl.config import SETTINGS, ControllerConfig
from hpactl.controller.zpages import flagz_text, statusz_text
from hpactl.flags import parse_run_config

WARNING = (
    "Warning: This endpoint is not meant to be machine parseable, has no formatting "
    "compatibility guarantees and is for debugging purposes only."
)


def test_statusz_has_component_bases_header_and_fields() -> None:
    started = datetime(2026, 11, 24, 17, 0, 5, tzinfo=UTC)
    text = statusz_text(started, started + timedelta(seconds=3725), ["/readyz", "/flagz"])
    assert text == (
        f"\nhpactl statusz\n{WARNING}\n\n"
        "Started: Tue Nov 24 17:00:05 UTC 2026\n"
        "Up: 1 hr 02 min 05 sec\n"
        f"Python version: {platform.python_version()}\n"
        f"Binary version: {__version__}\n"
        "Paths: /flagz /readyz\n"
    )


def test_flagz_lists_every_flag_with_its_effective_value() -> None:
    config = parse_run_config(
        [
            "--horizontal-pod-autoscaler-sync-period=5s",
            "--vmodule=hpactl.cache=4",
            "--feature-gates=HPAScaleToZero=true",
            "--leader-elect=false",
        ],
        {},
    )
    text = flagz_text(config)
    assert text.startswith(f"\nhpactl flags\n{WARNING}\n\n")
    lines = text.strip().splitlines()[3:]
    assert lines == sorted(lines)
    flags = dict(line.split("=", 1) for line in lines)
    assert flags["horizontal-pod-autoscaler-sync-period"] == "5s"
    assert flags["vmodule"] == "hpactl.cache=4"
    assert flags["feature-gates"] == "HPAScaleToZero=true"
    assert flags["leader-elect"] == "false"
    assert flags["logging-format"] == "text"
    assert flags["horizontal-pod-autoscaler-tolerance"] == "0.1"
    assert set(flags) == {s.flag.lstrip("-") for s in SETTINGS if not s.deprecated}
    assert flagz_text(ControllerConfig()).count("\n") > 20
