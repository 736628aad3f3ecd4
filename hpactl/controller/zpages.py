"""component-base's ``/statusz`` and ``/flagz``, in their plain-text format.

kube-controller-manager serves them (gates ComponentStatusz / ComponentFlagz) behind
its secure port's authorization; hpactl serves them with the other debug endpoints
(``--enable-debug-endpoints``, on the metrics port, authenticated with
``--metrics-secure``). Like upstream's, the text is for people, not parsers.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from hpactl import __version__
from hpactl.config import SETTINGS, ControllerConfig, Setting, format_go_float
from hpactl.model.times import format_go_duration

__all__ = ["flagz_text", "statusz_text", "zpages"]

COMPONENT = "hpactl"
_WARNING = (
    "Warning: This endpoint is not meant to be machine parseable, has no formatting "
    "compatibility guarantees and is for debugging purposes only."
)


def _uptime(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600} hr {s % 3600 // 60:02d} min {s % 60:02d} sec"


def statusz_text(started: datetime, now: datetime, paths: list[str]) -> str:
    """``Started``, ``Up``, the runtime and binary versions and the served paths."""
    return (
        f"\n{COMPONENT} statusz\n{_WARNING}\n\n"
        f"Started: {started.strftime('%a %b %e %H:%M:%S UTC %Y')}\n"
        f"Up: {_uptime((now - started).total_seconds())}\n"
        f"Python version: {platform.python_version()}\n"
        f"Binary version: {__version__}\n"
        f"Paths: {' '.join(sorted(paths))}\n"
    )


def _flag_value(setting: Setting, value: Any) -> str:
    if setting.kind == "gates":
        return ",".join(f"{name}={str(on).lower()}" for name, on in value.overrides)
    if isinstance(value, timedelta):
        return format_go_duration(value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return format_go_float(value)
    if isinstance(value, tuple):  # --hpa-sources (strings), --vmodule (pattern, level)
        return ",".join("=".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in value)
    return "" if value is None else str(value)


def flagz_text(config: ControllerConfig) -> str:
    """Every flag with its effective value (defaults, file and command line merged)."""
    lines = []
    for setting in SETTINGS:
        if setting.deprecated:
            continue
        value = _effective(config, setting.key)
        lines.append(f"{setting.flag.lstrip('-')}={_flag_value(setting, value)}")
    return f"\n{COMPONENT} flags\n{_WARNING}\n\n" + "\n".join(sorted(lines)) + "\n"


def _effective(config: ControllerConfig, key: str) -> Any:
    obj: Any = config
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def zpages(
    config: ControllerConfig, started: datetime, now: Callable[[], datetime]
) -> Mapping[str, Callable[[], str]]:
    paths = ["/healthz", "/livez", "/readyz", "/metrics", "/statusz", "/flagz"]
    if config.enable_debug_endpoints:
        paths.append("/debug/hpa")
    return {
        "/statusz": lambda: statusz_text(started, now(), paths),
        "/flagz": lambda: flagz_text(config),
    }
