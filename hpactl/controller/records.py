"""Decision records: the last N syncs of each HPA, as ``hpactl explain`` reads them.

``DecisionRecords(limit)`` keeps, per HPA key, the latest ``limit`` sync records
(``--decision-records``, default 5; 0 keeps none) with the time each was taken.
The controller adds one per sync (skipped syncs included: they say why) and forgets
an HPA's records with the HPA. The newest record holds the :class:`SyncRecord` the
sync returned, the same object the controller keeps as its last record, so nothing
is copied. When a newer one arrives it becomes a :class:`PastRecord`: its JSON form,
compressed (a few hundred bytes instead of an object graph of ~1.5 KiB and a dozen
objects the garbage collector walks; at 10,000 HPAs and 5 records, ~40 MiB and
~400,000 tracked objects fewer). Reading it back gives the same document.

``to_dict()`` is the JSON form served at ``/debug/hpa/{namespace}/{name}``
(``--enable-debug-endpoints``) and printed by ``hpactl explain --output json``:

* ``time``, ``hpa``, ``currentReplicas``, ``desiredReplicas``, ``rescaled``,
  ``reason``, ``action``, ``errors``, ``skipped``;
* ``explanation``: :meth:`hpactl.core.decide.Explanation.to_dict` (None for a
  skipped sync);
* ``writes``: ``scale`` (``attempted``, ``replicas`` asked for, ``result``
  ``ok`` / ``failed`` / ``not-attempted``, ``error``), ``status`` (written or not) and
  ``events`` (each ``{type, reason, message}``).

In shadow mode (``DecisionRecords.shadow``, set by whoever turns shadow mode on)
nothing is written: ``writes`` is ``{"shadow": true, "scale": {"attempted": false,
"replicas": <what a writer would set, or null>, "result": "shadow", ...}, "status":
false, "events": []}`` and ``wouldEmit`` lists the Events a writer would emit.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hpactl.model.times import format_time

if TYPE_CHECKING:
    from hpactl.controller.horizontal import SyncRecord

__all__ = ["DecisionRecord", "DecisionRecords", "PastRecord", "scale_write"]


def scale_write(rec: SyncRecord, shadow: bool = False) -> dict[str, Any]:
    """What the sync did to the target's scale, read off its record."""
    expl = rec.explanation
    if shadow:
        would = rec.desired if rec.rescaled else None
        return {"attempted": False, "replicas": would, "result": "shadow", "error": None}
    if rec.rescaled:
        return {"attempted": True, "replicas": rec.desired, "result": "ok", "error": None}
    if expl is not None and "failed-rescale" in expl.limited_by:
        return {
            "attempted": True,
            "replicas": expl.desired_replicas,
            "result": "failed",
            "error": expl.error,
        }
    return {"attempted": False, "replicas": None, "result": "not-attempted", "error": None}


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One sync of one HPA and when it was recorded."""

    time: datetime
    sync: SyncRecord
    shadow: bool = False

    def to_dict(self) -> dict[str, Any]:
        r = self.sync
        events = [{"type": e.type, "reason": e.reason, "message": e.message} for e in r.events]
        writes: dict[str, Any] = {
            "scale": scale_write(r, self.shadow),
            "status": r.status_written,
            "events": events,
        }
        if self.shadow:
            writes = {**writes, "shadow": True, "status": False, "events": []}
        out: dict[str, Any] = {
            "time": format_time(self.time),
            "hpa": r.key,
            "currentReplicas": r.current,
            "desiredReplicas": r.desired,
            "rescaled": r.rescaled,
            "reason": r.reason,
            "action": r.action,
            "explanation": None if r.explanation is None else r.explanation.to_dict(),
            "writes": writes,
            "errors": list(r.errors),
            "skipped": r.skipped,
        }
        if self.shadow:
            out["wouldEmit"] = events
        return out


@dataclass(frozen=True, slots=True)
class PastRecord:
    """A record that is no longer the newest: when, and its `to_dict` compressed."""

    time: datetime
    blob: bytes

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(zlib.decompress(self.blob))
        return doc


def _compact(rec: DecisionRecord) -> tuple[datetime, bytes]:
    """``(time, compressed JSON)``: a tuple of atoms, which the collector stops walking."""
    doc = json.dumps(rec.to_dict(), separators=(",", ":"))
    return rec.time, zlib.compress(doc.encode(), 1)


# Per HPA: the older records as (time, blob) pairs, oldest first, and the newest.
_Kept = tuple[tuple[tuple[datetime, bytes], ...], DecisionRecord]


class DecisionRecords:
    """The latest ``limit`` records of each HPA (see the module docstring)."""

    __slots__ = ("_by_key", "limit", "shadow")

    def __init__(self, limit: int, *, shadow: bool = False) -> None:
        if limit < 0:
            raise ValueError(f"decision records: must not be negative, got {limit}")
        self.limit = limit
        # Shadow mode writes nothing: records say so instead of listing writes.
        self.shadow = shadow
        self._by_key: dict[str, _Kept] = {}

    @property
    def enabled(self) -> bool:
        return self.limit > 0

    def add(self, rec: SyncRecord, at: datetime) -> None:
        if self.limit == 0:
            return
        new = DecisionRecord(at, rec, self.shadow)
        kept = self._by_key.get(rec.key)
        if kept is None or self.limit == 1:
            self._by_key[rec.key] = ((), new)
            return
        past, newest = kept
        past = (*past, _compact(newest))
        self._by_key[rec.key] = (past[max(0, len(past) - self.limit + 1) :], new)

    def get(self, key: str) -> tuple[DecisionRecord | PastRecord, ...]:
        """The records of ``key``, oldest first (empty for an unknown HPA)."""
        kept = self._by_key.get(key)
        if kept is None:
            return ()
        past, newest = kept
        return (*(PastRecord(t, blob) for t, blob in past), newest)

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)

    def clear(self) -> None:
        self._by_key.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def to_json(self, key: str) -> dict[str, Any] | None:
        """``{"hpa": key, "records": [...]}`` (newest last), None for an unknown HPA."""
        if key not in self._by_key:
            return None
        return {"hpa": key, "records": [r.to_dict() for r in self.get(key)]}
