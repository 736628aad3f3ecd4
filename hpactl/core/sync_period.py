"""Per-HPA sync period (KEP-6003, gate ``HPAConfigurableSyncPeriod``), as an annotation.

KEP-6003 adds ``spec.behavior.syncPeriodSeconds`` (int32, 1-3600): how often this HPA
is reconciled, overriding ``--horizontal-pod-autoscaler-sync-period``. Today's API
servers drop an unknown field, so hpactl reads the same value, with the same
meaning and bounds, from the annotation ``hpactl.dev/sync-period-seconds``.

A value that is not a whole number of seconds in [1, 3600] is a problem reported on
the HPA (see :mod:`hpactl.core.extension_conditions`); the HPA is then synced at the
default period, exactly as if the annotation were unset. Gate off: ignored. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hpactl.model.hpa import HPA

__all__ = [
    "MAX_SYNC_PERIOD_SECONDS",
    "MIN_SYNC_PERIOD_SECONDS",
    "SYNC_PERIOD_ANNOTATION",
    "SyncPeriod",
    "effective_sync_period",
    "parse_sync_period",
]

SYNC_PERIOD_ANNOTATION = "hpactl.dev/sync-period-seconds"
#: KEP-6003's validation: greater than 0, at most one hour.
MIN_SYNC_PERIOD_SECONDS = 1
MAX_SYNC_PERIOD_SECONDS = 3600
#: Reason of the Warning event and of the condition when the annotation is malformed.
INVALID_SYNC_PERIOD = "InvalidSyncPeriod"

_DIGITS = re.compile(r"[0-9]{1,12}")


@dataclass(frozen=True, slots=True)
class SyncPeriod:
    """The HPA's own period in seconds (None: the default), or why the annotation was refused."""

    seconds: int | None = None
    problem: str = ""


def parse_sync_period(hpa: HPA, enabled: bool) -> SyncPeriod:
    """The annotation read as KEP-6003 reads ``syncPeriodSeconds``; gate off: unset."""
    if not enabled:
        return SyncPeriod()
    raw = hpa.annotations.get(SYNC_PERIOD_ANNOTATION)
    if raw is None:
        return SyncPeriod()
    if _DIGITS.fullmatch(raw) is None:
        return SyncPeriod(
            problem=f'annotation {SYNC_PERIOD_ANNOTATION}="{_short(raw)}" is not a whole number '
            "of seconds; the default sync period is used"
        )
    seconds = int(raw)
    if not MIN_SYNC_PERIOD_SECONDS <= seconds <= MAX_SYNC_PERIOD_SECONDS:
        return SyncPeriod(
            problem=f'annotation {SYNC_PERIOD_ANNOTATION}="{raw}" is out of range '
            f"({MIN_SYNC_PERIOD_SECONDS}-{MAX_SYNC_PERIOD_SECONDS} seconds); "
            "the default sync period is used"
        )
    return SyncPeriod(seconds)


def effective_sync_period(hpa: HPA, enabled: bool, default: float) -> float:
    """Seconds between two syncs of ``hpa``: its own period when valid, else ``default``."""
    own = parse_sync_period(hpa, enabled).seconds
    return float(own) if own is not None else default


def _short(raw: str) -> str:
    """The value as quoted in a one-line message: no newline, not a page long."""
    text = raw.replace("\n", " ").replace('"', "'")
    return text if len(text) <= 40 else text[:37] + "..."
