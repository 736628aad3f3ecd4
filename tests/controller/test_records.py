"""DecisionRecords: the last N per HPA, newest last, forgotten with the HPA; the JSON
form of the writes, shadow mode included; rendering from that JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hpactl.controller.explain_text import render_records
from hpactl.controller.horizontal import SyncRecord
from hpactl.controller.records import DecisionRecords
from hpactl.core.decide import Explanation
from hpactl.core.metrics_eval import Event

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
RESCALE = Event("Normal", "SuccessfulRescale", "New size: 4; reason: cpu above target")


def rec(key: str = "ns/web", desired: int = 4, rescaled: bool = True) -> SyncRecord:
    expl = Explanation("metrics", 2, desired, metric_proposal=desired, metric_name="cpu")
    return SyncRecord(key, 2, desired, rescaled, "", expl, status_written=True, events=(RESCALE,))


def test_keeps_the_last_n_newest_last_and_forgets() -> None:
    records = DecisionRecords(3)
    for i in range(5):
        records.add(rec(desired=i + 2), T0 + timedelta(seconds=15 * i))
    kept = records.get("ns/web")
    assert [r.sync.desired for r in kept] == [4, 5, 6]
    assert [r.time for r in kept] == [T0 + timedelta(seconds=15 * i) for i in (2, 3, 4)]
    doc = records.to_json("ns/web")
    assert doc is not None and [r["desiredReplicas"] for r in doc["records"]] == [4, 5, 6]
    assert records.to_json("ns/other") is None and records.get("ns/other") == ()
    records.forget("ns/web")
    assert "ns/web" not in records and records.to_json("ns/web") is None


def test_zero_keeps_nothing_and_negative_is_refused() -> None:
    records = DecisionRecords(0)
    records.add(rec(), T0)
    assert len(records) == 0 and not records.enabled
    with pytest.raises(ValueError, match="must not be negative"):
        DecisionRecords(-1)


def test_writes_as_made() -> None:
    records = DecisionRecords(1)
    records.add(rec(), T0)
    doc = records.to_json("ns/web")
    assert doc is not None
    (r,) = doc["records"]
    assert r["writes"] == {
        "scale": {"attempted": True, "replicas": 4, "result": "ok", "error": None},
        "status": True,
        "events": [
            {
                "type": "Normal",
                "reason": "SuccessfulRescale",
                "message": "New size: 4; reason: cpu above target",
            }
        ],
    }
    assert "wouldEmit" not in r
    assert "writes: scale set to 4; status written; events: Normal SuccessfulRescale" in (
        render_records(doc)
    )


def test_shadow_records_say_nothing_was_written() -> None:
    records = DecisionRecords(1, shadow=True)
    records.add(rec(), T0)
    doc = records.to_json("ns/web")
    assert doc is not None
    (r,) = doc["records"]
    assert r["writes"] == {
        "scale": {"attempted": False, "replicas": 4, "result": "shadow", "error": None},
        "status": False,
        "events": [],
        "shadow": True,
    }
    assert r["wouldEmit"][0]["reason"] == "SuccessfulRescale"
    text = render_records(doc)
    assert text.startswith("ns/web at 2026-01-01T12:00:00Z: (shadow) would scale up from 2 to 4")
    assert "writes: none (shadow mode; a writer would set the scale to 4)" in text
